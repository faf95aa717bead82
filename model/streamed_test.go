package model

import (
	"math/rand/v2"
	"testing"
)

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
