package model

import (
	"math/rand/v2"
	"testing"
	"time"
)

// refBlock is a block of the reference: [from, until).
type refBlock struct{ from, until int64 }

// refUntil is the reference's block end (the rule's blocking state).
func refUntil(r managedRef) int64 {
	switch r := r.(type) {
	case *cloudflareRef:
		return r.until
	case *fastlyRef:
		return r.until
	}
	return -1
}

// The mitigation timeouts of cloudflare_rule and the penalty boxes of
// fastly_erl are reported as blocks: per key, the blocks the reference
// (managed_test.go, from the vendors' documentation) starts, and their
// total length up to a horizon at or after the last request, through
// Allow and AllowN's batches, and nothing after Reset.
func TestManagedRuleBlocksMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 11))
	for _, a := range []Algorithm{CloudflareRule, FastlyERL, AWSWAFRate} {
		t.Run(a.String(), func(t *testing.T) {
			var total int64
			for trial := range 150 {
				p := randomManagedPolicy(rng, a)
				times, sizes := managedTrace(rng, 300)
				d, _ := NewDecider(p)
				batched, _ := NewDecider(p)
				ref := newManagedRef(p)
				var blocks []refBlock
				for i, tm := range times {
					for range sizes[i] {
						before := refUntil(ref)
						ref.allow(tm)
						if u := refUntil(ref); u != before {
							blocks = append(blocks, refBlock{tm, u})
						}
						d.Allow(tm)
					}
					batched.AllowN(tm, sizes[i])
				}
				last := times[len(times)-1]
				for _, h := range []int64{last, last + rng.Int64N(int64(2*time.Minute)), last + int64(2*time.Hour)} {
					if a == AWSWAFRate {
						blocks = awsRefBlocks(p, times, sizes, h)
					}
					var want int64
					for _, b := range blocks {
						want += max(0, min(b.until, h)-b.from)
					}
					for name, dd := range map[string]Decider{"Allow": d, "AllowN": batched} {
						n, ns, ok := BlockStats(dd, h)
						if !ok || n != int64(len(blocks)) || ns != want {
							t.Fatalf("trial %d %v via %s, horizon %v: BlockStats = %d, %v, %v; reference %d blocks, %v",
								trial, p, name, time.Duration(h), n, time.Duration(ns), ok, len(blocks), time.Duration(want))
						}
					}
				}
				if p.Algorithm == CloudflareRule && p.MitigationTimeoutS == 0 && len(blocks) != 0 {
					t.Fatalf("trial %d %v: a throttle (mitigation_timeout_s 0) has no blocks, the reference has %d", trial, p, len(blocks))
				}
				total += int64(len(blocks))
				d.Reset()
				if n, ns, _ := BlockStats(d, last); n != 0 || ns != 0 {
					t.Fatalf("trial %d %v: after Reset BlockStats = %d, %d", trial, p, n, ns)
				}
			}
			if total == 0 {
				t.Error("no block started: the traces do not test the blocks")
			}
		})
	}
}

// awsRefBlocks are aws_waf_rate's blocks as AWS documents the rule
// (docs/managed-rules.md), up to horizon h: every 10 s a check counts the
// key's requests (all of them) in the window before it, and its result acts
// from lag after it until the next one's; a block is a run of checks that
// counted more than limit, from the first one's action to the action of the
// next check that did not.
func awsRefBlocks(p Policy, times, sizes []int64, h int64) []refBlock {
	lag := int64(awsLagS(p) * 1e9)
	window := int64(p.WindowS) * secondNs
	var blocks []refBlock
	in := false
	for c := int64(0); c*10*secondNs+lag < h; c++ {
		end := c * 10 * secondNs
		var n int64
		for i, u := range times {
			if u >= end-window && u < end {
				n += sizes[i]
			}
		}
		act := end + lag
		switch over := n > p.Limit; {
		case over && !in:
			blocks = append(blocks, refBlock{act, h})
			in = true
		case !over && in:
			blocks[len(blocks)-1].until = act
			in = false
		}
	}
	return blocks
}

// A managed rule under count_if reports the rule's own blocks: when every
// request matches, the blocks and their length equal the bare rule's.
func TestManagedRuleBlocksUnderCountIf(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 12))
	for _, a := range []Algorithm{CloudflareRule, FastlyERL, AWSWAFRate} {
		var total int64
		for trial := range 50 {
			p := randomManagedPolicy(rng, a)
			bare := newDecider(p)
			p.CountIf = "401"
			rd := newDecider(p).(RequestDecider)
			times, sizes := managedTrace(rng, 200)
			for i, tm := range times {
				for range sizes[i] {
					if got, want := rd.AllowRequest(tm, 1, 401), bare.Allow(tm); got != want {
						t.Fatalf("%s trial %d %v: request at %d: %v, bare rule %v", a, trial, p, tm, got, want)
					}
				}
			}
			h := times[len(times)-1] + int64(time.Minute)
			n, ns, ok := BlockStats(rd, h)
			wn, wns, _ := BlockStats(bare, h)
			if !ok || n != wn || ns != wns {
				t.Fatalf("%s trial %d %v: blocks %d (%d ns, %v), bare rule %d (%d ns)", a, trial, p, n, ns, ok, wn, wns)
			}
			clone := rd.(decider).cloneInto(nil)
			if cn, cns, _ := BlockStats(clone, h); cn != n || cns != ns {
				t.Fatalf("%s trial %d: a clone reports %d blocks, the original %d", a, trial, cn, n)
			}
			total += n
		}
		if total == 0 {
			t.Errorf("%s: no block started", a)
		}
	}
}
