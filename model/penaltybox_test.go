package model

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// boxBlock is one block of a key: [from, until).
type boxBlock struct{ from, until int64 }

// boxReference decides times ts (ns, not decreasing) of one key as the
// penalty box is stated (docs/penalty-box.md), written out as a loop over
// the bare algorithm's decider: a request inside a block is rejected and
// not shown to the limiter; a request the limiter rejects starts a block of
// block_s, or of the level whose after is the largest not above the key's
// earlier blocks.
func boxReference(p Policy, ts []int64) ([]bool, []boxBlock) {
	bare := p
	bare.BlockS, bare.BlockLevels = 0, nil
	d := newDecider(bare)
	out := make([]bool, len(ts))
	var blocks []boxBlock
	until := int64(math.MinInt64)
	for j, t := range ts {
		if t < until {
			continue
		}
		if out[j] = d.Allow(t); out[j] {
			continue
		}
		s := p.BlockS
		if p.BlockLevels != nil {
			for _, l := range *p.BlockLevels {
				if int64(len(blocks)) >= l.After {
					s = l.BlockS
				}
			}
		}
		until = t + int64(math.Round(s*1000))*int64(time.Millisecond)
		blocks = append(blocks, boxBlock{t, until})
	}
	return out, blocks
}

// randomBox gives p a random block and, half the time, escalation levels.
func randomBox(rng *rand.Rand, p Policy) Policy {
	p.BlockS = float64(1+rng.IntN(20000)) / 1000
	if rng.IntN(2) == 0 {
		var ls BlockLevels
		after := int64(0)
		for range 1 + rng.IntN(3) {
			after += 1 + rng.Int64N(3)
			ls = append(ls, BlockLevel{After: after, BlockS: float64(1+rng.IntN(30000)) / 1000})
		}
		p.BlockLevels = &ls
	}
	return p
}

// The penalty box on every algorithm decides as the reference loop, request
// by request, and AllowN(t, n) is n calls of Allow(t); a clone decides as
// the original from where it was copied.
func TestPenaltyBoxEqualsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 2))
	for _, a := range Algorithms {
		t.Run(a.String(), func(t *testing.T) {
			for range 100 {
				p := randomBox(rng, randomPolicy(rng, a))
				if err := p.Validate(); err != nil {
					t.Fatalf("%v: %v", p, err)
				}
				times, sizes := randomBatches(rng, 300)
				want, blocks := boxReference(p, times)
				d := newDecider(p)
				if _, ok := d.(*penaltyBox); !ok {
					t.Fatalf("%v: newDecider gave %T", p, d)
				}
				var clone decider
				for j, tNs := range times {
					if j == len(times)/2 {
						clone = d.cloneInto(nil)
					}
					if got := d.Allow(tNs); got != want[j] {
						t.Fatalf("%v: step %d Allow(%d) = %v, reference %v", p, j, tNs, got, want[j])
					}
				}
				horizon := times[len(times)-1] + secondNs
				n, ns := d.(blockCounter).blockStats(horizon)
				var wantNs int64
				for _, b := range blocks {
					wantNs += min(b.until, horizon) - b.from
				}
				if n != int64(len(blocks)) || ns != wantNs {
					t.Fatalf("%v: %d blocks %d ns, reference %d blocks %d ns", p, n, ns, len(blocks), wantNs)
				}
				for j := len(times) / 2; j < len(times); j++ {
					if got := clone.Allow(times[j]); got != want[j] {
						t.Fatalf("%v: clone step %d = %v, reference %v", p, j, got, want[j])
					}
				}
				// AllowN over batches against single Allows.
				d.Reset()
				e := newDecider(p)
				for j, tNs := range times {
					var k int64
					for k < sizes[j] && e.Allow(tNs) {
						k++
					}
					for i := k + 1; i < sizes[j]; i++ {
						e.Allow(tNs)
					}
					if got := d.AllowN(tNs, sizes[j]); got != k {
						t.Fatalf("%v: step %d AllowN(%d, %d) = %d, Allow gives %d", p, j, tNs, sizes[j], got, k)
					}
				}
			}
		})
	}
}

// A token bucket of capacity 2 refilling 1/s, with block_s 10, by hand.
func TestPenaltyBoxSteps(t *testing.T) {
	levels := BlockLevels{{After: 1, BlockS: 30}}
	s := func(x float64) int64 { return int64(x * float64(secondNs)) }
	for _, c := range []struct {
		name   string
		p      Policy
		steps  []int64
		want   []bool
		blocks int64
	}{
		{"block", Policy{Algorithm: TokenBucket, Rate: 1, Capacity: 2, BlockS: 10},
			// t0, t0 admitted (bucket empty); 0.5 rejected: block to 10.5;
			// 9 is blocked (the bucket would have admitted); 10.5 admitted
			// (the bucket refilled meanwhile), 10.5 admitted, 10.5 blocks
			// again to 20.5.
			[]int64{0, 0, s(0.5), s(9), s(10.5), s(10.5), s(10.5), s(20)},
			[]bool{true, true, false, false, true, true, false, false}, 2},
		{"escalation", Policy{Algorithm: TokenBucket, Rate: 1, Capacity: 2, BlockS: 10, BlockLevels: &levels},
			// The second block (one earlier) lasts 30 s: 10.5 to 40.5.
			[]int64{0, 0, s(0.5), s(10.5), s(10.5), s(10.5), s(40), s(40.5)},
			[]bool{true, true, false, true, true, false, false, true}, 2},
		{"blocked requests are not counted", Policy{Algorithm: SlidingLog, WindowS: 10, Limit: 1, BlockS: 5},
			// sliding_log counts rejected attempts; those during the block
			// are not seen, so at 10.1 the log holds only the attempt at 0.1's
			// rejection (expired at 10.1) and the admission at 0 (expired).
			[]int64{0, s(0.1), s(1), s(2), s(3), s(10.1)},
			[]bool{true, false, false, false, false, true}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDecider(c.p)
			for j, tNs := range c.steps {
				if got := d.Allow(tNs); got != c.want[j] {
					t.Errorf("step %d: Allow(%v) = %v, want %v", j, time.Duration(tNs), got, c.want[j])
				}
			}
			if n, _ := d.(blockCounter).blockStats(math.MaxInt64); n != c.blocks {
				t.Errorf("blocks %d, want %d", n, c.blocks)
			}
		})
	}
}

// A policy with a penalty box has no counting or lockstep form (a log
// replay's batches would skip the box): it runs on its deciders.
func TestPenaltyBoxHasNoBatchForm(t *testing.T) {
	for _, p := range []Policy{
		{Algorithm: FixedWindow, WindowS: 60, Limit: 10, BlockS: 30},
		{Algorithm: SlidingWindow, WindowS: 60, Limit: 10, BlockS: 30},
		{Algorithm: TokenBucket, Rate: 1, Capacity: 10, BlockS: 30},
	} {
		if _, ok := CountFunc(p, 0); ok {
			t.Errorf("%v: a counting form", p)
		}
		if _, ok := NewLockstep([]Policy{p}, 0); ok {
			t.Errorf("%v: a lockstep form", p)
		}
	}
}

// block_s 0 leaves every policy as it was: the bare decider, and the label
// without block_s; block_s > 0 shows in the label.
func TestPenaltyBoxLabel(t *testing.T) {
	p := Policy{Algorithm: TokenBucket, Rate: 5, Capacity: 20}
	if _, ok := newDecider(p).(*penaltyBox); ok || p.modified() {
		t.Fatal("block_s 0 wraps the decider")
	}
	if got := p.Canonical(); got != "token_bucket rate=5 capacity=20" {
		t.Errorf("label %q", got)
	}
	p.BlockS = 60
	if got, want := p.Canonical(), "token_bucket rate=5 capacity=20 block_s=60"; got != want {
		t.Errorf("label %q, want %q", got, want)
	}
	q, err := ParseLabel(p.Canonical())
	if err != nil || q != p {
		t.Errorf("ParseLabel(%q) = %v, %v", p.Canonical(), q, err)
	}
	p.BlockLevels = &BlockLevels{{After: 1, BlockS: 600}, {After: 3, BlockS: 3600.5}}
	if got, want := p.Canonical(), "token_bucket rate=5 capacity=20 block_s=60 block_levels=1:600,3:3600.5"; got != want {
		t.Errorf("label %q, want %q", got, want)
	}
	q, err = ParseLabel(p.Canonical())
	if err != nil || q.Canonical() != p.Canonical() {
		t.Errorf("ParseLabel(%q) = %v, %v", p.Canonical(), q.Canonical(), err)
	}
	for _, bad := range []string{"token_bucket rate=5 capacity=20 block_s=60 block_levels=1", "token_bucket rate=5 capacity=20 block_s=60 block_levels=3:60,2:90"} {
		if _, err := ParseLabel(bad); err == nil {
			t.Errorf("ParseLabel(%q) accepted", bad)
		}
	}
}

func TestPenaltyBoxValidate(t *testing.T) {
	base := Policy{Algorithm: TokenBucket, Rate: 5, Capacity: 20}
	for _, c := range []struct {
		p    func(p *Policy)
		path string
		msg  string
	}{
		{func(p *Policy) { p.BlockS = -1 }, "block_s", "between 0"},
		{func(p *Policy) { p.BlockS = math.NaN() }, "block_s", "between 0"},
		{func(p *Policy) { p.BlockS = 0.0005 }, "block_s", "milliseconds"},
		{func(p *Policy) { p.BlockS, p.Key = 60, KeyBoth }, "block_s", "key: both"},
		{func(p *Policy) { p.BlockS, p.State, p.SyncMs = 60, Shared, 5 }, "block_s", "sync_ms"},
		{func(p *Policy) { p.BlockS, p.BlockLevels = 60, &BlockLevels{{After: 0, BlockS: 5}} }, "block_levels[0].after", ">= 1"},
		{func(p *Policy) {
			p.BlockS, p.BlockLevels = 60, &BlockLevels{{After: 2, BlockS: 5}, {After: 2, BlockS: 9}}
		}, "block_levels[1].after", "above the previous"},
		{func(p *Policy) { p.BlockS, p.BlockLevels = 60, &BlockLevels{{After: 2, BlockS: 0}} }, "block_levels[0].block_s", "> 0"},
		{func(p *Policy) { p.BlockS, p.BlockLevels = 60, &BlockLevels{{After: 2, BlockS: -3}} }, "block_levels[0].block_s", "between 0"},
	} {
		p := base
		c.p(&p)
		err := p.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != c.path || !strings.Contains(fe.Msg, c.msg) {
			t.Errorf("%+v: error %v, want %s: …%s…", p, err, c.path, c.msg)
		}
	}
	ok := base
	ok.BlockS, ok.BlockLevels = 60, &BlockLevels{{After: 1, BlockS: 600}, {After: 3, BlockS: 3600}}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
}

// Run's blocked time and blocks, per client and in total, are the
// reference's blocks (clipped at the scenario's end) on random event
// workloads, one key per client.
func TestPenaltyBoxMetrics(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	for n := range 9 {
		sim, _, sc := randomEventSims(t, rng, n)
		horizon := int64(sc.DurationS) * secondNs
		for _, p := range []Policy{
			{Algorithm: TokenBucket, Rate: 2, Capacity: 5, BlockS: 7},
			{Algorithm: FixedWindow, WindowS: 10, Limit: 8, BlockS: 30, BlockLevels: &BlockLevels{{After: 1, BlockS: 90}}},
			{Algorithm: SlidingLog, WindowS: 5, Limit: 3, BlockS: 0.25},
		} {
			var out Outcome
			sim.Run(p, &out)
			var blocks, legit int64
			for i, ts := range sim.events {
				dec, bs := boxReference(p, ts)
				var adm, ns int64
				for _, ok := range dec {
					if ok {
						adm++
					}
				}
				for _, b := range bs {
					ns += min(b.until, horizon) - b.from
				}
				blocks += int64(len(bs))
				if sc.Clients[i].Class == Legit {
					legit += ns
				}
				if got := out.Clients[i]; got.Admitted != adm || got.BlockedNs != ns {
					t.Fatalf("workload %d %v client %d: admitted %d blocked %d ns, reference %d, %d", n, p, i, got.Admitted, got.BlockedNs, adm, ns)
				}
			}
			if out.Blocks != blocks || out.LegitBlockedS != float64(legit)/1e9 {
				t.Fatalf("workload %d %v: blocks %d legit %v s, reference %d, %v", n, p, out.Blocks, out.LegitBlockedS, blocks, float64(legit)/1e9)
			}
		}
	}
}

// Keyed: a block on a shared address blocks every client of that address;
// each client's blocked time is the union of its keys' blocks.
func TestPenaltyBoxKeyed(t *testing.T) {
	w := keyedScenario(t, `
name: nat
duration_s: 100
arrivals: {process: poisson}
clients:
  - name: scraper
    class: abusive
    stage: none
    addresses: 3
    address_pool: nat
    segments: [[10, 30, 20]]
  - name: office user
    class: legit
    address_pool: nat
    segments: [[0, 100, 1]]
  - name: home user
    class: legit
    segments: [[0, 100, 1]]
`)
	horizon := int64(100) * secondNs
	for _, p := range []Policy{
		{Algorithm: TokenBucket, Rate: 3, Capacity: 10, Key: KeyAddress, BlockS: 20},
		{Algorithm: SlidingWindow, WindowS: 10, Limit: 40, Key: KeyGlobal, BlockS: 5},
		{Algorithm: GCRA, Rate: 2, Capacity: 5, Key: KeyAddress, Nodes: 2, BlockS: 12},
	} {
		var out Outcome
		sim := w.NewSimulator()
		sim.SetReplicate(7, 0)
		sim.Run(p, &out)
		// Reference: the merged stream, each (node, key) on its own boxed
		// reference loop; a client is blocked while any key it uses is.
		reqs := w.Requests(7, 0)
		nodes := max(1, p.Nodes)
		type slot struct{ node, key int }
		times := map[slot][]int64{}
		idx := map[slot][]int{}
		keyOf := func(r Request) int {
			if p.Key == KeyGlobal {
				return 0
			}
			return r.Address
		}
		users := map[int]map[int]bool{}
		for j, r := range reqs {
			s := slot{j % nodes, keyOf(r)}
			times[s] = append(times[s], r.TNs)
			idx[s] = append(idx[s], j)
			if users[keyOf(r)] == nil {
				users[keyOf(r)] = map[int]bool{}
			}
			users[keyOf(r)][r.Client] = true
		}
		admitted := make([]int64, len(w.Scenario.Clients))
		blockedAt := make([]map[int64]bool, len(w.Scenario.Clients)) // ms blocked
		var blocks int64
		for s, ts := range times {
			dec, bs := boxReference(p, ts)
			for j, ok := range dec {
				if ok {
					admitted[reqs[idx[s][j]].Client]++
				}
			}
			blocks += int64(len(bs))
			for _, b := range bs {
				for c := range users[s.key] {
					if blockedAt[c] == nil {
						blockedAt[c] = map[int64]bool{}
					}
					for ms := b.from / 1e6; ms < min(b.until, horizon)/1e6; ms++ {
						blockedAt[c][ms] = true
					}
				}
			}
		}
		if out.Blocks != blocks {
			t.Errorf("%v: blocks %d, reference %d", p, out.Blocks, blocks)
		}
		for c := range admitted {
			got := out.Clients[c]
			// The reference counts whole ms; blocks start at request times
			// (ns), so allow 1 ms per block.
			want := int64(len(blockedAt[c])) * 1e6
			if got.Admitted != admitted[c] || math.Abs(float64(got.BlockedNs-want)) > float64(blocks+1)*1e6 {
				t.Errorf("%v client %d: admitted %d blocked %v, reference %d, %v", p, c, got.Admitted, time.Duration(got.BlockedNs), admitted[c], time.Duration(want))
			}
		}
		if out.Blocks == 0 {
			t.Errorf("%v: no block", p)
		}
	}
}
