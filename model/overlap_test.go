package model

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// overlap agrees with the pairwise scan it replaced on whether segments
// overlap, and the pair it names does overlap.
func TestOverlapMatchesPairwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 5000 {
		segs := make([]Segment, 1+rng.IntN(8))
		for i := range segs {
			t0 := rng.IntN(50)
			segs[i] = Segment{T0: t0, T1: t0 + 1 + rng.IntN(10)}
		}
		want := false
		for k := range segs {
			for m := range k {
				if segs[k].T0 < segs[m].T1 && segs[m].T0 < segs[k].T1 {
					want = true
				}
			}
		}
		k, m, got := overlap(segs)
		if got != want {
			t.Fatalf("trial %d: %v: overlap %v, pairwise %v", trial, segs, got, want)
		}
		if got && !(m < k && segs[k].T0 < segs[m].T1 && segs[m].T0 < segs[k].T1) {
			t.Fatalf("trial %d: %v: named %d and %d, which do not overlap", trial, segs, k, m)
		}
	}
}

// Validating a client of 300,000 segments is n log n (it took 55 s with
// the pairwise check): compare ns/op at 30,000 and 300,000 segments.
func BenchmarkValidateSegments(b *testing.B) {
	for _, n := range []int{30_000, 300_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			segs := make([]Segment, n)
			for i := range segs {
				segs[n-1-i] = Segment{T0: 2 * i, T1: 2*i + 1, Rate: 1} // reverse order: sorting has work
			}
			s := &Scenario{Name: "many segments", DurationS: 2 * n, Clients: []Client{{Name: "c", Class: Legit, Segments: segs}}}
			for b.Loop() {
				if err := s.Validate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
