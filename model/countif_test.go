package model

import (
	"math/rand/v2"
	"testing"
)

// countIfReference decides requests (times ts, statuses st, costs cs) as
// count_if's rule says, written out over a bare decider of p: a matching
// request is decided as without count_if, any other is admitted iff the
// limiter would admit it now and charges nothing.
func countIfReference(p Policy, match func(int) bool, ts []int64, st []int, cs []int64) []bool {
	bare := p
	bare.CountIf = ""
	d := newDecider(bare)
	sp, _ := d.(spender)
	out := make([]bool, len(ts))
	for j, t := range ts {
		switch {
		case sp != nil && match(st[j]):
			out[j] = sp.spend(t, cs[j])
		case sp != nil:
			out[j] = sp.fits(t, cs[j])
		case match(st[j]):
			out[j] = d.Allow(t)
		default:
			out[j] = d.peek(t)
		}
	}
	return out
}

// count_if wraps every algorithm: decisions equal the reference loop, with
// and without costs, and a key over the limit rejects every request.
func TestCountIfEveryAlgorithm(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 10))
	match := func(s int) bool { return s == 401 || s == 403 }
	for _, a := range Algorithms {
		t.Run(a.String(), func(t *testing.T) {
			for trial := range 60 {
				p := randomPolicy(rng, a)
				p.CountIf = "401,403"
				p.Costed = trial%2 == 1
				if err := p.Validate(); err != nil {
					if p.Costed {
						continue // the algorithm spends no costs
					}
					t.Fatalf("%v: %v", p, err)
				}
				ts, _ := randomBatches(rng, 200)
				st := make([]int, len(ts))
				cs := make([]int64, len(ts))
				for j := range st {
					st[j] = []int{200, 401, 403, 500, 0}[rng.IntN(5)]
					cs[j] = 1
					if p.Costed {
						cs[j] = 1 + rng.Int64N(3)
					}
				}
				want := countIfReference(p, match, ts, st, cs)
				d := newDecider(p).(RequestDecider)
				for j, tNs := range ts {
					if got := d.AllowRequest(tNs, cs[j], st[j]); got != want[j] {
						t.Fatalf("%v: step %d at %d status %d cost %d: %v, reference %v", p, j, tNs, st[j], cs[j], got, want[j])
					}
				}
			}
		})
	}
}

// A window counts only matching requests: in fixed_window limit L, the
// matching requests admitted in a window never exceed L, every request
// after the L-th admitted match of its window is rejected, and every
// request before it is admitted.
func TestCountIfFixedWindowRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 11))
	for range 200 {
		limit := int64(rng.IntN(6))
		p := Policy{Algorithm: FixedWindow, WindowS: 10, Limit: limit, CountIf: "500-599"}
		d := newDecider(p).(RequestDecider)
		var at int64
		window, matched := int64(-1), int64(0)
		for j := range 300 {
			at += rng.Int64N(int64(2 * secondNs))
			if w := at / (10 * secondNs); w != window {
				window, matched = w, 0
			}
			status := 200
			if rng.IntN(3) == 0 {
				status = 500 + rng.IntN(100)
			}
			got := d.AllowRequest(at, 1, status)
			want := matched < limit
			if got != want {
				t.Fatalf("limit %d step %d at %d status %d: %v, want %v (%d matches admitted in the window)", limit, j, at, status, got, want, matched)
			}
			if got && status >= 500 {
				matched++
			}
		}
	}
}

func TestCountIfOf(t *testing.T) {
	for _, c := range []struct {
		statuses []int
		lo, hi   int
		want     string
	}{
		{[]int{403, 401}, 0, 0, "401,403"},
		{nil, 500, 0, "500-599"},
		{[]int{429}, 500, 503, "429,500-503"},
		{[]int{401, 402, 403}, 0, 0, "401-403"},
	} {
		got, err := CountIfOf(c.statuses, c.lo, c.hi)
		if err != nil || got != c.want {
			t.Errorf("CountIfOf(%v, %d, %d) = %q, %v; want %q", c.statuses, c.lo, c.hi, got, err, c.want)
		}
		if back, err := parseStatusSet(got); err != nil || back.String() != got {
			t.Errorf("%q reads back as %q, %v", got, back.String(), err)
		}
	}
	for _, bad := range [][]int{{99}, {600}} {
		if _, err := CountIfOf(bad, 0, 0); err == nil {
			t.Errorf("CountIfOf(%v) accepted", bad)
		}
	}
	if err := (Policy{Algorithm: FixedWindow, WindowS: 1, Limit: 1, CountIf: "4xx"}).Validate(); err == nil {
		t.Error("count_if 4xx accepted")
	}
}
