package model

import (
	"math/rand/v2"
	"testing"
)

// Every algorithm's Retry-After is the first time its decider would admit
// again: on random policies and traces, at every request, a copy of the
// decider admits at t + RetryAfter(t) and not 1 ns before; it equals the
// generic search, and asking leaves the decisions unchanged.
func TestRetryAfterIsFirstAdmission(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 3))
	for _, a := range Algorithms {
		if a.Describe().blank == nil {
			continue // registered from outside the package (tests)
		}
		var rejected int
		for range 200 {
			p := randomPolicy(rng, a)
			d, twin := newDecider(p), newDecider(p)
			ra, ok := d.(RetryAfterer)
			if !ok {
				t.Fatalf("%v: decider %T has no RetryAfter", p, d)
			}
			times, _ := randomBatches(rng, 60)
			for i, tNs := range times {
				got := ra.RetryAfter(tNs)
				if want := retryAfterSearch(d, tNs, nil); got != want {
					t.Fatalf("%v: step %d at %d ns: RetryAfter %d ns, search %d ns", p, i, tNs, got, want)
				}
				switch {
				case got < 0:
					if d.cloneInto(nil).peek(tNs + maxRetryAfterNs) {
						t.Fatalf("%v: step %d: RetryAfter says never, but it admits later", p, i)
					}
				case got > 0:
					rejected++
					if !d.cloneInto(nil).peek(tNs+got) || d.cloneInto(nil).peek(tNs+got-1) {
						t.Fatalf("%v: step %d at %d ns: RetryAfter %d ns is not the first admission", p, i, tNs, got)
					}
				default:
					if !d.cloneInto(nil).peek(tNs) {
						t.Fatalf("%v: step %d at %d ns: RetryAfter 0 but it rejects", p, i, tNs)
					}
				}
				if d.Allow(tNs) != twin.Allow(tNs) {
					t.Fatalf("%v: step %d at %d ns: asking RetryAfter changed a decision", p, i, tNs)
				}
			}
		}
		if rejected == 0 {
			t.Errorf("%v: no rejection with a Retry-After in the traces", a)
		}
	}
}
