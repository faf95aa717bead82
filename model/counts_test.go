package model

import (
	"math/rand/v2"
	"slices"
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

// RunLimits gives what Run gives, point by point, on random event workloads
// (uniform, Poisson and clustered arrivals) for count-based policies.
func TestRunLimitsEqualsRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 6))
	checked := 0
	for n := range 100 {
		sim, ref, sc := randomEventSims(t, rng, n)
		alg := []Algorithm{FixedWindow, FixedWindowAnchored, SlidingLog}[rng.IntN(3)]
		base := Policy{Algorithm: alg, WindowS: 1 + rng.IntN(60)}
		if alg == FixedWindow && rng.IntN(2) == 0 {
			base.PhaseS = rng.IntN(base.WindowS)
		}
		var ps []Policy
		for _, l := range []int64{0, 1, 2, int64(rng.IntN(20)), int64(rng.IntN(500)), 1 << 40} {
			p := base
			p.Limit = l
			ps = append(ps, p)
		}
		outs := make([]Outcome, len(ps))
		if !sim.RunLimits(ps, outs) {
			t.Fatalf("%v: RunLimits declined", base)
		}
		for k, p := range ps {
			var want Outcome
			ref.Run(p, &want)
			if !slices.Equal(outs[k].Clients, want.Clients) || outs[k].Metrics != want.Metrics {
				t.Fatalf("workload %d %v %v: RunLimits %+v, Run %+v", n, sc.Arrivals, p, outs[k], want)
			}
			checked++
		}
	}
	// Declined: fluid arrivals, other algorithms, policies that differ in more
	// than the limit.
	w := randomWorkload(t, rng)
	if w.NewSimulator().RunLimits([]Policy{{Algorithm: SlidingLog, WindowS: 5, Limit: 3}}, make([]Outcome, 1)) {
		t.Error("RunLimits on fluid arrivals")
	}
	sc := *w.Scenario
	sc.Arrivals = Arrivals{Process: Uniform}
	w, _ = NewWorkload(&sc)
	for _, ps := range [][]Policy{
		{{Algorithm: SlidingWindow, WindowS: 5, Limit: 3}},
		{{Algorithm: SlidingLog, WindowS: 5, Limit: 3}, {Algorithm: SlidingLog, WindowS: 6, Limit: 3}},
	} {
		if w.NewSimulator().RunLimits(ps, make([]Outcome, len(ps))) {
			t.Errorf("RunLimits ran %v", ps)
		}
	}
	t.Logf("%d points checked", checked)
}

// randomEventSims returns two simulators (one to test, one for reference)
// of a random workload with uniform, Poisson or clustered arrivals (by n),
// on realisation (n, 1), and its scenario.
func randomEventSims(t *testing.T, rng *rand.Rand, n int) (sim, ref *Simulator, sc Scenario) {
	t.Helper()
	sc = *randomWorkload(t, rng).Scenario
	sc.Arrivals = Arrivals{Process: []ArrivalProcess{Uniform, Poisson, Clustered}[n%3]}
	if sc.Arrivals.Process == Clustered {
		sc.Arrivals.BurstSize, sc.Arrivals.SpreadS = 1+rng.IntN(8), rng.Float64()*3
	}
	w, err := NewWorkload(&sc)
	if err != nil {
		t.Fatal(err)
	}
	sim, ref = w.NewSimulator(), w.NewSimulator()
	sim.SetReplicate(uint64(n), 1)
	ref.SetReplicate(uint64(n), 1)
	return sim, ref, sc
}
