package model

import (
	"math/rand/v2"
	"testing"
)

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

// RunLimits (one pass over many limits of event arrivals) gives the same on
// a streamed workload as on a compiled one.
func TestStreamedRunLimits(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 2))
	for range 50 {
		w := randomWorkload(t, rng)
		sc := *w.Scenario
		sc.Arrivals = Arrivals{Process: Poisson}
		cw, err := NewWorkload(&sc)
		if err != nil {
			continue // too many requests for event arrivals
		}
		sw, err := NewStreamedWorkload(&sc)
		if err != nil {
			t.Fatal(err)
		}
		ps := []Policy{{Algorithm: FixedWindow, WindowS: 10, Limit: 3}, {Algorithm: FixedWindow, WindowS: 10, Limit: 30}}
		a, b := cw.NewSimulator(), sw.NewSimulator()
		a.SetReplicate(1, 0)
		b.SetReplicate(1, 0)
		oa, ob := make([]Outcome, 2), make([]Outcome, 2)
		if !a.RunLimits(ps, oa) || !b.RunLimits(ps, ob) {
			t.Fatal("RunLimits refused a fixed window on Poisson arrivals")
		}
		for k := range ps {
			if oa[k].Metrics != ob[k].Metrics || len(ob[k].Clients) != len(sc.Clients) {
				t.Fatalf("%v: compiled %+v, streamed %+v (%d clients)", ps[k], oa[k].Metrics, ob[k].Metrics, len(ob[k].Clients))
			}
		}
	}
}
