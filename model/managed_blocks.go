package model

import "slices"

// ruleBlocks gives a managed rule that blocks its key by its own logic
// (cloudflare_rule's mitigation timeout, fastly_erl's penalty box) the
// penalty box's block accounting (blockCounter): a block starts with the
// request that puts the key in the rule's blocking state and lasts as long
// as the rule keeps it there. The rule's blocks do not overlap: a block
// starts only once the previous one has ended.
type ruleBlocks struct {
	// started is set by a decision that started a block; end is the end
	// (exclusive) of the latest block.
	started bool
	end     int64
	// blocks counts the blocks started; blockedNs is their total length.
	blocks, blockedNs int64
}

var (
	_ blockCounter = (*cloudflareRuleLimiter)(nil)
	_ blockCounter = (*fastlyERLLimiter)(nil)
)

// resetBlocks forgets the key's blocks (the rule's Reset).
func (r *ruleBlocks) resetBlocks() { *r = ruleBlocks{} }

// startBlock counts a block of the key over [t, end).
func (r *ruleBlocks) startBlock(t, end int64) {
	r.started, r.end = true, end
	r.blocks++
	r.blockedNs += end - t
}

// blockStats: the blocks since Reset, the last clipped at horizonNs (only
// the last can run past it).
func (r *ruleBlocks) blockStats(horizonNs int64) (int64, int64) {
	if r.blocks == 0 {
		return 0, 0
	}
	return r.blocks, r.blockedNs - max(0, r.end-horizonNs)
}

func (r *ruleBlocks) blockStarted() (bool, int64) { return r.started, r.end }

// blocksKeys reports whether p's decider blocks its keys: a penalty box
// (block_s) or a managed rule with a blocking state.
func blocksKeys(p Policy) bool {
	if p.BlockS > 0 {
		return true
	}
	_, ok := newDecider(p).(blockCounter)
	return ok
}

// awsBlocks is aws_waf_rate's block accounting: the key is blocked while
// the acting check counted more than limit requests, so a block starts
// when the result of an over check starts acting (check time + lag) after
// one that was not over, and ends when the result of a check that is not
// over starts acting. Blocks are counted whether or not a request of the
// key falls in them.
type awsBlocks struct {
	// acted is the latest check accounted (when accounted); in says it was
	// over, a block running from from.
	acted     int64
	accounted bool
	in        bool
	from      int64
	// blocks counts the blocks started; closedNs is the length of those
	// that have ended, spans the blocks themselves.
	blocks, closedNs int64
	spans            []span
}

// span is a block [from, until), ns.
type span struct{ from, until int64 }

// blockLister is a limiter whose blocks start with its own checks, not
// with a request (aws_waf_rate), so that a keyed run cannot see them
// start: it lists them when the run ends, up to horizonNs.
type blockLister interface {
	blockSpans(horizonNs int64) []span
}

var _ blockLister = (*awsWAFRateLimiter)(nil)

var _ blockCounter = (*awsWAFRateLimiter)(nil)

// acting is the time check c's result starts acting.
func (d *awsWAFRateLimiter) acting(c int64) int64 { return d.phaseNs + c*awsCheckNs + d.lagNs }

// account accounts the checks up to c in a (d's, or a copy's), reading d's
// buckets: call it before counting requests later than check c.
func (d *awsWAFRateLimiter) account(a *awsBlocks, c int64) {
	if !a.accounted {
		// Checks before the key's first request count nothing.
		a.acted, a.accounted = c-1, true
	}
	for j := a.acted + 1; j <= c; j++ {
		var over bool
		if d.fresh || j-d.windowBuckets > d.last {
			// No bucket of the key falls in this check's window or a later one's.
			if a.in {
				a.closedNs += d.acting(j) - a.from
				a.spans = append(a.spans, span{a.from, d.acting(j)})
				a.in = false
			}
			a.acted = c
			return
		}
		if d.checked && j == d.check {
			over = d.over // blocked's result
		} else {
			var sum int64
			for b := j - d.windowBuckets; b < j; b++ {
				sum += d.bucket(b)
			}
			over = sum > d.limit
		}
		switch {
		case over && !a.in:
			a.in, a.from = true, d.acting(j)
			a.blocks++
		case !over && a.in:
			a.closedNs += d.acting(j) - a.from
			a.spans = append(a.spans, span{a.from, d.acting(j)})
			a.in = false
		}
		a.acted = j
	}
}

// actingAt is the check whose result acts at t.
func (d *awsWAFRateLimiter) actingAt(t int64) int64 {
	return floorDiv(t-d.lagNs-d.phaseNs, awsCheckNs)
}

// blockStats: the blocks whose start acts before horizonNs, the running
// one up to horizonNs (the key has no more requests).
func (d *awsWAFRateLimiter) blockStats(horizonNs int64) (int64, int64) {
	a := d.blocks
	if !a.accounted {
		return 0, 0
	}
	d.account(&a, d.actingAt(horizonNs-1))
	ns := a.closedNs
	if a.in {
		ns += max(0, horizonNs-a.from)
	}
	return a.blocks, ns
}

// blockSpans lists the blocks blockStats counts: the running one up to
// horizonNs.
func (d *awsWAFRateLimiter) blockSpans(horizonNs int64) []span {
	a := d.blocks
	if !a.accounted {
		return nil
	}
	a.spans = slices.Clip(a.spans) // the copy's appends leave d's alone
	d.account(&a, d.actingAt(horizonNs-1))
	if a.in {
		a.spans = append(a.spans, span{a.from, max(a.from, horizonNs)})
	}
	return a.spans
}

// blockStarted is always false: a block of aws_waf_rate starts with a
// check, not with a request, and its end is not known when it starts, so
// keyed runs (keys shared by clients) do not attribute its blocks.
func (d *awsWAFRateLimiter) blockStarted() (bool, int64) { return false, 0 }
