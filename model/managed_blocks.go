package model

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
