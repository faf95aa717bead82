package model

import (
	"fmt"
	"math"
	"math/bits"
)

// tokenBucketAlgorithm is token_bucket, the lesson's token bucket: it starts
// full with capacity tokens, refills at rate per second, and a request takes
// one token (x/time/rate; SPEC.md).
var tokenBucketAlgorithm = Descriptor{
	Name: "token_bucket", Title: "token bucket", Family: BucketFamily, Lesson: true, ColorSlot: 2,
	Params:     []string{"rate", "capacity"},
	Cost:       230,
	Validate:   validateBucket,
	Label:      func(p Policy) string { return fmt.Sprintf("token bucket %g/s", p.Rate) },
	Why:        bucketWhy,
	Bound:      bucketBound,
	newDecider: func() decider { return &tokenBucketLimiter{} },
	kernel: func(p Policy, a, adm []int32) int64 {
		return tokenBucket(a, adm, ratioOf(p.Rate), p.Capacity)
	},
	lockstep: func(ps []Policy, _ int64) (Lockstep, bool) { return newBucketLockstep(ps) },
}

var _ decider = (*tokenBucketLimiter)(nil)

// validateBucket checks rate and capacity.
func validateBucket(p Policy) error {
	if !(p.Rate >= minRate) || p.Rate > maxRate {
		return fieldErr("rate", "must be a finite number >= %g and <= %g requests/s, got %v", minRate, float64(maxRate), p.Rate)
	}
	if p.Capacity < 1 || p.Capacity > maxCapacity {
		return fieldErr("capacity", "must be >= 1 and <= %d requests, got %d", int64(maxCapacity), p.Capacity)
	}
	return nil
}

// bucketWhy is Why of the buckets with a capacity.
func bucketWhy(p Policy) string {
	return fmt.Sprintf("cut in bursts beyond %d requests, or when sustained above %s/s", p.Capacity, formatNum(p.Rate))
}

// bucketBound is Bound of the buckets with a capacity.
func bucketBound(p Policy, a []float64) string { return burstBound(p.Rate, p.Capacity, a) }

// burstBound states a client's largest burst above rate (the largest sum
// of a[t] - rate over a run of seconds) against a bucket's capacity.
func burstBound(rate float64, capacity int64, a []float64) string {
	var best, run float64
	for _, x := range a {
		run = max(0, run+x-rate)
		best = max(best, run)
	}
	return fmt.Sprintf("a burst of %s requests above %s/s against a capacity of %d", formatNum(math.Round(best)), formatNum(rate), capacity)
}

// tokenBucketLimiter is token_bucket on event times, deciding as
// golang.org/x/time/rate's AllowN(t, 1) does, in exact arithmetic: the
// bucket starts full, refills continuously at rate, and a request takes one
// token. As in x/time/rate, a request is admitted when the deficit it leaves
// is worth less than 1 ns of refill (the library truncates the wait to whole
// ns); at whole-second times this never differs from SPEC's floor(tokens)
// unless the rate's numerator exceeds 10^9 (rates with 9 decimals above 1).
// Tokens are counted in units of 1/(den·10^9) token, so the refill over e ns
// is num·e units (exact.go); rejected requests leave the state unchanged.
// Unlike x/time/rate's float64 tokens nothing drifts: rate 0.1 admits
// exactly every 10 s, and capacities up to 2^62 stay exact.
type tokenBucketLimiter struct {
	rate      float64
	num, unit int64 // refill per ns in units; units per token
	capacity  int64
	fresh     bool
	lastNs    int64
	// A bucket of at most 2^60 units (every realistic one) holds its tokens
	// as one count of units, so a decision is a multiply and compares.
	small       bool
	fullU       int64 // capacity in units (small)
	safeNs      int64 // below this elapsed time num·e cannot overflow (small)
	tokensU     int64 // tokens at lastNs, units (small)
	whole, frac int64 // otherwise: tokens at lastNs = whole + frac/unit, 0 <= frac < unit
}

func (d *tokenBucketLimiter) configure(p Policy) {
	if p.Rate != d.rate || d.unit == 0 {
		r := ratioOf(p.Rate)
		d.rate, d.num, d.unit = p.Rate, r.num, r.den*secondNs
		d.safeNs = (1 << 61) / d.num
	}
	d.capacity = p.Capacity
	d.small, d.fullU = d.capacity <= (1<<60)/d.unit, 0
	if d.small {
		d.fullU = d.capacity * d.unit
	}
	d.Reset()
}

func (d *tokenBucketLimiter) Reset()             { d.fresh = true }
func (d *tokenBucketLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

// unitsAt returns a small bucket's tokens at t (not before the last
// request), refilled and capped at capacity, in units.
func (d *tokenBucketLimiter) unitsAt(t int64) int64 {
	if d.fresh {
		return d.fullU
	}
	return refillUnits(d.tokensU, d.fullU, d.num, t-d.lastNs, d.safeNs)
}

// refillUnits is a small bucket holding tokensU units refilled for e >= 0
// ns at num units per ns, capped at fullU units; below safeNs = 2^61/num ns
// the product cannot overflow, beyond it is taken in 128 bits.
// (tokenBucketLimiter and bucketLockstep share it.)
func refillUnits(tokensU, fullU, num, e, safeNs int64) int64 {
	if e < safeNs {
		return refillShort(tokensU, fullU, num, e)
	}
	hi, lo := bits.Mul64(uint64(num), uint64(e))
	if room := fullU - tokensU; hi != 0 || lo >= uint64(room) {
		return fullU
	}
	return tokensU + int64(lo)
}

// refillShort is refillUnits for e < safeNs, where num·e does not overflow.
func refillShort(tokensU, fullU, num, e int64) int64 { return min(fullU, tokensU+num*e) }

// takesToken reports whether a small bucket holding u units admits one
// request: the deficit it leaves, unit - u, is worth less than 1 ns of
// refill (num units), as x/time/rate truncates its wait to whole ns.
func takesToken(u, unit, num int64) bool { return u-unit+num > 0 }

// tokensAt is unitsAt for a bucket that is not small: whole tokens and a
// remainder in units.
func (d *tokenBucketLimiter) tokensAt(t int64) (whole, frac int64) {
	if d.fresh {
		return d.capacity, 0
	}
	return refillWhole(d.whole, d.frac, d.capacity, d.num, d.unit, t-d.lastNs)
}

// refillWhole is a bucket that is not small, holding whole + frac/unit
// tokens, refilled for e >= 0 ns at num units per ns, capped at capacity.
// (tokenBucketLimiter and wideBucketLockstep share it.)
func refillWhole(whole, frac, capacity, num, unit, e int64) (int64, int64) {
	if e == 0 {
		return whole, frac
	}
	q, r, ok := mulDiv(num, e, unit)
	if !ok || q >= capacity-whole {
		return capacity, 0
	}
	whole, frac = whole+q, frac+r
	if frac >= unit {
		whole, frac = whole+1, frac-unit
	}
	if whole >= capacity {
		return capacity, 0
	}
	return whole, frac
}

// wholeAdmits is how many of n requests a bucket that is not small, holding
// w + f/unit tokens, admits at once: j <= w + floor((f + num − 1)/unit).
func wholeAdmits(w, f, num, unit, n int64) int64 { return min(n, max(0, w+(f+num-1)/unit)) }

// Request j of a batch is admitted iff the tokens after it are above -num
// units (a deficit below 1 ns of refill): tokens - j·unit > -num.
func (d *tokenBucketLimiter) AllowN(t, n int64) int64 {
	if n <= 0 {
		return 0
	}
	if d.small {
		u := d.unitsAt(t)
		k := int64(0)
		if takesToken(u, d.unit, d.num) {
			k = 1
			if n > 1 {
				k = min(n, (u+d.num-1)/d.unit)
			}
			d.fresh, d.tokensU, d.lastNs = false, u-k*d.unit, t
		}
		return k
	}
	w, f := d.tokensAt(t)
	k := wholeAdmits(w, f, d.num, d.unit, n)
	if k > 0 {
		d.fresh, d.whole, d.frac, d.lastNs = false, w-k, f, t
	}
	return k
}

// charge takes one token at t whether or not one is there (charge.go).
func (d *tokenBucketLimiter) charge(t int64) {
	if d.small {
		d.tokensU = d.unitsAt(t) - d.unit
	} else {
		w, f := d.tokensAt(t)
		d.whole, d.frac = w-1, f
	}
	d.fresh, d.lastNs = false, t
}

// full reports whether the bucket is full at t (a new key's state).
func (d *tokenBucketLimiter) full(t int64) bool {
	if d.fresh {
		return true
	}
	if d.small {
		return d.unitsAt(t) == d.fullU
	}
	w, _ := d.tokensAt(t)
	return w == d.capacity
}

func (d *tokenBucketLimiter) peek(t int64) bool {
	c := *d
	return c.Allow(t)
}

func (d *tokenBucketLimiter) cloneInto(dst decider) decider { return copyInto(dst, d) }

// stateSize: tokens and the last time; live until full again.
func (d *tokenBucketLimiter) stateSize(t int64) (bool, int64) { return !d.full(t), 2 * wordBytes }

// tokenBucket starts full; each second it first adds rate tokens (capped at
// capacity), then admits min(a, floor(tokens)). The arithmetic is exact
// (exact.go): rate 0.1 refills one whole token every 10 seconds.
func tokenBucket(a, adm []int32, rate ratio, capacity int64) int64 {
	var total int64
	b := newStepBucket(rate, capacity)
	for t, x := range a {
		n := b.step(int64(x))
		total += n
		adm[t] = int32(n)
	}
	return total
}
