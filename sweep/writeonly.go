package sweep

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// WriterFloor measures the Parquet writer's floor, for benchmarks: pqarrow
// writing pre-built Arrow records of the same rows Run writes, with the same
// settings and the same file handling (temporary file, sync, rename), into
// opts.OutDir (created; existing part files are replaced). Part by part, one
// at a time, it simulates the part (not timed) and writes it as Run does,
// less the time spent building each record batch (measured around each
// build and subtracted, so the writer sees the same buffers and caches as in
// Run). It returns the run's summary (points,
// rows, Σ false cut), the wall time and the process CPU time (user+system,
// getrusage) of the writing alone. End-to-end CPU over this CPU is the
// overhead of everything but pqarrow. It writes no manifest: the directory
// is not a complete run.
func WriterFloor(ctx context.Context, spec *Spec, opts Options) (res *Result, wall, cpu time.Duration, err error) {
	if opts.Shard.Count == 0 {
		opts.Shard = Shard{0, 1}
	}
	src, err := newSource(ctx, spec, false)
	if err != nil {
		return nil, 0, 0, err
	}
	workloadSHA, err := spec.WorkloadSHA256()
	if err != nil {
		return nil, 0, 0, err
	}
	grid := NewGrid(spec)
	parts := ShardParts(grid, opts.Shard)
	res = &Result{Dir: opts.OutDir, Parts: len(parts)}
	for _, sub := range []string{"points", "clients"} {
		if err := os.MkdirAll(filepath.Join(opts.OutDir, sub), 0o755); err != nil {
			return nil, 0, 0, err
		}
	}
	meta := map[string]string{ // as Run writes it
		MetaVersion:        Version,
		MetaSpec:           string(spec.YAML()),
		MetaScenarioSHA256: workloadSHA,
		MetaShard:          opts.Shard.String(),
	}
	pointsSchema, clientsSchema := schemas(meta)
	sim := src.newSim()
	var done atomic.Int64
	// One part result for every part, as a worker of Run keeps it (its
	// buffers and dictionaries are reused).
	r := &partResult{reps: spec.Replicates, mem: memory.DefaultAllocator}
	r.names, r.classes, r.stages = src.rows()
	for _, p := range parts {
		if err := simulatePart(ctx, grid, sim, spec.Seed, p, r, &done, nil); err != nil {
			return nil, 0, 0, err
		}
		res.Points += p.Points()
		res.Rows += int64(r.rows())
		for k := range r.metrics {
			res.FalseCutSum += r.metrics[k].FalseCut
		}
		// The batches are built inside the writer's loop, as Run builds
		// them (same buffers, same cache state), but their time is taken
		// out: what remains is pqarrow and the file handling.
		r.prepareParams()
		w0, c0 := time.Now(), processCPU()
		var buildWall, buildCPU time.Duration
		prebuilt := func(batch func(lo, hi int) arrow.RecordBatch) func(lo, hi int) arrow.RecordBatch {
			return func(lo, hi int) arrow.RecordBatch {
				bw, bc := time.Now(), processCPU()
				rec := batch(lo, hi)
				buildWall += time.Since(bw)
				buildCPU += processCPU() - bc
				return rec
			}
		}
		if _, err := writeParquet(filepath.Join(opts.OutDir, "clients"), p.Name(), clientsSchema, len(r.clients), batchRows,
			prebuilt(func(lo, hi int) arrow.RecordBatch { return r.clientsBatch(clientsSchema, lo, hi) }), nil); err != nil {
			return nil, 0, 0, err
		}
		if _, err := writeParquet(filepath.Join(opts.OutDir, "points"), p.Name(), pointsSchema, r.rows(), pointsBatchRows,
			prebuilt(func(lo, hi int) arrow.RecordBatch { return r.pointsBatch(pointsSchema, lo, hi) }), nil); err != nil {
			return nil, 0, 0, err
		}
		wall += time.Since(w0) - buildWall
		cpu += processCPU() - c0 - buildCPU
	}
	return res, wall, cpu, nil
}

// processCPU is the process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
