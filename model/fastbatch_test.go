package model

import (
	"math/rand/v2"
	"testing"
)

// TestRunFastBucketCapacities runs token_bucket capacities 1, 2, … and
// back down, one by one, through RunFast and Run on 300 random fluid
// workloads, so that every client's smallest capacity admitting all its
// requests is stepped over in both directions.
func TestRunFastBucketCapacities(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 2026))
	for n := range 300 {
		w := randomWorkload(t, rng)
		nc := len(w.Scenario.Clients)
		rate := randomFastPolicy(rng, TokenBucket).Rate
		var ps []Policy
		top := 1 + rng.IntN(300)
		for c := 1; c <= top; c++ {
			ps = append(ps, Policy{Algorithm: TokenBucket, Rate: rate, Capacity: int64(c)})
		}
		for c := top; c >= 1; c-- {
			ps = append(ps, Policy{Algorithm: TokenBucket, Rate: rate, Capacity: int64(c)})
		}
		sim, ref := w.NewSimulator(), w.NewSimulator()
		got := make([]ClientResult, len(ps)*nc)
		if k := sim.RunFast(ps, func(k int, cl []ClientResult, m *Metrics) { copy(got[k*nc:], cl) }); k != len(ps) {
			t.Fatalf("workload %d: RunFast did %d of %d points", n, k, len(ps))
		}
		for i, p := range ps {
			var want Outcome
			ref.Run(p, &want)
			for c := range nc {
				if got[i*nc+c] != want.Clients[c] {
					t.Fatalf("workload %d %+v client %d: %+v, Run %+v", n, p, c, got[i*nc+c], want.Clients[c])
				}
			}
		}
	}
}

// TestFixedTableAdmittedFrom walks limits up in random steps (small and
// past many window sums at once), restarting at 0 when a limit goes down,
// and compares admittedFrom with admitted and its cursor with the first
// sum above the limit.
func TestFixedTableAdmittedFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 2026))
	for n := range 500 {
		sums := make([]int64, 1+rng.IntN(60))
		for i := range sums {
			sums[i] = rng.Int64N(1 + int64(rng.IntN(500)))
		}
		tab := newFixedTable(sums)
		lo, last := 0, int64(-1)
		for range 200 {
			limit := last + rng.Int64N(4)
			if rng.IntN(5) == 0 {
				limit = last + rng.Int64N(300)
			}
			if rng.IntN(20) == 0 {
				limit = rng.Int64N(100)
			}
			if limit < last {
				lo = 0
			}
			last = limit
			var got int64
			got, lo = tab.admittedFrom(limit, lo)
			if want := tab.admitted(limit); got != want {
				t.Fatalf("table %d %v limit %d: %d, want %d", n, sums, limit, got, want)
			}
			if lo < len(tab.vals) && tab.vals[lo] <= limit || lo > 0 && tab.vals[lo-1] > limit {
				t.Fatalf("table %d limit %d: cursor %d in %v", n, limit, lo, tab.vals)
			}
		}
	}
}
