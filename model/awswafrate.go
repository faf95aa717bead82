package model

import (
	"fmt"
	"math"
	"slices"
)

// AWS WAF rate-based rules (docs/managed-rules.md), as AWS documents them:
//
//   - "Evaluation window – The amount of time, in seconds, that AWS WAF
//     should include in its request counts, looking back from the current
//     time … Valid settings are 60, 120, 300, and 600" and "WAF checks the
//     rate about every 10 seconds" (RateBasedStatement EvaluationWindowSec,
//     WAFv2 API reference);
//   - "Rate limit – … The lowest limit setting allowed is 10. When this
//     limit is breached, AWS WAF applies the rule action … to additional
//     requests" while the request "belongs to an aggregation instance whose
//     request count is currently over the rule's limit"
//     (waf-rule-statement-type-rate-based-high-level-settings.html,
//     waf-rule-statement-type-rate-based-request-limiting.html);
//   - "it's possible for requests to be coming in at too high a rate for up
//     to several minutes before AWS WAF detects and rate limits them.
//     Similarly, the request rate can be below the limit for a period of
//     time before AWS WAF detects the decrease … Usually, this delay is
//     below 30 seconds" (waf-rule-statement-type-rate-based-caveats.html).
//
// What the documentation leaves open is a parameter: lag_s, the time from a
// check to the moment its result acts, default DefaultAWSLagS (with a check
// every 10 s, a change is acted on 20 to 30 s later: "usually below 30
// seconds"). AWS also says it "estimates the current request rate using an
// algorithm that gives more importance to more recent requests" without
// saying which; the model counts the window's requests plainly.

// DefaultAWSLagS is aws_waf_rate's default detection lag, seconds.
const DefaultAWSLagS = 20

// AWS WAF's bounds (RateBasedStatement: Limit 10 to 2,000,000,000;
// EvaluationWindowSec 60, 120, 300, 600). maxAWSLagS is the model's.
const (
	minAWSLimit  = 10
	maxAWSLimit  = 2_000_000_000
	maxAWSLagS   = 600
	awsCheckNs   = 10 * secondNs // "WAF checks the rate about every 10 seconds"
	awsCheckSecs = 10
)

// AWSWindows are the evaluation windows AWS WAF accepts, seconds.
var AWSWindows = []int{60, 120, 300, 600}

// awsWAFRateAlgorithm is aws_waf_rate, an AWS WAF rate-based rule.
var awsWAFRateAlgorithm = Descriptor{
	Name: "aws_waf_rate", Title: "AWS WAF rate", Family: WindowFamily, ColorSlot: 10,
	Example:        "aws_waf_rate window_s=300 limit=1000",
	Params:         []string{"window_s", "limit"},
	Optional:       []string{"lag_s"},
	CountsRejected: true,
	Cost:           150,
	Validate: func(p Policy) error {
		switch {
		case p.Key == KeyBoth:
			return fieldErr("key", "aws_waf_rate cannot decide on two keys at once")
		case p.SyncMs != 0:
			return fieldErr("sync_ms", "aws_waf_rate cannot run on lagged shared state (its lag is lag_s)")
		}
		return validateAWSWAF(p)
	},
	Label: func(p Policy) string { return fmt.Sprintf("AWS WAF %d s", p.WindowS) },
	Why: func(p Policy) string {
		return fmt.Sprintf("cut while the key's requests in the %d s before the last check (every 10 s, acting %g s later), denied ones included, exceed %d",
			p.WindowS, awsLagS(p), p.Limit)
	},
	Bound: func(p Policy, a []float64) string { return windowBound(p, a, false) },
	blank: func() decider { return &awsWAFRateLimiter{} },
}

// validateAWSWAF checks window_s, limit and lag_s against AWS WAF's bounds.
func validateAWSWAF(p Policy) error {
	if !slices.Contains(AWSWindows, p.WindowS) {
		return fieldErr("window_s", "must be one of AWS WAF's evaluation windows 60, 120, 300, 600 seconds, got %d", p.WindowS)
	}
	if p.Limit < minAWSLimit || p.Limit > maxAWSLimit {
		return fieldErr("limit", "must be >= %d (AWS WAF's lowest rate limit) and <= %d requests, got %d", minAWSLimit, int64(maxAWSLimit), p.Limit)
	}
	if !(p.LagS >= 0) || p.LagS > maxAWSLagS || math.IsInf(p.LagS, 0) {
		return fieldErr("lag_s", "must be > 0 and <= %d seconds, got %v", maxAWSLagS, p.LagS)
	}
	return nil
}

// awsLagS is the policy's detection lag, s (its default when not given).
func awsLagS(p Policy) float64 {
	if p.LagS == 0 {
		return DefaultAWSLagS
	}
	return p.LagS
}

var _ decider = (*awsWAFRateLimiter)(nil)

// awsWAFRateLimiter is aws_waf_rate for one key. Every request, admitted
// or blocked, is counted in 10 s buckets [phase + b·10 s, phase + (b+1)·10 s);
// the check at c·10 s (after phase) counts the requests of the window
// before it, [c·10 s − window, c·10 s), and its result acts from c·10 s +
// lag until the next check's result does. A request at t is blocked iff
// the last check acting at t, c = ⌊(t − lag − phase)/10 s⌋, counted more
// than limit requests.
type awsWAFRateLimiter struct {
	limit, windowBuckets, lagNs int64
	phaseNs                     int64   // checks at phaseNs + c·10 s, 0 <= phaseNs < 10 s
	ring                        []int64 // bucket b's count at ring[b mod len]
	last                        int64   // the latest bucket counted into
	fresh                       bool
	check                       int64 // the check whose result over is
	checked, over               bool
	blocks                      awsBlocks // the blocks (managed_blocks.go)
}

func (d *awsWAFRateLimiter) configure(p Policy) {
	lagNs := int64(math.Round(awsLagS(p) * 1e9))
	d.limit, d.windowBuckets, d.lagNs, d.phaseNs = p.Limit, int64(p.WindowS/awsCheckSecs), lagNs, 0
	// A check needs the buckets from window + lag + 10 s back (see bucket).
	n := int(d.windowBuckets + (lagNs+awsCheckNs-1)/awsCheckNs + 2)
	if cap(d.ring) >= n {
		d.ring = d.ring[:n]
	} else {
		d.ring = make([]int64, n)
	}
	d.Reset()
}

// Reset forgets the key.
func (d *awsWAFRateLimiter) Reset() { d.fresh, d.checked, d.blocks = true, false, awsBlocks{} }

// atOrigin puts the checks at Unix multiples of 10 s (NewDeciderAt).
func (d *awsWAFRateLimiter) atOrigin(originNs int64) { d.phaseNs = floorMod(-originNs, awsCheckNs) }

// bucketOf is the index of t's 10 s bucket.
func (d *awsWAFRateLimiter) bucketOf(t int64) int64 { return floorDiv(t-d.phaseNs, awsCheckNs) }

// bucket is bucket b's count. The ring holds the len(ring) buckets up to
// last; a check acting at t reads buckets from ⌊(t − lag)/10 s⌋ − window/10
// on, no older than last − (window/10 + ⌈lag/10 s⌉ + 1).
func (d *awsWAFRateLimiter) bucket(b int64) int64 {
	if d.fresh || b > d.last || b <= d.last-int64(len(d.ring)) {
		return 0
	}
	return d.ring[floorMod(b, int64(len(d.ring)))]
}

// count adds n requests at t.
func (d *awsWAFRateLimiter) count(t, n int64) {
	b := d.bucketOf(t)
	nb := int64(len(d.ring))
	switch {
	case d.fresh:
		clear(d.ring)
		d.fresh, d.last = false, b
	case b > d.last:
		for j := d.last + 1; j <= b && j <= d.last+nb; j++ {
			d.ring[floorMod(j, nb)] = 0
		}
		d.last = b
	}
	d.ring[floorMod(b, nb)] += n
}

// blocked reports whether the check acting at t found the key over its
// limit.
func (d *awsWAFRateLimiter) blocked(t int64) bool {
	c := floorDiv(t-d.lagNs-d.phaseNs, awsCheckNs)
	if d.checked && c == d.check {
		return d.over // the buckets before check c are complete once it acts
	}
	var sum int64
	for b := c - d.windowBuckets; b < c; b++ {
		sum += d.bucket(b)
	}
	d.check, d.checked, d.over = c, true, sum > d.limit
	return d.over
}

// Allow reports whether a request at t is admitted, and counts it.
func (d *awsWAFRateLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

// AllowN counts n requests at t and admits all of them or none: the check
// acting at t counted requests before t only.
func (d *awsWAFRateLimiter) AllowN(t, n int64) int64 {
	if n <= 0 {
		return 0
	}
	blocked := d.blocked(t)
	if !d.blocks.accounted || d.check != d.blocks.acted {
		d.account(&d.blocks, d.check) // the check acting at t (blocked)
	}
	d.count(t, n)
	if blocked {
		return 0
	}
	return n
}

// peek reports whether a request at t would be admitted (the decision does
// not depend on the request).
func (d *awsWAFRateLimiter) peek(t int64) bool { return !d.blocked(t) }

// charge counts one request at t.
func (d *awsWAFRateLimiter) charge(t int64) {
	d.account(&d.blocks, d.actingAt(t))
	d.count(t, 1)
}

func (d *awsWAFRateLimiter) cloneInto(dst decider) decider {
	c, _ := dst.(*awsWAFRateLimiter)
	if c == nil {
		c = &awsWAFRateLimiter{}
	}
	ring := append(c.ring[:0], d.ring...)
	spans := append(c.blocks.spans[:0], d.blocks.spans...)
	*c = *d
	c.ring, c.blocks.spans = ring, spans
	return c
}

// stateSize: the key's buckets matter until the last check that counts its
// latest bucket has stopped acting.
func (d *awsWAFRateLimiter) stateSize(t int64) (bool, int64) {
	if d.fresh {
		return false, 0
	}
	end := d.phaseNs + (d.last+d.windowBuckets+1)*awsCheckNs + d.lagNs
	return t < end, (int64(len(d.ring)) + 2) * wordBytes
}

// RetryAfter of aws_waf_rate: until a check finds the key's window at or
// below the limit and its lag has passed (found by probing: with no request
// meanwhile, a blocked key's count only falls).
func (d *awsWAFRateLimiter) RetryAfter(t int64) int64 { return retryAfterSearch(d, t, nil) }
