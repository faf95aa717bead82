package ingest

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/internal/hugemem"
	"github.com/ratesweep/ratesweep/model"
)

// writeBigLog writes a gzip Combined log of n lines: one request every
// 10 ms on average, addresses from a skewed pool of n/100 keys.
func writeBigLog(b *testing.B, path string, n int64) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	w := bufio.NewWriterSize(zw, 1<<20)
	rng := rand.New(rand.NewPCG(16, 5))
	keys := max(n/100, 1)
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ms int64
	for i := range n {
		ms += rng.Int64N(20)
		k := int64(float64(keys) * rng.Float64() * rng.Float64()) // skewed toward low ids
		ip := fmt.Sprintf("10.%d.%d.%d", k>>16&255, k>>8&255, k&255)
		at := t.Add(time.Duration(ms) * time.Millisecond).Format("02/Jan/2006:15:04:05 -0700")
		fmt.Fprintf(w, "%s - - [%s] \"GET /item/%d HTTP/1.1\" 200 %d \"-\" \"bench/1.0\"\n", ip, at, i%1000, 100+i%900)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	zw.Close()
	f.Close()
}

// heapPeak samples the heap's live and unswept object bytes with the
// columns held outside it (hugemem.Mapped), and the process's resident
// memory (Linux; 0 elsewhere), every millisecond until stop is called, and
// returns their peaks.
func heapPeak() (stop func() (heap, rss uint64)) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak, rssPeak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64() + uint64(hugemem.Mapped()); v > peak.Load() {
				peak.Store(v)
			}
			if v := residentBytes(); v > rssPeak.Load() {
				rssPeak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (uint64, uint64) { close(done); <-finished; return peak.Load(), rssPeak.Load() }
}

// residentBytes is the process's resident memory (/proc/self/statm), or 0
// where there is none.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident uint64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0
	}
	return resident * uint64(os.Getpagesize())
}

// BenchmarkLoadMemory measures the memory per request of streaming a large
// gzip log into the replay's columnar form (Load: key ids, times, labels),
// as heap bytes at the peak of the build over requests (bytes/request) and
// what the finished Traffic keeps (kept-bytes/request), key names included.
// The log has RATESWEEP_BENCH_LINES lines (default 2,000,000; docs/logs.md
// gives 10,000,000 and 20,000,000 too):
//
//	RATESWEEP_BENCH_LINES=100000000 go test ./ingest -run '^$' -bench LoadMemory -benchtime 1x -timeout 2h
func BenchmarkLoadMemory(b *testing.B) {
	n := int64(2_000_000)
	if s := os.Getenv("RATESWEEP_BENCH_LINES"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 1 {
			b.Fatalf("RATESWEEP_BENCH_LINES=%q", s)
		}
		n = v
	}
	path := filepath.Join(b.TempDir(), "big.log.gz")
	writeBigLog(b, path, n)
	rules := []Rule{{Name: "missing", Stage: model.StageDesign, Scope: ScopeRequest, Statuses: []StatusRange{{404, 404}}}}
	for b.Loop() {
		runtime.GC()
		debug.FreeOSMemory()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		rss0 := residentBytes()
		stop := heapPeak()
		tr, err := Load(context.Background(), path, Options{Rules: rules})
		peak, rssPeak := stop()
		if err != nil {
			b.Fatal(err)
		}
		if tr.Requests() != n {
			b.Fatalf("%d requests of %d", tr.Requests(), n)
		}
		runtime.GC()
		debug.FreeOSMemory()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		// Heap bytes count the columns' whole capacity; resident bytes
		// only what was touched (capacity beyond the lines, from an
		// estimate of them, and huge page alignment are address space).
		b.ReportMetric(float64(peak-before.HeapAlloc)/float64(n), "bytes/request")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "kept-bytes/request")
		if rss0 > 0 {
			b.ReportMetric(float64(rssPeak-rss0)/float64(n), "rss-bytes/request")
			b.ReportMetric((float64(residentBytes())-float64(rss0))/float64(n), "rss-kept-bytes/request")
		}
		b.ReportMetric(float64(len(tr.Keys)), "keys")
		runtime.KeepAlive(tr)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
