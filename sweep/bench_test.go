package sweep

import (
	"context"
	"os"
	"testing"
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
