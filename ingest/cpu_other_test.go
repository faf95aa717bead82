//go:build !unix

package ingest

// cpuSeconds is 0 where getrusage is missing: the benchmarks then report
// wall-clock speed only.
func cpuSeconds() float64 { return 0 }
