package model

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// holdDecider is a test modifier: after a rejection at t it rejects every
// request of the key until t + holdNs without showing it to the limiter,
// which then resumes with the state it had (a penalty box in miniature).
type holdDecider struct {
	wrapper
	holdNs, until int64
	held          bool
}

var _ decider = (*holdDecider)(nil)

func (h *holdDecider) Reset() { h.inner.Reset(); h.held = false }

func (h *holdDecider) Allow(t int64) bool {
	if h.held && t < h.until {
		return false
	}
	h.held = false
	if h.inner.Allow(t) {
		return true
	}
	h.held, h.until = true, t+h.holdNs
	return false
}

func (h *holdDecider) AllowN(t, n int64) int64 {
	var k int64
	for k < n && h.Allow(t) {
		k++
	}
	return k
}

func (h *holdDecider) cloneInto(dst decider) decider {
	c, _ := dst.(*holdDecider)
	if c == nil {
		c = &holdDecider{}
	}
	inner := c.inner
	*c = *h
	c.inner = h.inner.cloneInto(inner)
	return c
}

// withModifier registers m for the rest of the test.
func withModifier(t *testing.T, m *modifier) {
	t.Helper()
	saved := modifiers
	modifiers = append(slices.Clip(modifiers), m)
	t.Cleanup(func() { modifiers = saved })
}

// holdReference decides times ts (ns, not decreasing) as holdDecider over a
// fresh decider of p would, written out as a loop.
func holdReference(p Policy, holdNs int64, ts []int64) []bool {
	d := newDecider(p)
	out := make([]bool, len(ts))
	until := int64(-1)
	for j, t := range ts {
		if t < until {
			continue
		}
		if out[j] = d.Allow(t); !out[j] {
			until = t + holdNs
		}
	}
	return out
}

// A modifier wraps the decider of every registered algorithm through one
// interface: decisions equal a reference loop over the bare decider, and
// the simulator runs modified policies on the wrapped deciders (its kernels,
// closed, counting and lockstep forms stand aside).
func TestModifierWrapsEveryAlgorithm(t *testing.T) {
	const holdNs = 3 * secondNs
	wraps := 0
	withModifier(t, &modifier{
		name: "hold",
		uses: func(p Policy) bool { return p.SyncMs == 0 },
		wrap: func(inner decider, p Policy) decider {
			wraps++
			return &holdDecider{wrapper: wrapper{inner}, holdNs: holdNs}
		},
	})
	rng := rand.New(rand.NewPCG(36, 1))
	for _, a := range Algorithms {
		t.Run(a.String(), func(t *testing.T) {
			for range 50 {
				p := randomPolicy(rng, a)
				times, _ := randomBatches(rng, 200)
				if !p.modified() {
					t.Fatalf("%v: not modified", p)
				}
				want := holdReference(p, holdNs, times)
				d := newDecider(p)
				if _, ok := d.(*holdDecider); !ok {
					t.Fatalf("%v: newDecider gave %T, not the modifier's decider", p, d)
				}
				c := d.cloneInto(nil)
				for j, tNs := range times {
					if got := d.Allow(tNs); got != want[j] {
						t.Fatalf("%v: step %d Allow(%d) = %v, reference %v", p, j, tNs, got, want[j])
					}
				}
				if got := c.Allow(times[0]); got != want[0] {
					t.Fatalf("%v: clone's first decision %v, want %v", p, got, want[0])
				}
			}
		})
	}
	if wraps == 0 {
		t.Fatal("the modifier never wrapped a decider")
	}
}

// The simulator's faster forms stand aside for a modified policy: Run gives
// the hold reference on an event workload, and the bare policy (the
// modifier not used) gives the bare decider's result.
func TestModifiedPolicyRunsOnDeciders(t *testing.T) {
	const holdNs = 5 * secondNs
	withModifier(t, &modifier{
		name: "hold",
		uses: func(p Policy) bool { return p.SyncMs == 0 && p.Limit != 7 },
		wrap: func(inner decider, p Policy) decider {
			return &holdDecider{wrapper: wrapper{inner}, holdNs: holdNs}
		},
	})
	rng := rand.New(rand.NewPCG(36, 2))
	for n := range 6 {
		sim, _, _ := randomEventSims(t, rng, n)
		for _, p := range []Policy{
			{Algorithm: FixedWindow, WindowS: 10, Limit: 5},
			{Algorithm: SlidingLog, WindowS: 10, Limit: 5},
			{Algorithm: TokenBucket, Rate: 0.5, Capacity: 3},
			{Algorithm: SlidingWindow, WindowS: 10, Limit: 7}, // not modified
		} {
			if sim.CanRunLimits(p) || sim.CanRunLockstep(p) {
				if p.modified() {
					t.Fatalf("%v: modified, yet the simulator offers a batch form", p)
				}
			}
			var out Outcome
			sim.Run(p, &out)
			for i, ts := range sim.events {
				var adm int64
				if p.modified() {
					for _, ok := range holdReference(p, holdNs, ts) {
						if ok {
							adm++
						}
					}
				} else {
					adm = admitEvents(newDecider(p), ts, nil)
				}
				if out.Clients[i].Admitted != adm {
					t.Fatalf("workload %d %v client %d: Run admitted %d, reference %d", n, p, i, out.Clients[i].Admitted, adm)
				}
			}
		}
	}
}
