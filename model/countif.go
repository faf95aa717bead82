package model

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Conditional counting (count_if, docs/costs.md): only requests whose
// response matches count against the limit, as express-rate-limit's
// skipSuccessfulRequests or a failed-login throttle counts. The decision is
// still made before the response, on the key's state:
//   - a matching request is decided and charged as without count_if (with
//     its cost, when the traffic has costs);
//   - any other request is admitted iff the limiter would admit it now
//     (peek, at its cost), and is not charged.
//
// So every request of a key over the limit is rejected, matching or not,
// while requests that do not match never bring a key nearer the limit.

// Status codes count_if can name.
const (
	MinStatus = 100
	MaxStatus = 599
)

// statusSet is a set of response statuses, bit s−MinStatus.
type statusSet [8]uint64

func (s *statusSet) add(st int) { i := st - MinStatus; s[i/64] |= 1 << (i % 64) }

// has reports whether st is in the set (0, unknown, never is).
func (s *statusSet) has(st int) bool {
	i := st - MinStatus
	return i >= 0 && st <= MaxStatus && s[i/64]&(1<<(i%64)) != 0
}

// CountIfOf returns the canonical form of a count_if (Policy.CountIf): the
// statuses listed and those in [min, max] (both 0: none), as sorted runs,
// e.g. "401,403" or "500-599". It reports a status out of 100-599 or an
// empty set.
func CountIfOf(statuses []int, lo, hi int) (string, error) {
	var s statusSet
	for _, st := range statuses {
		if st < MinStatus || st > MaxStatus {
			return "", fmt.Errorf("status %d is not an HTTP status (%d-%d)", st, MinStatus, MaxStatus)
		}
		s.add(st)
	}
	if lo != 0 || hi != 0 {
		if lo == 0 {
			lo = MinStatus
		}
		if hi == 0 {
			hi = MaxStatus
		}
		if lo < MinStatus || hi > MaxStatus || lo > hi {
			return "", fmt.Errorf("status range %d-%d is not within %d-%d", lo, hi, MinStatus, MaxStatus)
		}
		for st := lo; st <= hi; st++ {
			s.add(st)
		}
	}
	return s.String(), nil
}

// String writes the set as sorted runs ("401,403", "500-599"); "" when
// empty.
func (s *statusSet) String() string {
	var b strings.Builder
	for st := MinStatus; st <= MaxStatus; st++ {
		if !s.has(st) {
			continue
		}
		end := st
		for end+1 <= MaxStatus && s.has(end+1) {
			end++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(st))
		if end > st {
			b.WriteString("-" + strconv.Itoa(end))
		}
		st = end
	}
	return b.String()
}

// parseStatusSet reads a canonical count_if.
func parseStatusSet(text string) (statusSet, error) {
	var s statusSet
	for part := range strings.SplitSeq(text, ",") {
		a, b, isRange := strings.Cut(part, "-")
		lo, err1 := strconv.Atoi(a)
		hi := lo
		var err2 error
		if isRange {
			hi, err2 = strconv.Atoi(b)
		}
		if err1 != nil || err2 != nil || lo < MinStatus || hi > MaxStatus || lo > hi {
			return s, fmt.Errorf("%q is not a status or range of statuses within %d-%d", part, MinStatus, MaxStatus)
		}
		for st := lo; st <= hi; st++ {
			s.add(st)
		}
	}
	return s, nil
}

// Len is the number of statuses in the set.
func (s *statusSet) Len() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// CountIfStatuses returns the statuses of a canonical count_if, ascending.
func CountIfStatuses(countIf string) ([]int, error) {
	s, err := parseStatusSet(countIf)
	if err != nil {
		return nil, err
	}
	var out []int
	for st := MinStatus; st <= MaxStatus; st++ {
		if s.has(st) {
			out = append(out, st)
		}
	}
	return out, nil
}

var countIfModifier = modifier{
	name: "count_if",
	uses: func(p Policy) bool { return p.CountIf != "" },
	validate: func(p Policy) error {
		if _, err := parseStatusSet(p.CountIf); err != nil {
			return fieldErr("count_if", "%v", err)
		}
		return nil
	},
	wrap: func(inner decider, p Policy) decider {
		s, _ := parseStatusSet(p.CountIf) // Validate
		sp, _ := inner.(spender)
		d := &countIfDecider{wrapper: wrapper{inner}, match: s, sp: sp}
		if _, ok := inner.(blockCounter); ok { // a managed rule's own blocks
			return &countIfBlocks{d}
		}
		return d
	},
}

// countIfBlocks is count_if over a limiter that blocks its keys by its own
// logic (a managed rule's mitigation or penalty box): the limiter's blocks
// are the policy's.
type countIfBlocks struct{ *countIfDecider }

var _ blockCounter = (*countIfBlocks)(nil)

func (d *countIfBlocks) blockStats(horizonNs int64) (int64, int64) {
	return d.inner.(blockCounter).blockStats(horizonNs)
}

func (d *countIfBlocks) blockStarted() (bool, int64) { return d.inner.(blockCounter).blockStarted() }

func (d *countIfBlocks) blockSpans(horizonNs int64) []span {
	if l, ok := d.inner.(blockLister); ok {
		return l.blockSpans(horizonNs)
	}
	return nil
}

func (d *countIfBlocks) cloneInto(dst decider) decider {
	var into decider
	if c, ok := dst.(*countIfBlocks); ok {
		into = c.countIfDecider
	}
	return &countIfBlocks{d.countIfDecider.cloneInto(into).(*countIfDecider)}
}

// countIfDecider is the count_if modifier's decider.
type countIfDecider struct {
	wrapper
	match statusSet
	sp    spender // the cost modifier's decider when the traffic has costs
}

var (
	_ decider        = (*countIfDecider)(nil)
	_ RequestDecider = (*countIfDecider)(nil)
)

// AllowRequest charges a matching request as the bare policy would, and
// admits any other iff one would be admitted now, charging nothing.
func (d *countIfDecider) AllowRequest(t, cost int64, status int) bool {
	cost = max(cost, 1)
	if d.match.has(status) {
		if d.sp != nil {
			return d.sp.spend(t, cost)
		}
		return d.inner.Allow(t)
	}
	if d.sp != nil {
		return d.sp.fits(t, cost)
	}
	return d.inner.peek(t)
}

// fitsRequest reports whether AllowRequest would admit the request now: a
// request is admitted iff one would be, matching or not.
func (d *countIfDecider) fitsRequest(t, cost int64, _ int) bool {
	if d.sp != nil {
		return d.sp.fits(t, max(cost, 1))
	}
	return d.inner.peek(t)
}

// Allow decides a request whose response is unknown: it does not match.
func (d *countIfDecider) Allow(t int64) bool { return d.AllowRequest(t, 1, 0) }

func (d *countIfDecider) AllowN(t, n int64) int64 {
	var k int64
	for range n {
		if d.Allow(t) {
			k++
		}
	}
	return k
}

func (d *countIfDecider) cloneInto(dst decider) decider {
	c, _ := dst.(*countIfDecider)
	var inner decider
	if c != nil {
		inner = c.inner
	}
	inner = d.inner.cloneInto(inner)
	sp, _ := inner.(spender)
	return &countIfDecider{wrapper: wrapper{inner}, match: d.match, sp: sp}
}

// validateWeighed refuses what the weighed deciders do not model yet: a
// request decided on two keys at once or on lagged shared state.
func validateWeighed(p Policy) error {
	if !p.Weighed() {
		return nil
	}
	if p.Key == KeyBoth {
		return fieldErr("key", "costs and count_if decide on one key per request; key both is not modelled with them")
	}
	if p.SyncMs != 0 {
		return fieldErr("sync_ms", "costs and count_if are not modelled on lagged shared state (sync_ms > 0)")
	}
	return nil
}
