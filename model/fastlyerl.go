package model

import (
	"fmt"
	"slices"
)

// Fastly Edge Rate Limiting (docs/managed-rules.md), as Fastly documents
// ratelimit.check_rate(entry, rc, delta, window, limit, pb, ttl)
// (fastly.com/documentation/reference/vcl/functions/rate-limiting/):
//
//   - "Increment an entry in a rate counter and check if the client has
//     exceeded some average number of requests per second (RPS)"; window
//     "The last N seconds of data over which to compute the
//     requests-per-second. Must be 1, 10, or 60"; limit "The RPS limit. If
//     the user goes above this limit during the given window, then they are
//     penalized and their entry is put into the penalty box pb. Must be
//     between 10 and 70000000"; ttl "Specifies how long a user remains
//     penalized. Must be between 1m and 1h, and has minute granularity";
//     the function "returns true if the user is penalized";
//   - rate counter windows are whole seconds: at 12:01:03.458 the 10 s
//     window "represents increments received between 12:00:54.000 and
//     12:01:03.458" (…/reference/vcl/declarations/ratecounter/);
//   - "Edge Rate Limiting is not intended to compute rates with high
//     precision and may under count by up to 10%"
//     (docs.fastly.com/products/edge-rate-limiting).
//
// What the documentation leaves open is stated here and in parameters: a
// penalized key's requests are refused without being counted; the rate is
// the window's count over the full window; the undercount is undercount_pct, a whole percent from 0
// (exact, the default) to 10 taken off every count, rounded down: the
// worst case the documentation allows, deterministic.

// FastlyWindows are check_rate's windows, seconds.
var FastlyWindows = []int{1, 10, 60}

// check_rate's bounds: limit (requests per second) and the penalty box TTL
// (seconds, whole minutes); the documented undercount, percent.
const (
	minFastlyLimit      = 10
	maxFastlyLimit      = 70_000_000
	minFastlyBoxS       = 60
	maxFastlyBoxS       = 3600
	maxFastlyUndercount = 10
)

// fastlyERLAlgorithm is fastly_erl, Fastly's Edge Rate Limiting.
var fastlyERLAlgorithm = Descriptor{
	Name: "fastly_erl", Title: "Fastly ERL", Family: WindowFamily, ColorSlot: 12,
	Example:  "fastly_erl window_s=10 rate=100 penalty_box_s=300",
	Params:   []string{"window_s", "rate", "penalty_box_s"},
	Optional: []string{"undercount_pct"},
	Cost:     150,
	Validate: func(p Policy) error {
		switch {
		case p.Key == KeyBoth:
			return fieldErr("key", "fastly_erl cannot decide on two keys at once")
		case p.SyncMs != 0:
			return fieldErr("sync_ms", "fastly_erl cannot run on lagged shared state")
		}
		return validateFastly(p)
	},
	Label: func(p Policy) string {
		return fmt.Sprintf("Fastly ERL %g/s over %d s, box %d min", p.Rate, p.WindowS, p.PenaltyBoxS/60)
	},
	Why: func(p Policy) string {
		return fmt.Sprintf("cut when the key's requests in its last %d one-second buckets average over %g per second; then the key is in the penalty box for %d min",
			p.WindowS, p.Rate, p.PenaltyBoxS/60)
	},
	Bound: func(p Policy, a []float64) string {
		return windowBound(Policy{WindowS: p.WindowS, Limit: int64(p.Rate) * int64(p.WindowS)}, a, false)
	},
	blank: func() decider { return &fastlyERLLimiter{} },
}

// validateFastly checks the parameters against check_rate's bounds.
func validateFastly(p Policy) error {
	if !slices.Contains(FastlyWindows, p.WindowS) {
		return fieldErr("window_s", "must be one of Fastly's rate windows 1, 10, 60 seconds, got %d", p.WindowS)
	}
	if p.Rate != float64(int64(p.Rate)) || p.Rate < minFastlyLimit || p.Rate > maxFastlyLimit {
		return fieldErr("rate", "must be a whole number of requests per second from %d to %d (check_rate's limit), got %v", minFastlyLimit, maxFastlyLimit, p.Rate)
	}
	if p.PenaltyBoxS%60 != 0 || p.PenaltyBoxS < minFastlyBoxS || p.PenaltyBoxS > maxFastlyBoxS {
		return fieldErr("penalty_box_s", "must be whole minutes from %d to %d seconds (Fastly's penalty box TTL), got %d", minFastlyBoxS, maxFastlyBoxS, p.PenaltyBoxS)
	}
	if p.UndercountPct != float64(int(p.UndercountPct)) || p.UndercountPct < 0 || p.UndercountPct > maxFastlyUndercount {
		return fieldErr("undercount_pct", "must be a whole percent from 0 to %d (Fastly may under count by up to 10%%), got %v", maxFastlyUndercount, p.UndercountPct)
	}
	return nil
}

var _ decider = (*fastlyERLLimiter)(nil)

// fastlyERLLimiter is fastly_erl for one key: its requests counted in 1 s
// buckets [phase + s, phase + s + 1 s) (Unix seconds through NewDeciderAt).
// A request at t in second s, outside the penalty box, is counted, and the
// key is over when the count of seconds s − window + 1 … s, less
// undercount_pct percent (rounded down), exceeds rate·window; the request
// is then refused and the key penalized for [t, t + penalty_box_s), during
// which its requests are refused and not counted.
type fastlyERLLimiter struct {
	windowS, maxCount int64 // maxCount = rate·window
	keepPct           int64 // 100 − undercount_pct
	boxNs, phaseNs    int64
	ring              []int64 // second s's count at ring[s mod window]
	sum               int64   // the ring's total
	last              int64   // the latest second counted into
	fresh             bool
	boxed             bool
	until             int64 // the penalty's end, ns (when boxed)
	ruleBlocks              // the penalties (managed_blocks.go)
}

func (d *fastlyERLLimiter) configure(p Policy) {
	d.windowS, d.maxCount = int64(p.WindowS), int64(p.Rate)*int64(p.WindowS)
	d.keepPct, d.boxNs, d.phaseNs = 100-int64(p.UndercountPct), int64(p.PenaltyBoxS)*secondNs, 0
	if cap(d.ring) >= p.WindowS {
		d.ring = d.ring[:p.WindowS]
	} else {
		d.ring = make([]int64, p.WindowS)
	}
	d.Reset()
}

// Reset forgets the key.
func (d *fastlyERLLimiter) Reset() { d.fresh, d.boxed = true, false; d.resetBlocks() }

// atOrigin puts the buckets on Unix seconds (NewDeciderAt).
func (d *fastlyERLLimiter) atOrigin(originNs int64) { d.phaseNs = floorMod(-originNs, secondNs) }

// advance makes t's second the ring's latest, dropping seconds that left
// the window.
func (d *fastlyERLLimiter) advance(t int64) {
	s := floorDiv(t-d.phaseNs, secondNs)
	switch {
	case d.fresh:
		clear(d.ring)
		d.fresh, d.last, d.sum = false, s, 0
	case s > d.last:
		for j := d.last + 1; j <= s && j <= d.last+d.windowS; j++ {
			i := floorMod(j, d.windowS)
			d.sum -= d.ring[i]
			d.ring[i] = 0
		}
		d.last = s
	}
}

// admissible is how many more requests in the current second keep the
// key's counted total within rate·window: k more are within iff
// ⌊(sum + k)·keep/100⌋ <= maxCount, i.e. sum + k < ⌈100·(maxCount+1)/keep⌉.
func (d *fastlyERLLimiter) admissible() int64 {
	bound := (100*(d.maxCount+1) + d.keepPct - 1) / d.keepPct
	return bound - 1 - d.sum
}

// Allow reports whether a request at t is admitted.
func (d *fastlyERLLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

// AllowN offers n requests at t: they are counted and admitted while the
// key stays within its rate; the first over one is counted and penalizes
// the key, and the rest are refused uncounted.
func (d *fastlyERLLimiter) AllowN(t, n int64) int64 {
	d.started = false
	if n <= 0 || (d.boxed && t < d.until) {
		return 0
	}
	d.boxed = false
	d.advance(t)
	j := min(n, max(0, d.admissible()))
	counted := j
	if j < n {
		counted++
		d.boxed, d.until = true, t+d.boxNs
		d.startBlock(t, d.until)
	}
	d.ring[floorMod(d.last, d.windowS)] += counted
	d.sum += counted
	return j
}

// peek reports whether a request at t would be admitted.
func (d *fastlyERLLimiter) peek(t int64) bool {
	if d.boxed && t < d.until {
		return false
	}
	c := *d
	c.ring = nil
	s := floorDiv(t-d.phaseNs, secondNs)
	sum := d.sum
	if !d.fresh && s > d.last {
		for j := d.last + 1; j <= s && j <= d.last+d.windowS; j++ {
			sum -= d.ring[floorMod(j, d.windowS)]
		}
	}
	if d.fresh {
		sum = 0
	}
	c.sum = sum
	return c.admissible() >= 1
}

// charge counts one request at t.
func (d *fastlyERLLimiter) charge(t int64) {
	d.advance(t)
	d.ring[floorMod(d.last, d.windowS)]++
	d.sum++
}

func (d *fastlyERLLimiter) cloneInto(dst decider) decider {
	c, _ := dst.(*fastlyERLLimiter)
	if c == nil {
		c = &fastlyERLLimiter{}
	}
	ring := append(c.ring[:0], d.ring...)
	*c = *d
	c.ring = ring
	return c
}

// stateSize: the buckets while they are in the window, and the penalty.
func (d *fastlyERLLimiter) stateSize(t int64) (bool, int64) {
	if d.fresh {
		return false, 0
	}
	live := (t < d.phaseNs+(d.last+d.windowS)*secondNs && d.sum > 0) || (d.boxed && t < d.until)
	return live, (d.windowS + 4) * wordBytes
}

// RetryAfter of fastly_erl: until the penalty box lets the key out and its
// window's rate is under the threshold (found by probing).
func (d *fastlyERLLimiter) RetryAfter(t int64) int64 { return retryAfterSearch(d, t, nil) }
