package model

// Operations on deciders that keyed and distributed simulation needs beyond
// Allow: look without committing (peek), commit without deciding (charge),
// copy (cloneInto) and measure (stateSize).

// countsRejected reports whether the algorithm charges rejected requests to
// its state (sliding_log logs every attempt; fixed_window_anchored counts
// every hit).
func countsRejected(a Algorithm) bool { return a == SlidingLog || a == FixedWindowAnchored }

// peek reports whether d would admit a request at t, leaving its decisions
// unchanged (a sliding log may drop entries that have expired by t).
func peek(d decider, t int64) bool {
	switch d := d.(type) {
	case *slidingLogLimiter:
		d.log.expire(t - d.windowNs)
		return d.log.total < d.limit
	case *fixedWindowLimiter:
		c := *d
		return c.Allow(t)
	case *anchoredWindowLimiter:
		c := *d
		return c.Allow(t)
	case *slidingCounterLimiter:
		c := *d
		return c.Allow(t)
	case *tokenBucketLimiter:
		c := *d
		return c.Allow(t)
	case *gcraLimiter:
		c := *d
		return c.Allow(t)
	case *nginxLimiter:
		c := *d
		return c.Allow(t)
	}
	panic("model: peek: unknown decider")
}

// charge commits one request at t (not before the last charge) to d's state
// as an admitted request would, whether or not d would admit it: a shared
// store applies the writes the nodes send it.
func charge(d decider, t int64) {
	switch d := d.(type) {
	case *slidingLogLimiter:
		d.log.expire(t - d.windowNs)
		d.log.add(t, 1)
	case *fixedWindowLimiter:
		d.advance(t)
		d.count++
	case *anchoredWindowLimiter:
		d.advance(t)
		d.hits++
	case *slidingCounterLimiter:
		d.advance(t)
		d.curr++
	case *tokenBucketLimiter:
		d.charge(t)
	case *gcraLimiter:
		tat := t
		if !d.fresh {
			tat = max(d.tat, t)
		}
		d.fresh, d.tat = false, tat+d.periodNs
	case *nginxLimiter:
		now := t / 1e6
		if d.fresh {
			d.fresh, d.excess, d.lastMs = false, 0, now
			return
		}
		ms := now - d.lastMs
		d.excess = max(0, d.excess-d.rateM*min(ms, d.idleMs)/1000+1000)
		if ms != 0 {
			d.lastMs = now
		}
	default:
		panic("model: charge: unknown decider")
	}
}

// cloneInto makes dst (a decider of the same algorithm, or nil) a copy of
// src and returns it; a sliding log's buffer is reused.
func cloneInto(dst, src decider) decider {
	switch s := src.(type) {
	case *slidingLogLimiter:
		d, _ := dst.(*slidingLogLimiter)
		if d == nil {
			d = &slidingLogLimiter{}
		}
		buf := d.log.buf
		*d = *s
		d.log.buf = buf
		d.log.reset()
		for i := range s.log.size {
			e := s.log.buf[(s.log.head+i)%len(s.log.buf)]
			d.log.add(e.t, e.n)
		}
		return d
	case *fixedWindowLimiter:
		return copyInto(dst, s)
	case *anchoredWindowLimiter:
		return copyInto(dst, s)
	case *slidingCounterLimiter:
		return copyInto(dst, s)
	case *tokenBucketLimiter:
		return copyInto(dst, s)
	case *gcraLimiter:
		return copyInto(dst, s)
	case *nginxLimiter:
		return copyInto(dst, s)
	}
	panic("model: cloneInto: unknown decider")
}

func copyInto[T any, P interface {
	*T
	decider
}](dst decider, src P) decider {
	d, _ := dst.(P)
	if d == nil {
		d = P(new(T))
	}
	*d = *src
	return d
}

// Nominal state sizes, bytes: one 8-byte word per number a limiter keeps for
// a key, and 8 bytes per request a log holds (one timestamp each, as a Redis
// sorted set holds one member per request). Key names are not counted.
const (
	wordBytes = 8
)

// stateSize reports whether d holds live state for its key at t (state a new
// key would not have, and that a store with expiry would still keep) and how
// many bytes it takes. A sliding log drops entries expired by t.
func stateSize(d decider, t int64) (live bool, bytes int64) {
	switch d := d.(type) {
	case *slidingLogLimiter:
		d.log.expire(t - d.windowNs)
		return d.log.total > 0, d.log.total * wordBytes
	case *fixedWindowLimiter: // window index and count
		return !d.fresh && d.count > 0 && floorDiv(t-d.phaseNs, d.windowNs) == d.window, 2 * wordBytes
	case *anchoredWindowLimiter: // window end and hits
		return !d.fresh && t < d.resetNs, 2 * wordBytes
	case *slidingCounterLimiter: // window start, previous and current counts
		return !d.fresh && t < d.start+2*d.sizeNs && d.prev+d.curr > 0, 3 * wordBytes
	case *tokenBucketLimiter: // tokens and last time; live until full again
		return !d.full(t), 2 * wordBytes
	case *gcraLimiter: // theoretical arrival time
		return !d.fresh && d.tat > t, wordBytes
	case *nginxLimiter: // excess and last time
		return !d.fresh && d.excess > d.rateM*(t/1e6-d.lastMs)/1000, 2 * wordBytes
	}
	panic("model: stateSize: unknown decider")
}
