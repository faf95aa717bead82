package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// The radix sort orders like slices.Sort, whatever the digits in use.
func TestRadixSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 4))
	for _, n := range []int{0, 1, 2, 3, 100, 5000} {
		for _, bound := range []uint32{1, 7, 2048, 1 << 22, 1<<32 - 1} {
			s := make([]uint32, n)
			for i := range s {
				s[i] = rng.Uint32N(bound)
			}
			if bound == 1<<32-1 && n > 2 {
				s[0], s[1] = 0, 1<<32-1
			}
			want := slices.Sorted(slices.Values(s))
			radixSort(s)
			if !slices.Equal(s, want) {
				t.Errorf("n %d bound %d: radix order differs from slices.Sort", n, bound)
			}
		}
	}
}

// Profile's whole-second path gives the figures of sorting every request
// time (the path of logs with sub-second times), on random logs.
func TestWholeSecondPeaks(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 5))
	t0 := time.Date(2024, 2, 28, 23, 0, 0, 0, time.UTC)
	for trial := range 40 {
		var log strings.Builder
		n, spread := 1+rng.IntN(3000), 1+rng.IntN(20000)
		for range n {
			at := t0.Add(time.Duration(rng.IntN(spread)) * time.Second)
			fmt.Fprintf(&log, "10.0.0.%d - - [%s] \"GET / HTTP/1.1\" 200 1\n", rng.IntN(50), at.Format("02/Jan/2006:15:04:05 -0700"))
		}
		tr, err := Build(context.Background(), strings.NewReader(log.String()), Options{MaxBackS: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1, 2, 60, 3600} {
			ps, p99, pw, ok := tr.wholeSecondPeaks(w)
			wps, wp99, wpw := tr.sortedPeaks(w)
			if !ok || ps != wps || p99 != wp99 || pw != wpw {
				t.Errorf("trial %d window %d: whole seconds %d %d %d (ok %v), sorted times %d %d %d", trial, w, ps, p99, pw, ok, wps, wp99, wpw)
			}
		}
	}
	tr, err := Build(context.Background(), strings.NewReader(`{"ts":1.5,"ip":"a"}`+"\n"), Options{Reader: ReaderOptions{Format: FormatJSONL, CSV: CSVOptions{TimeFormat: TimeAuto, Columns: map[string]string{"time": "ts", "ip": "ip"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := tr.wholeSecondPeaks(60); ok {
		t.Error("sub-second times took the whole-second path")
	}
}

// The per-second counts taken while reading (Options.ProfileWindowS) give
// the figures of sorting every request time, on random logs that go back
// in time up to max_backwards_s, dense and sparse, and on lines too far
// back (refused).
func TestSecondStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 6))
	t0 := time.Date(2024, 2, 28, 23, 0, 0, 0, time.UTC)
	streamed := 0
	for trial := range 120 {
		var log strings.Builder
		n, step, back := 1+rng.IntN(4000), rng.IntN(400), int64(rng.IntN(700))
		at := t0
		for range n {
			at = at.Add(time.Duration(rng.IntN(step+1)) * time.Second)
			line := at
			if rng.IntN(3) == 0 {
				line = at.Add(-time.Duration(rng.Int64N(back+30)) * time.Second) // some beyond max_backwards_s
			}
			fmt.Fprintf(&log, "10.0.0.%d - - [%s] \"GET / HTTP/1.1\" 200 1\n", rng.IntN(50), line.Format("02/Jan/2006:15:04:05 -0700"))
		}
		for _, w := range []int{1, 2, 60, 3600} {
			tr, err := Build(context.Background(), strings.NewReader(log.String()), Options{MaxBackS: max(back, 1), ProfileWindowS: w})
			if err != nil {
				t.Fatal(err)
			}
			if tr.seconds == nil {
				t.Fatalf("trial %d: no per-second counts", trial)
			}
			streamed++
			ps, p99, pw, ok := tr.wholeSecondPeaks(w)
			wps, wp99, wpw := tr.sortedPeaks(w)
			if !ok || ps != wps || p99 != wp99 || pw != wpw {
				t.Errorf("trial %d (n %d, step %d, back %d) window %d: counted %d %d %d, sorted times %d %d %d", trial, n, step, back, w, ps, p99, pw, wps, wp99, wpw)
			}
			if _, _, _, ok := tr.wholeSecondPeaks(w + 1); !ok {
				t.Errorf("another window found no figures")
			}
		}
	}
	if streamed == 0 {
		t.Fatal("nothing streamed")
	}
}
