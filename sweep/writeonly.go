package sweep

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"
)

// WriterOnly measures the Parquet writer alone, for benchmarks: it first
// simulates every part of the shard into memory (not timed; this holds the
// whole shard's outcomes, about 250 bytes per point), then writes the same
// points and clients files Run writes, with opts.Workers writers, into
// opts.OutDir (which it creates; existing part files are replaced). It
// returns the run's summary (points, points rows, Σ false cut) and the wall
// time of writing. It writes no manifest: the directory is not a complete run.
func WriterOnly(ctx context.Context, spec *Spec, opts Options) (res *Result, elapsed time.Duration, err error) {
	if opts.Shard.Count == 0 {
		opts.Shard = Shard{0, 1}
	}
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	src, err := newSource(ctx, spec, false)
	if err != nil {
		return nil, 0, err
	}
	workloadSHA, err := spec.WorkloadSHA256()
	if err != nil {
		return nil, 0, err
	}
	grid := NewGrid(spec)
	parts := ShardParts(grid, opts.Shard)
	res = &Result{Dir: opts.OutDir, Parts: len(parts)}
	for _, sub := range []string{"points", "clients"} {
		if err := os.MkdirAll(filepath.Join(opts.OutDir, sub), 0o755); err != nil {
			return nil, 0, err
		}
	}
	meta := map[string]string{ // as Run writes it
		MetaVersion:        Version,
		MetaSpec:           string(spec.YAML()),
		MetaScenarioSHA256: workloadSHA,
		MetaShard:          opts.Shard.String(),
	}
	pointsSchema, clientsSchema := schemas(meta)
	results := make([]*partResult, len(parts))
	sim := src.newSim()
	var done atomic.Int64
	for i, p := range parts {
		r := &partResult{reps: spec.Replicates, mem: memory.DefaultAllocator}
		r.names, r.classes, r.stages = src.rows()
		if err := simulatePart(ctx, grid, sim, spec.Seed, p, r, &done, nil); err != nil {
			return nil, 0, err
		}
		results[i] = r
		res.Points += p.Points()
		res.Rows += int64(r.rows())
		for k := range r.metrics {
			res.FalseCutSum += r.metrics[k].FalseCut
		}
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for range min(opts.Workers, max(len(parts), 1)) {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(results) || gctx.Err() != nil {
					return gctx.Err()
				}
				if _, _, err := writePart(opts.OutDir, results[i], pointsSchema, clientsSchema, nil); err != nil {
					return err
				}
				results[i] = nil
			}
		})
	}
	err = g.Wait()
	return res, time.Since(start), err
}
