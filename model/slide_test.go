package model

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSlidingRunsEqualsReference checks the run-by-run sliding window against
// the step-by-step reference (slidingWindow) on random piecewise-constant
// series up to a day long, with runs shorter and longer than 2W, windows
// from 2 s to beyond the duration and limits from 0 to above every window.
func TestSlidingRunsEqualsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 86400))
	var ring []int64
	for n := range 3000 {
		d := 2 + rng.IntN(3000)
		if n%50 == 0 {
			d = 2 + rng.IntN(86400)
		}
		a := make([]int32, d)
		for t := 0; t < d; {
			m := 1 + rng.IntN(max(1, d/(1+rng.IntN(20))))
			x := int32(rng.IntN(50))
			if rng.IntN(5) == 0 {
				x = int32(rng.IntN(3000))
			}
			for end := min(d, t+m); t < end; t++ {
				a[t] = x
			}
		}
		var rs []run
		var offered int64
		for t := 0; t < d; {
			u := t
			for u < d && a[u] == a[t] {
				u++
			}
			rs = append(rs, run{n: int64(u - t), x: int64(a[t])})
			offered += int64(u-t) * int64(a[t])
			t = u
		}
		window := 2 + rng.IntN(min(d, 600))
		limit := int64(rng.IntN(2000))
		if rng.IntN(4) == 0 {
			limit = int64(rng.IntN(30))
		}
		adm := make([]int32, d)
		want := slidingWindow(a, adm, limit, window)
		ring = growInt64(ring, window)
		got, steps := slidingRuns(rs, limit, window, ring)
		if got != want {
			t.Fatalf("case %d: W=%d L=%d over %d s, runs %v: slidingRuns %d, reference %d", n, window, limit, d, rs, got, want)
		}
		if steps > int64(d) {
			t.Fatalf("case %d: %d steps for %d seconds", n, steps, d)
		}
	}
}

// TestSlidingDayLongThroughRun runs day-long scenarios through Simulator.Run
// (the run kernel while tables do not pay, then tables) against Admit.
func TestSlidingDayLongThroughRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	for n := range 6 {
		d := 86400
		sc := &Scenario{Name: "day", DurationS: d}
		for c := range 1 + rng.IntN(3) {
			cl := Client{Name: fmt.Sprint("c", c), Class: Class(c % 2)}
			if cl.Class == Abusive {
				cl.Stage = Stages[0]
			}
			for t0 := 0; t0 < d; {
				t1 := min(d, t0+1+rng.IntN(7200))
				cl.Segments = append(cl.Segments, Segment{T0: t0, T1: t1, Rate: float64(rng.IntN(40))})
				t0 = t1
			}
			sc.Clients = append(sc.Clients, cl)
		}
		w, err := NewWorkload(sc)
		if err != nil {
			t.Fatal(err)
		}
		sim := w.NewSimulator()
		var o Outcome
		for range 20 {
			p := Policy{Algorithm: SlidingWindow, WindowS: 2 + rng.IntN(3600), Limit: int64(rng.IntN(20000))}
			want := reference(w, p)
			sim.Run(p, &o)
			for i, r := range o.Clients {
				if r.Admitted != want[i] {
					t.Fatalf("scenario %d %v client %d: Run %d, reference %d", n, p, i, r.Admitted, want[i])
				}
			}
		}
	}
}
