package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// RetryMode is what a client does when a request is rejected.
type RetryMode uint8

const (
	// RetryNone gives the request up (the default: every figure without
	// reactions).
	RetryNone RetryMode = iota
	// RetryImmediate sends it again at once (or after the Retry-After, when
	// honoured).
	RetryImmediate
	// RetryBackoff sends it again after an exponential back-off with jitter.
	RetryBackoff
)

var retryModeNames = []string{"none", "immediate", "backoff"}

func (m RetryMode) String() string {
	if int(m) < len(retryModeNames) {
		return retryModeNames[m]
	}
	return fmt.Sprintf("RetryMode(%d)", uint8(m))
}

// Jitter is how a back-off spreads its sleeps, as in the AWS Architecture
// Blog's "Exponential Backoff And Jitter": with ceiling = min(cap, base·2^k)
// before retry k+1 (k = 0, 1, …),
//
//	none:         sleep = ceiling
//	full:         sleep = uniform(0, ceiling)
//	equal:        sleep = ceiling/2 + uniform(0, ceiling/2)
//	decorrelated: sleep = min(cap, uniform(base, 3·previous sleep)), the
//	              previous sleep of a request's first retry being base.
type Jitter uint8

const (
	JitterNone Jitter = iota
	JitterFull
	JitterEqual
	JitterDecorrelated
)

var jitterNames = []string{"none", "full", "equal", "decorrelated"}

func (j Jitter) String() string {
	if int(j) < len(jitterNames) {
		return jitterNames[j]
	}
	return fmt.Sprintf("Jitter(%d)", uint8(j))
}

// RetryBudget bounds a client's retries as Finagle's RetryBudget does: each
// request the client means to send deposits Ratio of a retry, each retry
// withdraws one, both for budgetTTLS seconds (in whole-second slices), and
// MinPerS·budgetTTLS retries are always in reserve. A retry is made only if
// the balance holds one.
type RetryBudget struct {
	Ratio   float64 // retries per request, >= 0
	MinPerS float64 // retries per second always allowed, >= 0
}

// budgetTTLS is the window of a retry budget (Finagle's default TTL).
const budgetTTLS = 10

// throttleWindowS is the window of adaptive throttling (the SRE book's
// "trailing two minutes").
const throttleWindowS = 120

// Reaction is how a client answers the limiter (docs/retries.md). The zero
// value does not react: a rejected request is lost.
type Reaction struct {
	Retry      RetryMode
	MaxRetries int     // retries of one request, >= 1 when retrying
	BaseS      float64 // backoff: first ceiling, seconds
	CapS       float64 // backoff: largest sleep, seconds (0: no cap)
	Jitter     Jitter  // backoff only
	// HonourRetryAfter waits at least the limiter's Retry-After before
	// retrying; a request the limiter would never admit is given up.
	HonourRetryAfter bool
	Budget           *RetryBudget // nil: every retry is allowed
	// ThrottleK > 0 is client-side adaptive throttling (Google SRE book,
	// "Handling Overload"): before sending, the client rejects a request
	// itself with probability max(0, (requests − K·accepts)/(requests + 1))
	// over the trailing two minutes; such a request is given up.
	ThrottleK float64
}

// Reacts reports whether the reaction ever changes what the client sends.
func (r *Reaction) Reacts() bool { return r.Retry != RetryNone || r.ThrottleK > 0 }

// maxRetries bounds max_retries; maxBackoffS bounds base_s and cap_s (a day).
const (
	maxRetries  = 100
	maxBackoffS = 86400
)

// validate checks the reaction of client path p.
func (r *Reaction) validate(p string) error {
	p += ".on_reject"
	if r.Retry > RetryBackoff {
		return fieldErr(p+".retry", "unknown retry mode %d (none | immediate | backoff)", r.Retry)
	}
	if r.Retry != RetryNone && (r.MaxRetries < 1 || r.MaxRetries > maxRetries) {
		return fieldErr(p+".max_retries", "must be a whole number between 1 and %d, got %d", maxRetries, r.MaxRetries)
	}
	if r.Retry == RetryBackoff {
		if !(r.BaseS > 0 && r.BaseS <= maxBackoffS) {
			return fieldErr(p+".base_s", "must be a number of seconds > 0 and <= %d, got %v", maxBackoffS, r.BaseS)
		}
		if r.CapS != 0 && !(r.CapS >= r.BaseS && r.CapS <= maxBackoffS) {
			return fieldErr(p+".cap_s", "must be >= base_s (%v) and <= %d seconds, got %v", r.BaseS, maxBackoffS, r.CapS)
		}
	} else {
		switch {
		case r.BaseS != 0:
			return fieldErr(p+".base_s", "only retry: backoff takes base_s (retry is %s)", r.Retry)
		case r.CapS != 0:
			return fieldErr(p+".cap_s", "only retry: backoff takes cap_s (retry is %s)", r.Retry)
		case r.Jitter != JitterNone:
			return fieldErr(p+".jitter", "only retry: backoff takes jitter (retry is %s)", r.Retry)
		}
	}
	if r.Jitter > JitterDecorrelated {
		return fieldErr(p+".jitter", "unknown jitter %d (none | full | equal | decorrelated)", r.Jitter)
	}
	if b := r.Budget; b != nil {
		if !(b.Ratio >= 0 && b.Ratio <= 1e6) {
			return fieldErr(p+".budget.ratio", "must be a number >= 0 of retries per request, got %v", b.Ratio)
		}
		if !(b.MinPerS >= 0 && b.MinPerS <= 1e9) {
			return fieldErr(p+".budget.min_per_s", "must be a number >= 0 of retries per second, got %v", b.MinPerS)
		}
		if r.Retry == RetryNone {
			return fieldErr(p+".budget", "a retry budget needs retry: immediate or backoff")
		}
	}
	if r.HonourRetryAfter && r.Retry == RetryNone {
		return fieldErr(p+".honour_retry_after", "needs retry: immediate or backoff")
	}
	if !(r.ThrottleK == 0 || r.ThrottleK >= 1 && r.ThrottleK <= 1e6) {
		return fieldErr(strings.TrimSuffix(p, ".on_reject")+".throttle.k", "must be a number >= 1 (the SRE book suggests 2), got %v", r.ThrottleK)
	}
	return nil
}

// Reacts reports whether some client of the scenario reacts to rejections.
func (s *Scenario) Reacts() bool {
	for i := range s.Clients {
		if s.Clients[i].React.Reacts() {
			return true
		}
	}
	return false
}

// validateReactions checks the clients' reactions, and that a scenario
// whose clients react has one key per client and at most MaxEventRequests
// requests (every request is an event, also with fluid arrivals).
func (s *Scenario) validateReactions() error {
	var expected float64
	for i := range s.Clients {
		c := &s.Clients[i]
		p := fmt.Sprintf("clients[%d]", i)
		if err := c.React.validate(p); err != nil {
			return err
		}
		if c.React.Reacts() && !c.Keys.isDefault() {
			return fieldErr(p+".on_reject", "clients that react are simulated with one key per client: give no addresses, accounts or pools")
		}
		for _, g := range c.Segments {
			expected += float64(g.T1-g.T0) * g.Rate
		}
	}
	if s.Reacts() && expected > MaxEventRequests {
		return fieldErr("clients", "%.0f requests expected; clients that react allow at most %d", expected, MaxEventRequests)
	}
	return nil
}

// writeYAML appends the reaction in canonical form (nothing when the client
// does not react, so that existing scenario hashes stay).
func (r *Reaction) writeYAML(b *strings.Builder) {
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if r.Retry != RetryNone {
		fmt.Fprintf(b, "    on_reject: {retry: %s, max_retries: %d", r.Retry, r.MaxRetries)
		if r.Retry == RetryBackoff {
			fmt.Fprintf(b, ", base_s: %s", num(r.BaseS))
			if r.CapS != 0 {
				fmt.Fprintf(b, ", cap_s: %s", num(r.CapS))
			}
			fmt.Fprintf(b, ", jitter: %s", r.Jitter)
		}
		if r.HonourRetryAfter {
			b.WriteString(", honour_retry_after: true")
		}
		if r.Budget != nil {
			fmt.Fprintf(b, ", budget: {ratio: %s, min_per_s: %s}", num(r.Budget.Ratio), num(r.Budget.MinPerS))
		}
		b.WriteString("}\n")
	}
	if r.ThrottleK > 0 {
		fmt.Fprintf(b, "    throttle: {k: %s}\n", num(r.ThrottleK))
	}
}

// backoffS is the sleep before retry k+1 (k >= 0) of a request whose
// previous sleep was prevS (decorrelated jitter), with u a uniform draw in
// [0, 1) (not drawn for JitterNone).
func (r *Reaction) backoffS(k int, prevS float64, u func() float64) float64 {
	capS := r.CapS
	if capS == 0 {
		capS = math.Inf(1)
	}
	var pow float64
	if k < 63 {
		pow = float64(uint64(1) << k) // Exp2(k) exactly, without its cost
	} else {
		pow = math.Exp2(float64(k))
	}
	ceiling := min(capS, r.BaseS*pow)
	switch r.Jitter {
	case JitterFull:
		return u() * ceiling
	case JitterEqual:
		return ceiling/2 + u()*ceiling/2
	case JitterDecorrelated:
		if prevS == 0 {
			prevS = r.BaseS
		}
		return min(capS, r.BaseS+u()*(3*prevS-r.BaseS))
	}
	return ceiling
}
