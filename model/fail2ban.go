package model

import (
	"fmt"
	"math/bits"
)

// fail2ban 1.0.2's ban decision (docs/penalty-box.md#fail2ban), on the
// requests that count as failures (all of a key's requests, or those
// count_if selects). Parameters: limit is maxretry (failures), window_s is
// findtime (s), mitigation_timeout_s is bantime (s).
//
// fail2ban keeps one ticket per address: its first and last failure times
// and a retry count. A failure at t (FailManager.addFailure,
// FailTicket.adjustTime and inc):
//   - with no ticket, starts one: first = last = t, retry = 1;
//   - otherwise, when t is later than last and first < t − findtime, scales
//     retry to the rate over the ticket's span, retry = round(retry ·
//     findtime / (t − first)) (half to even), and sets first = t −
//     findtime; then last = t and retry += 1;
//   - when retry >= maxretry, bans the address over [t, t + bantime) and
//     deletes its ticket (FailManager.toBan), so counting starts afresh
//     after the ban.
//
// The failure that reaches maxretry is admitted (it was served before
// fail2ban read it) and starts the ban; a banned address's requests are
// rejected and not counted (the firewall drops them). A ticket whose last
// failure is at least findtime old is forgotten: fail2ban deletes it at its
// next clean-up (FailManager.cleanup, at most every 5 s of wall clock, on a
// ban or every 100 log lines), the model at once, at the address's next
// failure. On a log quiet enough that no clean-up runs in between, fail2ban
// rescales the old ticket instead (the two agree once the rescaled count
// rounds to 0, after twice retry · findtime). The model rounds the exact
// quotient; fail2ban computes it in floating-point seconds, which can turn
// an exact tie (·5) either way.

// maxFail2banRetry bounds maxretry (a ticket's retry is an int64).
const maxFail2banRetry = 1 << 31

// fail2banAlgorithm is fail2ban, fail2ban 1.0.2's jail.
var fail2banAlgorithm = Descriptor{
	Name: "fail2ban", Title: "fail2ban", Family: WindowFamily, ColorSlot: -1, Color: "#6f4e7c",
	Example: "fail2ban window_s=600 limit=5 mitigation_timeout_s=600",
	Params:  []string{"window_s", "limit", "mitigation_timeout_s"},
	Validate: func(p Policy) error {
		switch {
		case p.WindowS <= 0 || p.WindowS > maxWindowS:
			return fieldErr("window_s", "fail2ban's findtime must be > 0 and <= %d seconds, got %d", maxWindowS, p.WindowS)
		case p.Limit < 1 || p.Limit > maxFail2banRetry:
			return fieldErr("limit", "fail2ban's maxretry must be from 1 to %d failures, got %d", int64(maxFail2banRetry), p.Limit)
		case p.MitigationTimeoutS <= 0 || p.MitigationTimeoutS > maxBlockS:
			return fieldErr("mitigation_timeout_s", "fail2ban's bantime must be > 0 and <= %d seconds, got %d", maxBlockS, p.MitigationTimeoutS)
		case p.Key == KeyBoth:
			return fieldErr("key", "fail2ban bans one key (an address); use key address or account")
		case p.SyncMs != 0:
			return fieldErr("sync_ms", "fail2ban cannot run on lagged shared state")
		}
		return nil
	},
	Label: func(p Policy) string {
		return fmt.Sprintf("fail2ban %d in %d s, ban %d s", p.Limit, p.WindowS, p.MitigationTimeoutS)
	},
	Why: func(p Policy) string {
		return fmt.Sprintf("banned for %d s from the failure that brings the key's count to %d, counted over %d s as fail2ban does (a count spanning more than that scaled to its rate)",
			p.MitigationTimeoutS, p.Limit, p.WindowS)
	},
	blank: func() decider { return &fail2banLimiter{} },
}

var (
	_ decider      = (*fail2banLimiter)(nil)
	_ blockCounter = (*fail2banLimiter)(nil)
)

// fail2banLimiter is fail2ban for one key (address): its ticket and ban.
type fail2banLimiter struct {
	findNs, banNs, maxRetry int64
	// ticket says the key has a ticket: first and last failure times, ns,
	// and its retry count.
	ticket      bool
	first, last int64
	retry       int64
	// banned says a ban may still run, until its end (exclusive).
	banned bool
	until  int64
	ruleBlocks
}

func (d *fail2banLimiter) configure(p Policy) {
	d.findNs, d.banNs, d.maxRetry = int64(p.WindowS)*secondNs, int64(p.MitigationTimeoutS)*secondNs, p.Limit
	d.Reset()
}

// Reset forgets the key.
func (d *fail2banLimiter) Reset() {
	d.ticket, d.banned, d.retry = false, false, 0
	d.resetBlocks()
}

// in reports whether t falls in the key's ban.
func (d *fail2banLimiter) in(t int64) bool {
	if d.banned && t < d.until {
		return true
	}
	d.banned = false
	return false
}

// Allow decides a failure at t: rejected uncounted during a ban, otherwise
// admitted and counted, the one that reaches maxretry starting a ban.
func (d *fail2banLimiter) Allow(t int64) bool {
	d.started = false
	if d.in(t) {
		return false
	}
	d.fail(t)
	return true
}

// AllowN is n calls of Allow.
func (d *fail2banLimiter) AllowN(t, n int64) int64 {
	var k int64
	started := false
	for range n {
		if d.Allow(t) {
			k++
		}
		started = started || d.started
	}
	d.started = started
	return k
}

// fail counts a failure at t (not during a ban) on the key's ticket.
func (d *fail2banLimiter) fail(t int64) {
	switch {
	case !d.ticket || t-d.last >= d.findNs: // none, or forgotten by the clean-up
		d.ticket, d.first, d.last, d.retry = true, t, t, 1
	case t > d.last:
		if d.first < t-d.findNs {
			d.retry = roundHalfEven(d.retry, d.findNs, t-d.first)
			d.first = t - d.findNs
		}
		d.last = t
		d.retry++
	default: // at the last failure's time: no rescale
		d.retry++
	}
	if d.retry >= d.maxRetry {
		d.ticket, d.banned, d.until = false, true, t+d.banNs
		d.startBlock(t, d.until)
	}
}

// roundHalfEven is round(a·b/c) with ties to even, for a, b >= 0 and c >
// b (Python's round of fail2ban's rescale).
func roundHalfEven(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, r := bits.Div64(hi, lo, uint64(c)) // a·b/c < a here (c > b), so hi < c
	if twice := 2 * r; twice > uint64(c) || (twice == uint64(c) && q%2 == 1) {
		q++
	}
	return int64(q)
}

// peek reports whether a request at t would be admitted: iff the key is not
// banned.
func (d *fail2banLimiter) peek(t int64) bool { return !(d.banned && t < d.until) }

// charge counts a failure at t unless the key is banned.
func (d *fail2banLimiter) charge(t int64) {
	if !d.in(t) {
		d.fail(t)
	}
}

func (d *fail2banLimiter) cloneInto(dst decider) decider {
	c, _ := dst.(*fail2banLimiter)
	if c == nil {
		c = &fail2banLimiter{}
	}
	*c = *d
	return c
}

// stateSize: the ticket (first, last, retry) while it is within findtime of
// its last failure, and the ban's end while it runs.
func (d *fail2banLimiter) stateSize(t int64) (bool, int64) {
	live := (d.ticket && t-d.last < d.findNs) || (d.banned && t < d.until)
	return live, 4 * wordBytes
}

// RetryAfter of fail2ban: the ban's end (0 outside a ban).
func (d *fail2banLimiter) RetryAfter(t int64) int64 {
	if d.banned && t < d.until {
		return d.until - t
	}
	return 0
}
