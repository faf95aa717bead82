package model

import (
	"math/rand/v2"
	"testing"
)

// TestCountFuncMatchesDeciders: on random event traces (bursts at one time,
// gaps longer than windows, random window origins), the Decider of a
// count-based policy (NewDeciderAt) admits
// request j at limit L iff the count is below L, for every L.
func TestCountFuncMatchesDeciders(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4))
	for n := range 3000 {
		ts := make([]int64, 1+rng.IntN(300))
		var now int64
		for j := range ts {
			switch rng.IntN(4) {
			case 0: // same time as the previous request
			case 1:
				now += rng.Int64N(100 * secondNs)
			default:
				now += rng.Int64N(secondNs / 4)
			}
			ts[j] = now
		}
		alg := []Algorithm{FixedWindow, FixedWindowAnchored, SlidingLog}[n%3]
		p := Policy{Algorithm: alg, WindowS: 1 + rng.IntN(30)}
		if alg == FixedWindow && rng.IntN(2) == 0 {
			p.PhaseS = rng.IntN(p.WindowS)
		}
		// Windows from a random Unix origin, as a log replay places them.
		origin := rng.Int64N(1 << 62)
		if n%4 == 0 {
			origin = 0
		}
		count, ok := CountFunc(p, origin)
		if !ok {
			t.Fatalf("%v: no count function", p)
		}
		c := make([]int32, len(ts))
		capN := int64(rng.IntN(len(ts) + 2))
		count(ts, c, capN)
		for _, limit := range []int64{0, 1, 2, 3, int64(rng.IntN(40)), capN} {
			if limit > capN {
				continue
			}
			p.Limit = limit
			d, err := NewDeciderAt(p, origin)
			if err != nil {
				t.Fatal(err)
			}
			for j, tn := range ts {
				if got, want := int64(c[j]) < limit, d.Allow(tn); got != want {
					t.Fatalf("trace %d %v, request %d of %d at %d ns: count %d says %v, the Decider %v",
						n, p, j, len(ts), tn, c[j], got, want)
				}
			}
		}
	}
	for _, alg := range []Algorithm{SlidingWindow, TokenBucket, GCRA, SlidingCounter, Nginx, Concurrency} {
		if _, ok := CountFunc(Policy{Algorithm: alg}, 0); ok {
			t.Errorf("%v has a count function; its state depends on its decisions", alg)
		}
	}
}
