package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A penalty box over a weighing limiter (count_if, costs) decides as a
// reference loop over the limiter without the box (countIfReference's own
// oracle is tested in countif_test.go): a request inside a block is
// rejected unseen, a request the limiter rejects starts a block; its blocks
// are counted, and a clone decides as the original.
func TestPenaltyBoxWeighedEqualsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 9))
	for _, a := range Algorithms {
		t.Run(a.String(), func(t *testing.T) {
			for trial := range 40 {
				p := randomBox(rng, randomPolicy(rng, a))
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
				bare := p
				bare.BlockS, bare.BlockLevels = 0, nil
				lim := newDecider(bare).(RequestDecider)
				want := make([]bool, len(ts))
				var blocks, blockedNs int64
				until := int64(math.MinInt64)
				horizon := ts[len(ts)-1] + secondNs
				for j, tNs := range ts {
					if tNs < until {
						continue
					}
					if want[j] = lim.AllowRequest(tNs, cs[j], st[j]); want[j] {
						continue
					}
					s := p.BlockS
					for _, l := range p.levels() {
						if blocks >= l.After {
							s = l.BlockS
						}
					}
					until = tNs + int64(math.Round(s*1000))*1_000_000
					blocks++
					blockedNs += min(until, horizon) - tNs
				}
				d := newDecider(p).(RequestDecider)
				var clone RequestDecider
				for j, tNs := range ts {
					if j == len(ts)/2 {
						clone = d.(decider).cloneInto(nil).(RequestDecider)
					}
					if got := d.AllowRequest(tNs, cs[j], st[j]); got != want[j] {
						t.Fatalf("%v: step %d at %d status %d cost %d: %v, reference %v", p, j, tNs, st[j], cs[j], got, want[j])
					}
				}
				if n, ns, ok := BlockStats(d, horizon); !ok || n != blocks || ns != blockedNs {
					t.Fatalf("%v: %d blocks %d ns (%v), reference %d blocks %d ns", p, n, ns, ok, blocks, blockedNs)
				}
				for j := len(ts) / 2; j < len(ts); j++ {
					if got := clone.AllowRequest(ts[j], cs[j], st[j]); got != want[j] {
						t.Fatalf("%v: clone step %d = %v, reference %v", p, j, got, want[j])
					}
				}
			}
		})
	}
}

// A penalty box over a window counting only failures (count_if 401,
// limit 2 in 10 s, block_s 60): successes do not count; once two failures
// are in the window the next request is rejected, whatever its status,
// and blocks the key; every request of the block is rejected, and the
// window resumes after it.
func TestPenaltyBoxCountIfSteps(t *testing.T) {
	p := Policy{Algorithm: SlidingWindow, WindowS: 10, Limit: 2, CountIf: "401", BlockS: 60}
	d, err := NewDecider(p)
	if err != nil {
		t.Fatal(err)
	}
	rd := d.(RequestDecider)
	s := func(x float64) int64 { return int64(x * float64(secondNs)) }
	for i, step := range []struct {
		t      int64
		status int
		want   bool
	}{
		{s(0), 200, true}, {s(1), 401, true}, {s(2), 200, true}, {s(3), 200, true},
		{s(3.5), 401, true}, // two failures in the window
		{s(4), 200, false},  // rejected: blocked until 64
		{s(6), 401, false}, {s(63.9), 200, false},
		{s(64), 200, true}, {s(65), 401, true},
	} {
		if got := rd.AllowRequest(step.t, 1, step.status); got != step.want {
			t.Fatalf("step %d: AllowRequest(%d, status %d) = %v, want %v", i, step.t, step.status, got, step.want)
		}
	}
	if n, ns, _ := BlockStats(d, s(100)); n != 1 || ns != s(60) {
		t.Fatalf("%d blocks, %d ns; want 1 block of 60 s", n, ns)
	}
}
