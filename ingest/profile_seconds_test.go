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
