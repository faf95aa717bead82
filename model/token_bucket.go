package model

import (
	"fmt"
	"math"
	"math/bits"
)

// tokenBucketAlgorithm is token_bucket, the lesson's token bucket: it starts
// full with capacity tokens, refills at rate per second, and a request takes
// one token (x/time/rate; the lesson).
var tokenBucketAlgorithm = Descriptor{
	Name: "token_bucket", Title: "token bucket", Family: BucketFamily, Lesson: true, ColorSlot: 2,
	Example:  "token_bucket rate=10 capacity=100",
	Params:   []string{"rate", "capacity"},
	Cost:     230,
	Validate: validateBucket,
	Label:    func(p Policy) string { return fmt.Sprintf("token bucket %g/s", p.Rate) },
	Why:      bucketWhy,
	Bound:    bucketBound,
	blank:    func() decider { return &tokenBucketLimiter{} },
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

// countAdmitted offers the requests at times (ns, sorted) one by one and
// returns how many are admitted: admitEvents's loop with direct calls.
func (d *tokenBucketLimiter) countAdmitted(times []int64) (n int64) {
	for _, t := range times {
		if d.Allow(t) {
			n++
		}
	}
	return n
}

// countByLabel is AdmitByLabel's loop with direct calls.
func (d *tokenBucketLimiter) countByLabel(ts []int64, labels []Stage, admitted *[4]int64) {
	for j, t := range ts {
		if d.Allow(t) {
			admitted[labels[j]&3]++
		}
	}
}

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

// bucketLockstep is token_bucket: each policy's small bucket
// (tokenBucketLimiter with small set), refilled by refillUnits. Where the
// Decider keeps its tokens at its last admission, the lockstep keeps them at
// the key's last request, rejected or not, so one elapsed time serves every
// policy: refilling by e1 then by e2, capped at capacity each time, is
// refilling by e1 + e2 (integers, no overflow), so decisions are the same.
type bucketLockstep struct {
	num, unit, fullU, safeNs []int64 // per policy (sorted): the bucket's constants
	tokensU                  []int64 // per policy: units at the key's last request
	lastNs                   int64   // the key's last request
	fresh                    bool
	minSafeNs                int64 // the least safeNs: shorter times refill by refillShort
	sortedPolicies                 // groups of one rate, by capacity
}

func newBucketLockstep(ps []Policy) (Lockstep, bool) {
	n := len(ps)
	var d tokenBucketLimiter
	for _, p := range ps {
		d.configure(p)
		if !d.small {
			return newWideBucketLockstep(ps), true
		}
	}
	ps, sp := sortPolicies(ps, func(p Policy) [2]int64 {
		r := ratioOf(p.Rate)
		return [2]int64{r.num, r.den}
	}, func(p Policy) int64 { return p.Capacity })
	b := &bucketLockstep{num: make([]int64, n), unit: make([]int64, n), fullU: make([]int64, n),
		safeNs: make([]int64, n), tokensU: make([]int64, n), fresh: true, minSafeNs: math.MaxInt64,
		sortedPolicies: sp}
	for k, p := range ps {
		d.configure(p)
		b.num[k], b.unit[k], b.fullU[k], b.safeNs[k] = d.num, d.unit, d.fullU, d.safeNs
		b.minSafeNs = min(b.minSafeNs, d.safeNs)
	}
	return b, true
}

func (b *bucketLockstep) Len() int { return len(b.num) }
func (b *bucketLockstep) Reset()   { b.fresh = true }

func (b *bucketLockstep) AdmitByLabel(ts []int64, labels []Stage, admitted [][4]int64) {
	if len(ts) == 0 {
		return
	}
	if b.fresh {
		// A new key's bucket is full; full at its first request is the same.
		b.fresh, b.lastNs = false, ts[0]
		copy(b.tokensU, b.fullU)
	}
	b.lastNs = b.run(0, len(b.num), b.lastNs, ts, labels)
	b.fold(admitted)
}

// AdmitKey settles the policies of each rate whose capacity admits the
// whole key: with nothing rejected, the deficit below a full bucket before
// request j, D_j = max(0, D_{j-1} + unit − num·e_j), does not depend on the
// capacity, and request j is admitted (takesToken) iff D_j < fullU − unit +
// num. So capacities above that bound for max D admit every request.
func (b *bucketLockstep) AdmitKey(ts []int64, labels []Stage, offered *[4]int64, admitted [][4]int64) {
	b.fresh = true
	if len(ts) == 0 {
		return
	}
	for _, g := range b.groups {
		num, unit := b.num[g[0]], b.unit[g[0]]
		maxD := bucketMaxDeficit(ts, num, unit)
		a := g[0]
		for a < g[1] && b.fullU[a]-unit <= maxD-num {
			a++
		}
		copy(b.tokensU[g[0]:a], b.fullU[g[0]:a])
		b.run(g[0], a, ts[0], ts, labels)
		b.admitAll(a, g[1], offered)
	}
	b.fold(admitted)
}

// bucketMaxDeficit is the largest deficit D_j (units below a full bucket
// before request j) over the key's requests ts of a bucket of num units per
// ns and unit units per token that admits them all; math.MaxInt64 when it
// reaches 2^62 (no small bucket admits them all then).
func bucketMaxDeficit(ts []int64, num, unit int64) int64 {
	var d, maxD int64
	for j := 1; j < len(ts); j++ {
		x := d + unit // after request j-1 took its token; < 2^63
		hi, lo := bits.Mul64(uint64(num), uint64(ts[j]-ts[j-1]))
		if hi != 0 || lo >= uint64(x) {
			d = 0
		} else {
			d = x - int64(lo)
		}
		if d > maxD {
			if maxD = d; maxD >= 1<<62 {
				return math.MaxInt64
			}
		}
	}
	return maxD
}

// run steps sorted policies [lo, hi) over ts from the key's last request at
// last and returns the new last request.
func (b *bucketLockstep) run(lo, hi int, last int64, ts []int64, labels []Stage) int64 {
	num, unit, fullU, safeNs := b.num[lo:hi], b.unit[lo:hi], b.fullU[lo:hi], b.safeNs[lo:hi]
	tokensU, admitted := b.tokensU[lo:hi], b.adm[lo:hi]
	tokensU, admitted = tokensU[:len(num)], admitted[:len(num)]
	labels = labels[:len(ts)]
	for j, t := range ts {
		l := labels[j] & 3
		e := t - last
		last = t
		if e >= b.minSafeNs { // an idle spell of days at a high rate
			for k := range tokensU {
				u := refillUnits(tokensU[k], fullU[k], num[k], e, safeNs[k])
				if takesToken(u, unit[k], num[k]) {
					u -= unit[k]
					admitted[k][l]++
				}
				tokensU[k] = u
			}
			continue
		}
		for k := range tokensU {
			u := refillShort(tokensU[k], fullU[k], num[k], e)
			if takesToken(u, unit[k], num[k]) {
				u -= unit[k]
				admitted[k][l]++
			}
			tokensU[k] = u
		}
	}
	return last
}

// wideBucketLockstep is token_bucket where some bucket is not small (its
// capacity in units would not fit one int64): every policy's tokens as whole
// tokens and a remainder, refilled by refillWhole, at the key's last request
// as in bucketLockstep (the refill is exact, so it composes the same way).
type wideBucketLockstep struct {
	num, unit, capacity []int64 // per policy: the bucket's constants
	whole, frac         []int64 // per policy: tokens at the key's last request
	lastNs              int64   // the key's last request
	fresh               bool
}

func newWideBucketLockstep(ps []Policy) Lockstep {
	n := len(ps)
	b := &wideBucketLockstep{num: make([]int64, n), unit: make([]int64, n), capacity: make([]int64, n),
		whole: make([]int64, n), frac: make([]int64, n), fresh: true}
	var d tokenBucketLimiter
	for k, p := range ps {
		d.configure(p)
		b.num[k], b.unit[k], b.capacity[k] = d.num, d.unit, d.capacity
	}
	return b
}

func (b *wideBucketLockstep) Len() int { return len(b.num) }
func (b *wideBucketLockstep) Reset()   { b.fresh = true }

// AdmitKey steps every policy (a bucket this wide is rare).
func (b *wideBucketLockstep) AdmitKey(ts []int64, labels []Stage, _ *[4]int64, admitted [][4]int64) {
	b.Reset()
	b.AdmitByLabel(ts, labels, admitted)
}

func (b *wideBucketLockstep) AdmitByLabel(ts []int64, labels []Stage, admitted [][4]int64) {
	if len(ts) == 0 {
		return
	}
	n := len(b.num)
	num, unit, capacity := b.num[:n], b.unit[:n], b.capacity[:n]
	whole, frac, admitted := b.whole[:n], b.frac[:n], admitted[:n]
	if b.fresh {
		b.fresh, b.lastNs = false, ts[0]
		copy(whole, capacity)
		clear(frac)
	}
	labels = labels[:len(ts)]
	last := b.lastNs
	for j, t := range ts {
		l := labels[j] & 3
		e := t - last
		last = t
		for k := range whole {
			w, f := refillWhole(whole[k], frac[k], capacity[k], num[k], unit[k], e)
			if wholeAdmits(w, f, num[k], unit[k], 1) == 1 {
				w--
				admitted[k][l]++
			}
			whole[k], frac[k] = w, f
		}
	}
	b.lastNs = last
}
