package sweep

import (
	"context"
	"testing"
)

// BenchmarkRunBench runs the peers' bench grid (60,000 points, 480,000
// Parquet rows) end to end into a temporary directory; one op = one run.
func BenchmarkRunBench(b *testing.B) {
	spec, err := LoadSpec("embedded:bench.yaml")
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
				if res.FalseCutSum != 24882395 {
					b.Fatalf("Σ false cut = %d, want the peers' 24882395", res.FalseCutSum)
				}
			}
			b.ReportMetric(float64(spec.Points())*float64(b.N)/b.Elapsed().Seconds(), "points/s")
		})
	}
}
