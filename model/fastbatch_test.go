package model

import (
	"math/rand/v2"
	"testing"
)

// TestRunFastEqualsRun runs grid-like sequences of points (runs that share a
// window or rate and step the limit or capacity, broken by other
// algorithms, phases and keyed parameters) through RunFast, with Run where
// it declines, and compares every point's clients and metrics with Run's on
// 300 random fluid workloads.
func TestRunFastEqualsRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2026))
	fast := 0
	for n := range 300 {
		w := randomWorkload(t, rng)
		nc := len(w.Scenario.Clients)
		var ps []Policy
		for range 1 + rng.IntN(6) {
			alg := []Algorithm{FixedWindow, SlidingWindow, TokenBucket, GCRA}[rng.IntN(4)]
			p := randomFastPolicy(rng, alg)
			if alg == TokenBucket {
				p.WindowS, p.Limit, p.PhaseS = 0, 0, 0
			}
			if alg == GCRA {
				p = Policy{Algorithm: GCRA, Rate: 1 + float64(rng.IntN(50)), Capacity: 1 + int64(rng.IntN(50))}
			}
			if rng.IntN(10) == 0 {
				p.Nodes = 2 // distributed: never a closed form
			}
			step := int64(1 + rng.IntN(50))
			for range 1 + rng.IntN(40) {
				ps = append(ps, p)
				if alg == TokenBucket || alg == GCRA {
					p.Capacity += step
				} else {
					p.Limit += step
				}
			}
		}
		clients := make([]ClientResult, len(ps)*nc)
		metrics := make([]Metrics, len(ps))
		sim, ref := w.NewSimulator(), w.NewSimulator()
		for i := 0; i < len(ps); {
			first := i
			if k := sim.RunFast(ps[i:], func(k int, cl []ClientResult, m *Metrics) {
				copy(clients[(first+k)*nc:][:nc], cl)
				metrics[first+k] = *m
			}); k > 0 {
				fast += k
				i += k
				continue
			}
			var o Outcome
			o.Clients = clients[i*nc:][:nc]
			sim.Run(ps[i], &o)
			metrics[i] = o.Metrics
			i++
		}
		for i, p := range ps {
			var want Outcome
			ref.Run(p, &want)
			got := clients[i*nc:][:nc]
			for c := range nc {
				if got[c] != want.Clients[c] {
					t.Fatalf("workload %d point %d %+v client %d: %+v, Run %+v", n, i, p, c, got[c], want.Clients[c])
				}
			}
			if metrics[i] != want.Metrics {
				t.Fatalf("workload %d point %d %+v: metrics %+v, Run %+v", n, i, p, metrics[i], want.Metrics)
			}
		}
	}
	if fast == 0 {
		t.Fatal("RunFast answered no point")
	}
	t.Logf("%d points by RunFast", fast)
}

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
