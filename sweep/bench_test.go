package sweep

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkRunBench runs the peers' bench grid (60,000 points, 480,000
// Parquet rows; or the spec file in $RATESWEEP_BENCH_SPEC) end to end into a
// temporary directory; one op = one run.
func BenchmarkRunBench(b *testing.B) {
	path := "embedded:bench.yaml"
	if p := os.Getenv("RATESWEEP_BENCH_SPEC"); p != "" {
		path = p
	}
	spec, err := LoadSpec(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, noOutput := range []bool{true, false} {
		name := "write"
		if noOutput {
			name = "sim"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := Run(context.Background(), spec, Options{OutDir: b.TempDir(), NoOutput: noOutput})
				if err != nil {
					b.Fatal(err)
				}
				if path == "embedded:bench.yaml" && res.FalseCutSum != 24882395 {
					b.Fatalf("Σ false cut = %d, want the peers' 24882395", res.FalseCutSum)
				}
			}
			b.ReportMetric(float64(spec.Points())*float64(b.N)/b.Elapsed().Seconds(), "points/s")
		})
	}
}

// BenchmarkBuildBatches builds the record batches of the first part of the
// peers' large grid (fixed_window points; points and clients, as writePart
// hands them to pqarrow) without writing them, its parameter columns and
// labels made as the part was simulated; one op = one part.
func BenchmarkBuildBatches(b *testing.B) {
	spec, src, grid := benchLarge(b)
	part := ShardParts(grid, Shard{0, 1})[0]
	r := &partResult{reps: spec.Replicates, mem: memory.DefaultAllocator, prepare: true}
	r.names, r.classes, r.stages = src.rows()
	var done atomic.Int64
	if err := simulatePart(context.Background(), grid, src.newSim(), spec.Seed, part, r, &done, nil); err != nil {
		b.Fatal(err)
	}
	points, clients := schemas(map[string]string{MetaVersion: Version})
	b.ReportAllocs()
	for b.Loop() {
		for lo := 0; lo < r.rows(); lo += pointsBatchRows {
			r.pointsBatch(points, lo, min(lo+pointsBatchRows, r.rows())).Release()
		}
		for lo := 0; lo < r.clientRows(); lo += batchRows {
			r.clientsBatch(clients, lo, min(lo+batchRows, r.clientRows())).Release()
		}
	}
	b.ReportMetric(float64(part.Points())*float64(b.N)/b.Elapsed().Seconds(), "points/s")
}

// BenchmarkSimulateLarge simulates every part of the peers' large grid
// (1,400,000 points) into one part result, as a worker of Run does, and
// with its parameter columns and labels as a writing run makes them (sim,
// prepared; cold: sim with a new simulator per op, its tables built as in a
// run); one op = the whole grid.
func BenchmarkSimulateLarge(b *testing.B) {
	spec, src, grid := benchLarge(b)
	parts := ShardParts(grid, Shard{0, 1})
	for _, name := range []string{"sim", "prepared", "cold"} {
		b.Run(name, func(b *testing.B) {
			r := &partResult{reps: spec.Replicates, mem: memory.DefaultAllocator, prepare: name == "prepared"}
			r.names, r.classes, r.stages = src.rows()
			sim := src.newSim()
			var done atomic.Int64
			for b.Loop() {
				if name == "cold" { // a run's simulator: its tables built as it goes
					sim = src.newSim()
				}
				for _, p := range parts {
					if err := simulatePart(context.Background(), grid, sim, spec.Seed, p, r, &done, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(grid.Points())*float64(b.N)/b.Elapsed().Seconds(), "points/s")
		})
	}
}

// benchLarge loads the peers' large grid with its source.
func benchLarge(b *testing.B) (*Spec, source, *Grid) {
	spec, err := LoadSpec("../configs/bench-large.yaml")
	if err != nil {
		b.Fatal(err)
	}
	src, err := newSource(context.Background(), spec, false)
	if err != nil {
		b.Fatal(err)
	}
	return spec, src, NewGrid(spec)
}
