package model

import (
	"fmt"
	"math"
)

// slidingLogAlgorithm is sliding_log: every attempt in the last window_s
// seconds counts, rejected ones too (the Redis ZADD-then-ZCARD pattern).
var slidingLogAlgorithm = Descriptor{
	Name: "sliding_log", Family: WindowFamily, ColorSlot: 3,
	Example:        "sliding_log window_s=60 limit=600",
	Params:         []string{"window_s", "limit"},
	CountsRejected: true,
	Cost:           270,
	Validate:       validateWindow,
	Label:          func(p Policy) string { return fmt.Sprintf("sliding log %d s (attempts count)", p.WindowS) },
	Why: func(p Policy) string {
		return fmt.Sprintf("cut when %d attempts (rejected ones too) came in the last %d s", p.Limit, p.WindowS)
	},
	Bound: func(p Policy, a []float64) string { return windowBound(p, a, false) },
	blank: func() decider { return &slidingLogLimiter{} },
	count: func(p Policy, originNs int64) func(ts []int64, c []int32, cap int64) {
		var d slidingLogLimiter
		d.configure(p)
		return func(ts []int64, c []int32, cap int64) {
			d.Reset()
			for j, t := range ts {
				d.log.expire(t - d.windowNs)
				c[j] = int32(min(d.log.total, cap))
				d.log.add(t, 1)
			}
		}
	},
}

var _ decider = (*slidingLogLimiter)(nil)

// slidingLogLimiter keeps a log of request times and admits a request while
// the log holds fewer than limit entries in (t - window, t].
//   - sliding_window (the lesson's): only admitted requests are logged.
//   - sliding_log: every attempt is logged before the check, as in the Redis
//     ZADD-then-ZCARD pattern (rolling-rate-limiter), so the attempt itself
//     counts and a client that keeps trying above the limit is locked out.
//   - concurrency: an admitted request is in flight for service_s, so the
//     requests in flight at t are those admitted in (t - service_s, t]: the
//     Stripe in-flight limit with a constant service time is exactly
//     sliding_window with window service_s.
type slidingLogLimiter struct {
	limit, windowNs int64
	countRejected   bool
	log             tally
}

func (d *slidingLogLimiter) configure(p Policy) {
	desc := p.Algorithm.Describe()
	d.limit, d.countRejected = p.Limit, desc.CountsRejected
	if desc.Family == InFlightFamily {
		d.windowNs = int64(math.Round(p.ServiceS * 1e9))
	} else {
		d.windowNs = int64(p.WindowS) * secondNs
	}
	d.Reset()
}

func (d *slidingLogLimiter) Reset()             { d.log.reset() }
func (d *slidingLogLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

// countAdmitted offers the requests at times (ns, sorted) one by one and
// returns how many are admitted: admitEvents's loop with direct calls.
func (d *slidingLogLimiter) countAdmitted(times []int64) (n int64) {
	for _, t := range times {
		if d.Allow(t) {
			n++
		}
	}
	return n
}

// countByLabel is AdmitByLabel's loop with direct calls.
func (d *slidingLogLimiter) countByLabel(ts []int64, labels []Stage, admitted *[4]int64) {
	for j, t := range ts {
		if d.Allow(t) {
			admitted[labels[j]&3]++
		}
	}
}

func (d *slidingLogLimiter) AllowN(t, n int64) int64 {
	d.log.expire(t - d.windowNs)
	k := admitted(d.limit, d.log.total, n)
	if d.countRejected {
		d.log.add(t, n)
	} else if k > 0 {
		d.log.add(t, k)
	}
	return k
}

// tally is a FIFO of (time, count) entries with their running total, in a
// ring buffer that only grows.
type tally struct {
	buf        []tallyEntry
	head, size int
	total      int64
}

type tallyEntry struct{ t, n int64 }

func (r *tally) reset() { r.head, r.size, r.total = 0, 0, 0 }

// expire drops the entries at times <= cutoff.
func (r *tally) expire(cutoff int64) {
	for r.size > 0 && r.buf[r.head].t <= cutoff {
		r.total -= r.buf[r.head].n
		r.head++
		if r.head == len(r.buf) {
			r.head = 0
		}
		r.size--
	}
}

// add counts n at time t (not before the last entry's time).
// The buffer's length is a power of two (16, 32, …), so positions wrap with a
// mask rather than a division.
func (r *tally) add(t, n int64) {
	r.total += n
	mask := len(r.buf) - 1
	if r.size > 0 {
		if last := &r.buf[(r.head+r.size-1)&mask]; last.t == t {
			last.n += n
			return
		}
	}
	if r.size == len(r.buf) {
		grown := make([]tallyEntry, max(16, 2*len(r.buf)))
		for i := range r.size {
			grown[i] = r.buf[(r.head+i)&mask]
		}
		r.buf, r.head = grown, 0
		mask = len(r.buf) - 1
	}
	r.buf[(r.head+r.size)&mask] = tallyEntry{t, n}
	r.size++
}

func (d *slidingLogLimiter) peek(t int64) bool {
	d.log.expire(t - d.windowNs)
	return d.log.total < d.limit
}

func (d *slidingLogLimiter) charge(t int64) {
	d.log.expire(t - d.windowNs)
	d.log.add(t, 1)
}

func (d *slidingLogLimiter) cloneInto(dst decider) decider {
	c, _ := dst.(*slidingLogLimiter)
	if c == nil {
		c = &slidingLogLimiter{}
	}
	buf := c.log.buf
	*c = *d
	c.log.buf = buf
	c.log.reset()
	for i := range d.log.size {
		e := d.log.buf[(d.log.head+i)%len(d.log.buf)]
		c.log.add(e.t, e.n)
	}
	return c
}

// stateSize: one timestamp per request logged, after dropping those expired
// by t.
func (d *slidingLogLimiter) stateSize(t int64) (bool, int64) {
	d.log.expire(t - d.windowNs)
	return d.log.total > 0, d.log.total * wordBytes
}
