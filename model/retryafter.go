package model

// RetryAfterer is a Decider that says when a key it rejects may come back:
// the Retry-After a deployed limiter would send (x/time/rate's
// Reservation.Delay, throttled's RateLimitResult.RetryAfter). Every
// algorithm's decider has the ability; a Decider registered from outside
// the package may lack it.
type RetryAfterer interface {
	Decider
	// RetryAfter is how long after tNs, ns, the decider would first admit a
	// request if none arrived meanwhile: 0 when it would admit at tNs, -1
	// when it never would (a limit of 0). It leaves the decisions unchanged;
	// tNs must not be before the last request.
	RetryAfter(tNs int64) int64
}

// RetryAfter is d's Retry-After at tNs, ns (RetryAfterer): d's own when it
// has the ability, else found by probing copies of d (every decider of this
// package, modifiers included), else -1 (unknown).
func RetryAfter(d Decider, tNs int64) int64 {
	if r, ok := d.(RetryAfterer); ok {
		return r.RetryAfter(tNs)
	}
	if dd, ok := d.(decider); ok {
		return retryAfterSearch(dd, tNs, nil)
	}
	return -1
}

// maxRetryAfterNs bounds the search: a key that would not admit within
// 2^62 ns (146 years) never will.
const maxRetryAfterNs = int64(1) << 62

// retryAfterSearch finds the least e >= 0 for which d would admit a request
// at t+e, probing a fresh copy of d (kept in *scratch when not nil) for
// each time: first doubling e, then halving the interval. It relies on
// what holds for every algorithm: with no request meanwhile, a key that
// would be admitted at some time would be admitted at every later time.
func retryAfterSearch(d decider, t int64, scratch *decider) int64 {
	var c decider
	if scratch != nil {
		c = *scratch
	}
	probe := func(e int64) bool {
		c = d.cloneInto(c)
		return c.peek(t + e)
	}
	defer func() {
		if scratch != nil {
			*scratch = c
		}
	}()
	if probe(0) {
		return 0
	}
	lo, hi := int64(0), int64(1) // probe(lo) is false
	for !probe(hi) {
		if hi >= maxRetryAfterNs {
			return -1
		}
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 { // probe(lo) false, probe(hi) true
		mid := lo + (hi-lo)/2
		if probe(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// RetryAfter of token_bucket: until the bucket holds a token again, to the
// ns, as x/time/rate's Reservation.Delay.
func (d *tokenBucketLimiter) RetryAfter(t int64) int64 {
	if !d.small {
		return retryAfterSearch(d, t, nil)
	}
	u := d.unitsAt(t)
	if takesToken(u, d.unit, d.num) {
		return 0
	}
	// The least e with u + num·e - unit + num > 0 (no cap: capacity >= 1).
	need := d.unit - d.num - u // > 0 here; num·e must exceed it
	return need/d.num + 1
}

// RetryAfter of gcra: until the theoretical arrival time is within the
// tolerance, as throttled's RetryAfter.
func (d *gcraLimiter) RetryAfter(t int64) int64 {
	if d.fresh {
		return 0
	}
	return max(0, d.tat-t-d.tauNs)
}

// RetryAfter of fixed_window: 0 while the window admits, else until the
// next window opens.
func (d *fixedWindowLimiter) RetryAfter(t int64) int64 {
	if d.peek(t) {
		return 0
	}
	if d.limit <= 0 {
		return -1
	}
	w := floorDiv(t-d.phaseNs, d.windowNs)
	return d.phaseNs + (w+1)*d.windowNs - t
}

// RetryAfter of fixed_window_anchored: until the window opened by the first
// hit expires.
func (d *anchoredWindowLimiter) RetryAfter(t int64) int64 {
	if d.peek(t) {
		return 0
	}
	if d.limit <= 0 {
		return -1
	}
	return d.resetNs - t
}

// RetryAfter of sliding_window, sliding_log and concurrency: until enough of
// the oldest logged requests leave the window (a slot frees) for the count
// to drop below the limit.
func (d *slidingLogLimiter) RetryAfter(t int64) int64 {
	if d.limit <= 0 {
		return -1
	}
	r := &d.log
	total := r.total
	for i := range r.size {
		if total < d.limit {
			if i == 0 {
				return 0
			}
			e := r.buf[(r.head+i-1)%len(r.buf)]
			return max(0, e.t+d.windowNs-t)
		}
		total -= r.buf[(r.head+i)%len(r.buf)].n
	}
	if r.size == 0 {
		return 0
	}
	e := r.buf[(r.head+r.size-1)%len(r.buf)]
	return max(0, e.t+d.windowNs-t)
}

// RetryAfter of sliding_counter: found by probing (the weighted previous
// window's count falls continuously).
func (d *slidingCounterLimiter) RetryAfter(t int64) int64 { return retryAfterSearch(d, t, nil) }

// RetryAfter of nginx: until the excess has leaked to burst (in nginx's
// whole milliseconds).
func (d *nginxLimiter) RetryAfter(t int64) int64 { return retryAfterSearch(d, t, nil) }

// RetryAfter of haproxy_rate: until the period's count, previous period
// weighted, falls below the limit.
func (d *haproxyRateLimiter) RetryAfter(t int64) int64 { return retryAfterSearch(d, t, nil) }

// RetryAfter of traefik: until the token comes within maxDelay, or the idle
// bucket is dropped (Traefik's own Retry-After header is the rejected
// request's delay rounded up to whole seconds).
func (d *traefikLimiter) RetryAfter(t int64) int64 { return retryAfterSearch(d, t, nil) }

var (
	_ RetryAfterer = (*tokenBucketLimiter)(nil)
	_ RetryAfterer = (*gcraLimiter)(nil)
	_ RetryAfterer = (*fixedWindowLimiter)(nil)
	_ RetryAfterer = (*anchoredWindowLimiter)(nil)
	_ RetryAfterer = (*slidingLogLimiter)(nil)
	_ RetryAfterer = (*slidingCounterLimiter)(nil)
	_ RetryAfterer = (*nginxLimiter)(nil)
	_ RetryAfterer = (*haproxyRateLimiter)(nil)
)
