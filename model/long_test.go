//go:build long

package model

import (
	"math/rand/v2"
	"slices"
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

// A streamed workload (series built per client when needed, per-second
// kernels) gives exactly the results of the compiled one (closed forms) for
// every algorithm, on random scenarios, policy after policy on one
// Simulator each.
func TestStreamedEqualsCompiled(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 1))
	compared := 0
	for range 300 {
		w := randomWorkload(t, rng)
		sw, err := NewStreamedWorkload(w.Scenario)
		if err != nil {
			t.Fatal(err)
		}
		if !sw.Streamed() || sw.series != nil {
			t.Fatal("a streamed workload keeps its series")
		}
		for i := range w.Scenario.Clients {
			if sw.offered[i] != w.offered[i] {
				t.Fatalf("client %d offered %d, compiled %d", i, sw.offered[i], w.offered[i])
			}
		}
		a, b := w.NewSimulator(), sw.NewSimulator()
		for _, alg := range Algorithms {
			for range 3 {
				p := randomFastPolicy(rng, alg)
				if alg != FixedWindow && alg != SlidingWindow && alg != TokenBucket {
					p = randomPolicy(rng, alg)
				}
				if err := p.Validate(); err != nil {
					continue
				}
				var oa, ob Outcome
				compared++
				a.Run(p, &oa)
				b.Run(p, &ob)
				if oa.Metrics != ob.Metrics {
					t.Fatalf("%v: streamed %+v, compiled %+v", p, ob.Metrics, oa.Metrics)
				}
				for i := range oa.Clients {
					if oa.Clients[i] != ob.Clients[i] {
						t.Fatalf("%v client %d: streamed %+v, compiled %+v", p, i, ob.Clients[i], oa.Clients[i])
					}
				}
			}
		}
	}
	if compared < 5000 {
		t.Fatalf("only %d policies compared", compared)
	}
}

// RunLockstep gives what Run gives, point by point, for batches of each
// state-dependent algorithm on random event workloads: one window or rate
// with sizes apart (a grid's batch) or random policies.
func TestRunLockstepEqualsRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 7))
	algs := []Algorithm{TokenBucket, GCRA, Nginx, SlidingWindow, Concurrency, SlidingCounter}
	random := func(a Algorithm) Policy {
		for {
			p := Policy{Algorithm: a}
			switch a {
			case TokenBucket, GCRA:
				p.Rate, p.Capacity = float64(1+rng.IntN(400))/20, int64(1+rng.IntN(60))
			case Nginx:
				p.Rate, p.Burst = float64(1+rng.IntN(400))/20, int64(rng.IntN(60))
				p.Delay = p.Burst // nodelay: a shaping policy's delays are Run's
			case SlidingWindow, SlidingCounter:
				p.WindowS, p.Limit = 1+rng.IntN(60), int64(rng.IntN(80))
			case Concurrency:
				p.ServiceS, p.Limit = float64(1+rng.IntN(5000))/1000, int64(rng.IntN(30))
			}
			if p.Validate() == nil {
				return p
			}
		}
	}
	checked := 0
	for n := range 120 {
		sim, ref, sc := randomEventSims(t, rng, n)
		a := algs[n%len(algs)]
		ps := make([]Policy, 1+rng.IntN(40))
		base := random(a)
		for k := range ps {
			ps[k] = random(a)
			if n%2 == 0 { // base's window or rate, another size
				q := base
				q.Capacity, q.Burst, q.Delay, q.Limit = ps[k].Capacity, ps[k].Burst, ps[k].Delay, ps[k].Limit
				ps[k] = q
			}
		}
		outs := make([]Outcome, len(ps))
		if !sim.RunLockstep(ps, outs) {
			t.Fatalf("%v: RunLockstep declined", ps)
		}
		for k, p := range ps {
			var want Outcome
			ref.Run(p, &want)
			if !slices.Equal(outs[k].Clients, want.Clients) || outs[k].Metrics != want.Metrics {
				t.Fatalf("workload %d %v %v: RunLockstep %+v, Run %+v", n, sc.Arrivals, p, outs[k], want)
			}
			checked++
		}
	}
	t.Logf("%d points agree", checked)
	// Declined: shaping nginx (delays), count-based algorithms, fluid arrivals.
	w := randomWorkload(t, rng)
	sc := *w.Scenario
	sc.Arrivals = Arrivals{Process: Uniform}
	ev, _ := NewWorkload(&sc)
	for _, c := range []struct {
		w  *Workload
		ps []Policy
	}{
		{ev, []Policy{{Algorithm: Nginx, Rate: 5, Burst: 10, Delay: 2}}},
		{ev, []Policy{{Algorithm: SlidingLog, WindowS: 5, Limit: 3}}},
		{w, []Policy{{Algorithm: TokenBucket, Rate: 5, Capacity: 3}}},
	} {
		if c.w.NewSimulator().RunLockstep(c.ps, make([]Outcome, len(c.ps))) {
			t.Errorf("%v: RunLockstep accepted", c.ps)
		}
	}
}
