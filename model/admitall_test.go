package model

import (
	"math/rand/v2"
	"testing"
)

func admitTrace(rng *rand.Rand, n int) ([]int64, []Stage) {
	ts, labels := make([]int64, n), make([]Stage, n)
	var now int64
	for j := range ts {
		now += rng.Int64N(secondNs / 8)
		ts[j], labels[j] = now, Stage(rng.IntN(4))
	}
	return ts, labels
}

var admitPolicies = []Policy{
	{Algorithm: FixedWindow, WindowS: 10, Limit: 30},
	{Algorithm: FixedWindowAnchored, WindowS: 10, Limit: 30},
	{Algorithm: SlidingWindow, WindowS: 10, Limit: 30},
	{Algorithm: SlidingLog, WindowS: 10, Limit: 30},
	{Algorithm: SlidingCounter, WindowS: 10, Limit: 30},
	{Algorithm: TokenBucket, Rate: 3, Capacity: 10},
	{Algorithm: GCRA, Rate: 3, Capacity: 10},
	{Algorithm: Nginx, Rate: 3, Burst: 10, Delay: 4},
	{Algorithm: Concurrency, Limit: 3, ServiceS: 0.7},
}

// AdmitByLabel decides as Allow does, request by request, for every Decider.
func TestAdmitByLabelEqualsAllow(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 9))
	for range 50 {
		ts, labels := admitTrace(rng, 1+rng.IntN(2000))
		for _, p := range admitPolicies {
			d, err := NewDecider(p)
			if err != nil {
				t.Fatal(err)
			}
			var want, got [4]int64
			for j, tn := range ts {
				if d.Allow(tn) {
					want[labels[j]]++
				}
			}
			d.Reset()
			AdmitByLabel(d, ts, labels, &got)
			if got != want {
				t.Fatalf("%v: AdmitByLabel %v, Allow %v", p, got, want)
			}
		}
	}
}

// BenchmarkAdmitByLabel: one op = one decision, through AdmitByLabel and
// through the interface.
func BenchmarkAdmitByLabel(b *testing.B) {
	ts, labels := admitTrace(rand.New(rand.NewPCG(1, 1)), 1<<16)
	for _, p := range admitPolicies {
		d, _ := NewDecider(p)
		b.Run(p.Algorithm.String()+"/switch", func(b *testing.B) {
			var adm [4]int64
			for b.Loop() {
				d.Reset()
				AdmitByLabel(d, ts, labels, &adm)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ts)), "ns/decision")
		})
		b.Run(p.Algorithm.String()+"/interface", func(b *testing.B) {
			var adm [4]int64
			for b.Loop() {
				d.Reset()
				for j, tn := range ts {
					if d.Allow(tn) {
						adm[labels[j]]++
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ts)), "ns/decision")
		})
	}
}
