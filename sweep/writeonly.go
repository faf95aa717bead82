package sweep

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// WriterFloor measures the Parquet writer's floor, for benchmarks: pqarrow
// writing pre-built Arrow records of the same rows Run writes, with the same
// settings, the same file handling (temporary file, sync, rename) and the
// same number of workers (opts.Workers, 0 = all cores) writing at once, into
// opts.OutDir (created; existing part files are replaced).
//
// It goes in rounds of one part per worker: the workers simulate their
// parts (not timed), then write them at the same time, building each record
// batch inside the writer's loop as Run does (same buffers, same cache
// state) but taking the build's CPU out, measured with the clock of the
// thread that builds. What
// remains of the process's CPU over the writing phase is pqarrow, the file
// handling and the garbage collection they cause, on as many cores as Run
// would use. It returns the run's summary (points, rows, Σ false cut) and
// the wall and CPU time of the writing alone, with the CPU of the rest.
// End-to-end CPU over this CPU is the overhead of everything but pqarrow.
// It writes no manifest: the directory is not a complete run.
func WriterFloor(ctx context.Context, spec *Spec, opts Options) (res *Result, st FloorStats, err error) {
	if opts.Shard.Count == 0 {
		opts.Shard = Shard{0, 1}
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	src, err := newSource(ctx, spec, false)
	if err != nil {
		return nil, st, err
	}
	workloadSHA, err := spec.WorkloadSHA256()
	if err != nil {
		return nil, st, err
	}
	grid := NewGrid(spec)
	parts := ShardParts(grid, opts.Shard)
	res = &Result{Dir: opts.OutDir, Parts: len(parts)}
	// The previous floor's files go first, as run --force removes the
	// previous run: the file system then allocates the new files' inodes
	// as it does for Run (ext4 skips recently deleted ones).
	if err := clearRun(opts.OutDir, false); err != nil {
		return nil, st, err
	}
	for _, sub := range []string{"points", "clients"} {
		if err := os.MkdirAll(filepath.Join(opts.OutDir, sub), 0o755); err != nil {
			return nil, st, err
		}
	}
	meta := map[string]string{ // as Run writes it
		MetaVersion:        Version,
		MetaSpec:           string(spec.YAML()),
		MetaScenarioSHA256: workloadSHA,
		MetaShard:          opts.Shard.String(),
	}
	pointsSchema, clientsSchema := schemas(meta)
	// One simulator and one part result per worker, kept for every part, as
	// a worker of Run keeps them (buffers and dictionaries are reused).
	type worker struct {
		sim       pointSim
		r         *partResult
		part      Part
		err       error
		buildCPU  time.Duration // this round's builds, on the worker's thread
		simCPU    time.Duration
		buildWall time.Duration
	}
	workers := make([]*worker, min(opts.Workers, max(len(parts), 1)))
	for i := range workers {
		r := &partResult{reps: spec.Replicates, mem: memory.DefaultAllocator, prepare: true}
		r.names, r.classes, r.stages = src.rows()
		workers[i] = &worker{sim: src.newSim(), r: r}
	}
	var done atomic.Int64
	each := func(ws []*worker, f func(w *worker)) error {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() { defer wg.Done(); f(w) }()
		}
		wg.Wait()
		for _, w := range ws {
			if w.err != nil {
				return w.err
			}
		}
		return nil
	}
	for first := 0; first < len(parts); first += len(workers) {
		round := workers[:min(len(workers), len(parts)-first)]
		for i, w := range round {
			w.part = parts[first+i]
		}
		err := each(round, func(w *worker) {
			// Held to its thread (simulating does not block) so that
			// the thread's clock gives the simulation's CPU (with the
			// parameter columns and labels), reported beside the floor.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			t0 := threadCPU()
			w.err = simulatePart(ctx, grid, w.sim, spec.Seed, w.part, w.r, &done, nil)
			w.simCPU = threadCPU() - t0
		})
		if err != nil {
			return nil, st, err
		}
		for _, w := range round {
			st.SimCPU += w.simCPU
			res.Points += w.part.Points()
			res.Rows += int64(w.r.rows())
			res.FalseCutSum += w.r.falseCut()
		}
		w0, c0 := time.Now(), processCPU()
		err = each(round, func(w *worker) {
			w.buildCPU, w.buildWall = 0, 0
			prebuilt := func(batch func(lo, hi int) arrow.RecordBatch) func(lo, hi int) arrow.RecordBatch {
				return func(lo, hi int) arrow.RecordBatch {
					// Held to its thread while it builds (a build
					// does not block), so the thread's clock is
					// the build's.
					runtime.LockOSThread()
					bw, bc := time.Now(), threadCPU()
					rec := batch(lo, hi)
					w.buildWall += time.Since(bw)
					w.buildCPU += threadCPU() - bc
					runtime.UnlockOSThread()
					return rec
				}
			}
			r := w.r
			if _, w.err = writeParquet(filepath.Join(opts.OutDir, "clients"), w.part.Name(), clientsSchema, r.clientRows(), batchRows,
				prebuilt(func(lo, hi int) arrow.RecordBatch { return r.clientsBatch(clientsSchema, lo, hi) }), nil); w.err != nil {
				return
			}
			_, w.err = writeParquet(filepath.Join(opts.OutDir, "points"), w.part.Name(), pointsSchema, r.rows(), pointsBatchRows,
				prebuilt(func(lo, hi int) arrow.RecordBatch { return r.pointsBatch(pointsSchema, lo, hi) }), nil)
		})
		if err != nil {
			return nil, st, err
		}
		roundWall, roundCPU := time.Since(w0), processCPU()-c0
		var buildWall time.Duration
		for _, w := range round {
			roundCPU -= w.buildCPU
			st.BuildCPU += w.buildCPU
			buildWall += w.buildWall
		}
		st.Wall += roundWall - buildWall/time.Duration(len(round))
		st.CPU += roundCPU
	}
	st.ProcessCPU = processCPU()
	return res, st, nil
}

// Report is the floor's JSON line (as the peers print theirs): points,
// checksum, the writing's wall and CPU seconds, and the CPU of the rest.
func (st FloorStats) Report(res *Result) map[string]any {
	return map[string]any{
		"peer": "writer floor", "points": res.Points, "seconds": st.Wall.Seconds(), "cpu_s": st.CPU.Seconds(),
		"points_per_s": float64(res.Points) / st.Wall.Seconds(), "checksum": res.FalseCutSum,
		"sim_cpu_s": st.SimCPU.Seconds(), "build_cpu_s": st.BuildCPU.Seconds(),
		"process_cpu_s": st.ProcessCPU.Seconds(),
	}
}

// FloorStats are WriterFloor's measurements. Wall and CPU are the writing's
// alone (the floor); the rest is what Run adds to it, measured on the
// threads that did it, and the whole process's CPU at the end.
type FloorStats struct {
	Wall, CPU  time.Duration
	SimCPU     time.Duration // simulating the parts, with their parameter columns and labels
	BuildCPU   time.Duration // building the record batches
	ProcessCPU time.Duration // everything, start-up included
}
