package model

import (
	"fmt"
	"math/bits"
	"slices"
)

// Cloudflare rate limiting rules (docs/managed-rules.md), as Cloudflare
// documents them:
//
//   - the rule's parameters: "Period: The period of time to consider (in
//     seconds) when evaluating the rate. Requests per period: The number of
//     requests over the period of time that will trigger the rate limiting
//     rule. Duration (or mitigation timeout): Once the rate is reached, the
//     rate limiting rule blocks further requests for the period of time
//     defined in this field. … By default, Cloudflare will apply the rule
//     action for the configured duration (or mitigation timeout),
//     regardless of the request rate during this period. Some Enterprise
//     customers can configure the rule to throttle requests over the
//     maximum rate" (developers.cloudflare.com/waf/rate-limiting-rules/);
//     the API fields period, requests_per_period, mitigation_timeout (0:
//     throttle) and their allowed values (…/rate-limiting-rules/parameters/);
//   - separate counters per value of the rule's characteristics
//     (…/rate-limiting-rules/request-rate/), whose example (1 request per
//     10 s) admits the first request and blocks the second;
//   - the count: Cloudflare's sliding window approximation, "rate =
//     prev·((period − elapsed)/period) + curr" over windows on the clock
//     (blog.cloudflare.com/counting-things-a-lot-of-different-things/),
//     the estimate of sliding_counter without its rounding down.
//
// What the documentation leaves open is a parameter: counts, whether the
// requests the rule blocks are counted (all) or not (admitted).

// Cloudflare's allowed values (rate limiting parameters, API): period and
// mitigation_timeout in seconds. Plans allow subsets.
var (
	CloudflarePeriods  = []int{10, 60, 120, 300, 600, 3600}
	CloudflareTimeouts = []int{0, 10, 60, 120, 300, 600, 3600, 86400}
)

// maxCloudflareRequests bounds requests_per_period (the model's bound).
const maxCloudflareRequests = 1_000_000_000

// cloudflareRuleAlgorithm is cloudflare_rule, a Cloudflare rate limiting
// rule.
var cloudflareRuleAlgorithm = Descriptor{
	Name: "cloudflare_rule", Title: "Cloudflare rule", Family: WindowFamily, ColorSlot: 11,
	Example: "cloudflare_rule period_s=60 counts=all requests_per_period=100 mitigation_timeout_s=600",
	Params:  []string{"period_s", "requests_per_period", "mitigation_timeout_s", "counts"},
	Cost:    150,
	Validate: func(p Policy) error {
		switch {
		case p.Key == KeyBoth:
			return fieldErr("key", "cloudflare_rule cannot decide on two keys at once")
		case p.SyncMs != 0:
			return fieldErr("sync_ms", "cloudflare_rule cannot run on lagged shared state (Cloudflare's counters are per data centre)")
		}
		return validateCloudflare(p)
	},
	Label: func(p Policy) string {
		if p.MitigationTimeoutS == 0 {
			return fmt.Sprintf("Cloudflare %g s throttle (%s)", p.PeriodS, p.Counts)
		}
		return fmt.Sprintf("Cloudflare %g s, block %d s (%s)", p.PeriodS, p.MitigationTimeoutS, p.Counts)
	},
	Why: func(p Policy) string {
		what := "cut while its rate stays over"
		if p.MitigationTimeoutS > 0 {
			what = fmt.Sprintf("then the key is blocked for %d s", p.MitigationTimeoutS)
		}
		counted := "blocked requests included"
		if p.Counts == HAProxyCountsAdmitted {
			counted = "admitted requests only"
		}
		return fmt.Sprintf("cut when the key's estimated requests in %g s (the previous period weighted, %s) exceed %d; %s",
			p.PeriodS, counted, p.RequestsPerPeriod, what)
	},
	Bound: func(p Policy, a []float64) string {
		return windowBound(Policy{WindowS: int(p.PeriodS), Limit: p.RequestsPerPeriod}, a, false)
	},
	blank: func() decider { return &cloudflareRuleLimiter{} },
}

// validateCloudflare checks the parameters against Cloudflare's allowed
// values.
func validateCloudflare(p Policy) error {
	if p.PeriodS != float64(int(p.PeriodS)) || !slices.Contains(CloudflarePeriods, int(p.PeriodS)) {
		return fieldErr("period_s", "must be one of Cloudflare's periods 10, 60, 120, 300, 600, 3600 seconds, got %v", p.PeriodS)
	}
	if p.RequestsPerPeriod < 1 || p.RequestsPerPeriod > maxCloudflareRequests {
		return fieldErr("requests_per_period", "must be >= 1 and <= %d requests, got %d", maxCloudflareRequests, p.RequestsPerPeriod)
	}
	if !slices.Contains(CloudflareTimeouts, p.MitigationTimeoutS) {
		return fieldErr("mitigation_timeout_s", "must be one of Cloudflare's durations 0 (throttle), 10, 60, 120, 300, 600, 3600, 86400 seconds, got %d", p.MitigationTimeoutS)
	}
	if p.Counts > HAProxyCountsAdmitted {
		return fieldErr("counts", "must be all or admitted, got %d", p.Counts)
	}
	return nil
}

var _ decider = (*cloudflareRuleLimiter)(nil)

// cloudflareRuleLimiter is cloudflare_rule for one key: sliding_counter's
// windows [phase + k·P, phase + (k+1)·P) (on the Unix clock through
// NewDeciderAt), prev and curr requests counted in the previous and the
// current one. A request at t, elapsed e = t − start into its window, is
// over when its rate counting itself exceeds the limit N:
// prev·(P − e)/P + curr + 1 > N, in exact integer arithmetic. An over
// request is blocked and, with a mitigation timeout T > 0, blocks the key
// for [t, t + T) whatever its rate; with T = 0 only over requests are
// blocked. With counts all every request is counted in curr, with counts
// admitted only the admitted ones.
type cloudflareRuleLimiter struct {
	limit, sizeNs, timeoutNs, phaseNs int64
	countAll                          bool
	fresh                             bool
	start, prev, curr                 int64
	blocking                          bool
	until                             int64 // the block's end, ns (when blocking)
	ruleBlocks                              // the mitigation timeouts (managed_blocks.go)
}

func (d *cloudflareRuleLimiter) configure(p Policy) {
	d.limit, d.sizeNs = p.RequestsPerPeriod, int64(p.PeriodS)*secondNs
	d.timeoutNs, d.phaseNs = int64(p.MitigationTimeoutS)*secondNs, 0
	d.countAll = p.Counts == HAProxyCountsAll
	d.Reset()
}

// Reset forgets the key.
func (d *cloudflareRuleLimiter) Reset() { d.fresh, d.blocking = true, false; d.resetBlocks() }

// atOrigin puts the windows at Unix multiples of the period (NewDeciderAt).
func (d *cloudflareRuleLimiter) atOrigin(originNs int64) { d.phaseNs = floorMod(-originNs, d.sizeNs) }

// advance moves the current window to t's (counterWindow).
func (d *cloudflareRuleLimiter) advance(t int64) {
	if d.fresh {
		d.fresh, d.start, d.prev, d.curr = false, counterWindowStart(t, d.phaseNs, d.sizeNs), 0, 0
	} else {
		d.start, d.prev, d.curr = counterWindow(t, d.phaseNs, d.sizeNs, d.start, d.prev, d.curr)
	}
}

// weightedPrev is ⌈prev·(P − e)/P⌉ at t: the rate counting k more requests
// is over iff weightedPrev + curr + k > N (the weighted part is the only
// fraction, and a sum > N of a fraction and whole numbers is one whose
// ceiling is).
func (d *cloudflareRuleLimiter) weightedPrev(t int64) int64 {
	hi, lo := bits.Mul64(uint64(d.prev), uint64(d.sizeNs-(t-d.start)))
	q, r := bits.Div64(hi, lo, uint64(d.sizeNs)) // hi < size: the quotient is below prev
	if r != 0 {
		q++
	}
	return int64(q)
}

// Allow reports whether a request at t is admitted, and counts it.
func (d *cloudflareRuleLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

// AllowN offers n requests at t: those whose rate stays within the limit
// are admitted, the first over one starts the block (T > 0), and the rest
// are blocked.
func (d *cloudflareRuleLimiter) AllowN(t, n int64) int64 {
	d.started = false
	if n <= 0 {
		return 0
	}
	d.advance(t)
	if d.blocking && t < d.until {
		if d.countAll {
			d.curr += n
		}
		return 0
	}
	d.blocking = false
	j := min(n, max(0, d.limit-d.weightedPrev(t)-d.curr))
	d.curr += j
	if j < n {
		if d.countAll {
			d.curr += n - j
		}
		if d.timeoutNs > 0 {
			d.blocking, d.until = true, t+d.timeoutNs
			d.startBlock(t, d.until)
		}
	}
	return j
}

// peek reports whether a request at t would be admitted.
func (d *cloudflareRuleLimiter) peek(t int64) bool {
	c := *d
	return c.Allow(t)
}

// charge counts one request at t.
func (d *cloudflareRuleLimiter) charge(t int64) {
	d.advance(t)
	d.curr++
}

func (d *cloudflareRuleLimiter) cloneInto(dst decider) decider { return copyInto(dst, d) }

// stateSize: the window counts while they still weigh, and the block.
func (d *cloudflareRuleLimiter) stateSize(t int64) (bool, int64) {
	if d.fresh {
		return false, 0
	}
	live := (t < d.start+2*d.sizeNs && d.prev+d.curr > 0) || (d.blocking && t < d.until)
	return live, 5 * wordBytes
}

// RetryAfter of cloudflare_rule: until the mitigation timeout ends and the
// estimated rate is at or below the limit (found by probing).
func (d *cloudflareRuleLimiter) RetryAfter(t int64) int64 { return retryAfterSearch(d, t, nil) }
