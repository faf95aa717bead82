package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The penalty box (block_s): the first request a key's limiter rejects
// starts a block of block_s seconds on that key; every request of the key
// during the block is rejected and is not seen by the limiter; when the
// block ends the limiter resumes with the state it had (a refilling
// bucket has refilled meanwhile, a window has moved on). Cloudflare's
// mitigation timeout, fail2ban's bantime, rack-attack's Allow2Ban and a
// HAProxy gpc flag with an expiry act so.
//
// Escalation (block_levels, rack-attack style): level {after: N, block_s:
// S} makes a key's block S seconds long once the key has had N blocks
// before it; the level with the largest N not above the key's earlier
// blocks applies, and block_s below every level's N.

// BlockLevel is one step of a penalty box's escalation.
type BlockLevel struct {
	// After is the number of the key's earlier blocks from which the level
	// applies (>= 1).
	After int64
	// BlockS is the length of the key's blocks from then on, seconds.
	BlockS float64
}

// BlockLevels are a penalty box's escalation levels, in increasing After.
type BlockLevels []BlockLevel

// maxBlockS bounds block_s (a year), so block ends fit int64 ns.
const maxBlockS = 366 * 24 * 3600

// maxBlockLevels bounds the number of escalation levels.
const maxBlockLevels = 16

// blockNs converts a block length in seconds to ns (whole ms, validated).
func blockNs(s float64) int64 { return int64(math.Round(s*1000)) * 1_000_000 }

// validateBlockS checks a block length: >= 0, a whole number of ms, at most
// maxBlockS.
func validateBlockS(path string, s float64) error {
	ms := s * 1000
	if !(s >= 0 && s <= maxBlockS) || math.Abs(ms-math.Round(ms)) > 1e-6 {
		return fieldErr(path, "must be a whole number of milliseconds between 0 and %d seconds, got %v", maxBlockS, s)
	}
	return nil
}

// validatePenaltyBox checks block_s and block_levels.
func (p Policy) validatePenaltyBox() error {
	if err := validateBlockS("block_s", p.BlockS); err != nil {
		return err
	}
	if p.BlockLevels != nil {
		if err := p.BlockLevels.Validate(); err != nil {
			return err
		}
	}
	if p.BlockS == 0 {
		return nil
	}
	switch {
	case p.Key == KeyBoth:
		return fieldErr("block_s", "a penalty box cannot decide on two keys at once (key: both); use key address or account")
	case p.SyncMs != 0:
		return fieldErr("block_s", "a penalty box cannot run on lagged shared state (sync_ms > 0)")
	}
	return nil
}

// Validate checks a penalty box's escalation levels: each after >= 1 and
// above the previous level's, each block_s > 0, as a *FieldError naming the
// level.
func (levels BlockLevels) Validate() error {
	if len(levels) > maxBlockLevels {
		return fieldErr("block_levels", "at most %d levels, got %d", maxBlockLevels, len(levels))
	}
	for i, l := range levels {
		path := fmt.Sprintf("block_levels[%d]", i)
		if l.After < 1 {
			return fieldErr(path+".after", "must be >= 1 (the key's earlier blocks from which the level applies), got %d", l.After)
		}
		if i > 0 && l.After <= levels[i-1].After {
			return fieldErr(path+".after", "must be above the previous level's after (%d), got %d", levels[i-1].After, l.After)
		}
		if err := validateBlockS(path+".block_s", l.BlockS); err != nil {
			return err
		}
		if l.BlockS == 0 {
			return fieldErr(path+".block_s", "must be > 0 (a level without a block would end the escalation; leave it out)")
		}
	}
	return nil
}

var penaltyBoxModifier = modifier{
	name: "penalty box (block_s)",
	uses: func(p Policy) bool { return p.BlockS > 0 },
	wrap: func(inner decider, p Policy) decider {
		b := &penaltyBox{wrapper: wrapper{inner}, blockNs: blockNs(p.BlockS)}
		for _, l := range p.levels() {
			b.levels = append(b.levels, penaltyLevel{after: l.After, blockNs: blockNs(l.BlockS)})
		}
		if rd, ok := inner.(RequestDecider); ok && p.Weighed() { // costs, count_if (penaltybox_weighed.go)
			return &weighedBox{penaltyBox: b, rd: rd}
		}
		return b
	},
}

// levels returns p's escalation levels (nil for none).
func (p Policy) levels() BlockLevels {
	if p.BlockLevels == nil {
		return nil
	}
	return *p.BlockLevels
}

type penaltyLevel struct{ after, blockNs int64 }

// penaltyBox is the decider of a policy with block_s > 0: it wraps the
// algorithm's decider for one key.
type penaltyBox struct {
	wrapper
	blockNs int64
	levels  []penaltyLevel
	// until is the end (exclusive) of the key's last block; blocked says
	// the block may still be running.
	until   int64
	blocked bool
	// started is set by a decision that started a block.
	started bool
	// blocks counts the blocks started; totalNs is their total length.
	blocks, totalNs int64
}

var (
	_ decider      = (*penaltyBox)(nil)
	_ blockCounter = (*penaltyBox)(nil)
	_ Shaper       = (*penaltyBox)(nil)
)

// length is the length of the key's next block, ns.
func (b *penaltyBox) length() int64 {
	n := b.blockNs
	for _, l := range b.levels {
		if b.blocks >= l.after {
			n = l.blockNs
		}
	}
	return n
}

// in reports whether t falls in the key's block, ending it when it has run
// out.
func (b *penaltyBox) in(t int64) bool {
	if b.blocked && t < b.until {
		return true
	}
	b.blocked = false
	return false
}

func (b *penaltyBox) Reset() {
	b.inner.Reset()
	b.until, b.blocked, b.started, b.blocks, b.totalNs = 0, false, false, 0, 0
}

// Allow rejects a request during the key's block without showing it to the
// limiter; otherwise the limiter decides, and its rejection starts a block.
func (b *penaltyBox) Allow(t int64) bool {
	b.started = false
	if b.in(t) {
		return false
	}
	if b.inner.Allow(t) {
		return true
	}
	b.start(t)
	return false
}

// start starts a block of the key at t, the time of a request the limiter
// rejected.
func (b *penaltyBox) start(t int64) {
	n := b.length()
	b.until, b.blocked, b.started = t+n, true, true
	b.blocks++
	b.totalNs += n
}

// AllowN is n calls of Allow: the admitted requests come first, the first
// rejection starts the block, and the rest fall in it.
func (b *penaltyBox) AllowN(t, n int64) int64 {
	var k int64
	before := b.blocks
	for k < n && b.Allow(t) {
		k++
	}
	b.started = b.blocks != before
	return k
}

// DelayNs is the inner decider's delay of the request last admitted (a
// shaping limiter's), 0 for one that only admits or rejects.
func (b *penaltyBox) DelayNs() int64 {
	if s, ok := b.inner.(Shaper); ok {
		return s.DelayNs()
	}
	return 0
}

// peek is false during a block, the limiter's peek otherwise.
func (b *penaltyBox) peek(t int64) bool {
	if b.blocked && t < b.until {
		return false
	}
	return b.inner.peek(t)
}

// charge commits a request to the limiter unless it falls in a block.
func (b *penaltyBox) charge(t int64) {
	if !b.in(t) {
		b.inner.charge(t)
	}
}

func (b *penaltyBox) cloneInto(dst decider) decider {
	c, _ := dst.(*penaltyBox)
	if c == nil {
		c = &penaltyBox{}
	}
	inner := c.inner
	*c = *b
	if inner != nil {
		c.inner = b.inner.cloneInto(inner)
	} else {
		c.inner = b.inner.cloneInto(nil)
	}
	return c
}

// stateSize adds the block's end and count (two words) while a block runs.
func (b *penaltyBox) stateSize(t int64) (bool, int64) {
	live, n := b.inner.stateSize(t)
	if b.blocked && t < b.until {
		return true, n + 2*wordBytes
	}
	return live, n
}

// blockCounter is a decider that blocks its key (the penalty box).
type blockCounter interface {
	// blockStats returns the blocks started since Reset and their total
	// length in ns up to horizonNs (the scenario's end).
	blockStats(horizonNs int64) (blocks, blockedNs int64)
	// blockStarted reports whether the last decision started a block, and
	// the block's start and end.
	blockStarted() (started bool, until int64)
}

func (b *penaltyBox) blockStats(horizonNs int64) (int64, int64) {
	if b.blocks == 0 {
		return 0, 0
	}
	return b.blocks, b.totalNs - max(0, b.until-horizonNs)
}

func (b *penaltyBox) blockStarted() (bool, int64) { return b.started, b.until }

// blockLevelsName is block_levels in labels: "block_levels=1:600,3:3600"
// (after:block_s of each level).
const blockLevelsName = "block_levels"

// AppendBlockLevels appends p's escalation levels to a label (nothing
// without a penalty box or levels).
func AppendBlockLevels(b []byte, p Policy) []byte {
	if p.BlockS <= 0 || p.BlockLevels == nil {
		return b
	}
	b = append(b, " "+blockLevelsName+"="...)
	for i, l := range *p.BlockLevels {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, l.After, 10)
		b = append(b, ':')
		b = strconv.AppendFloat(b, l.BlockS, 'f', -1, 64)
	}
	return b
}

// parseBlockLevels reads AppendBlockLevels' value.
func parseBlockLevels(v string) (*BlockLevels, error) {
	var ls BlockLevels
	for _, part := range strings.Split(v, ",") {
		a, s, ok := strings.Cut(part, ":")
		after, err1 := strconv.ParseInt(a, 10, 64)
		bs, err2 := strconv.ParseFloat(s, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("block_levels: %q is not after:block_s (e.g. 1:600,3:3600)", part)
		}
		ls = append(ls, BlockLevel{After: after, BlockS: bs})
	}
	return &ls, nil
}

// BlockStats returns the blocks d's penalty box started since d's last
// Reset and their total length in ns, a block that runs past horizonNs
// (the end of the replayed span) counting only up to it; ok is false when
// d has no penalty box. A log replay calls it after each key's requests.
func BlockStats(d interface{ Allow(int64) bool }, horizonNs int64) (blocks, blockedNs int64, ok bool) {
	bc, ok := d.(blockCounter)
	if !ok {
		return 0, 0, false
	}
	blocks, blockedNs = bc.blockStats(horizonNs)
	return blocks, blockedNs, true
}
