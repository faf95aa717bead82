package model

import "fmt"

// anchoredWindowAlgorithm is fixed_window_anchored: a fixed window opened by
// a key's first hit (express-rate-limit, ulule/limiter).
var anchoredWindowAlgorithm = Descriptor{
	Name: "fixed_window_anchored", Family: WindowFamily, ColorSlot: 7,
	Example:        "fixed_window_anchored window_s=60 limit=600",
	Params:         []string{"window_s", "limit"},
	CountsRejected: true,
	Cost:           100,
	Validate:       validateWindow,
	Label:          func(p Policy) string { return fmt.Sprintf("anchored window %d s", p.WindowS) },
	Why:            windowWhy,
	Bound:          func(p Policy, a []float64) string { return windowBound(p, a, false) },
	blank:          func() decider { return &anchoredWindowLimiter{} },
	count: func(p Policy, originNs int64) func(ts []int64, c []int32, cap int64) {
		var d anchoredWindowLimiter
		d.configure(p)
		return func(ts []int64, c []int32, cap int64) {
			d.Reset()
			for j, t := range ts {
				d.advance(t)
				c[j] = int32(min(d.hits, cap))
				d.hits++
			}
		}
	},
}

var _ decider = (*anchoredWindowLimiter)(nil)

// anchoredWindowLimiter is fixed_window_anchored, express-rate-limit's
// MemoryStore and ulule/limiter: the first hit after a window has expired
// opens a new window [t, t + window); every hit counts (rejected ones too,
// which does not change admission) and a hit is admitted iff the count is
// <= limit.
type anchoredWindowLimiter struct {
	limit, windowNs int64
	fresh           bool
	resetNs, hits   int64 // end of the current window; hits in it
}

func (d *anchoredWindowLimiter) configure(p Policy) {
	d.limit, d.windowNs = p.Limit, int64(p.WindowS)*secondNs
	d.Reset()
}

func (d *anchoredWindowLimiter) Reset()             { d.fresh, d.hits = true, 0 }
func (d *anchoredWindowLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

// countAdmitted offers the requests at times (ns, sorted) one by one and
// returns how many are admitted: admitEvents's loop with direct calls.
func (d *anchoredWindowLimiter) countAdmitted(times []int64) (n int64) {
	for _, t := range times {
		if d.Allow(t) {
			n++
		}
	}
	return n
}

// countByLabel is AdmitByLabel's loop with direct calls.
func (d *anchoredWindowLimiter) countByLabel(ts []int64, labels []Stage, admitted *[4]int64) {
	for j, t := range ts {
		if d.Allow(t) {
			admitted[labels[j]&3]++
		}
	}
}

func (d *anchoredWindowLimiter) AllowN(t, n int64) int64 {
	if n <= 0 { // no hit, so no window opens
		return 0
	}
	d.advance(t)
	k := admitted(d.limit, d.hits, n)
	d.hits += n
	return k
}

// advance opens a window at t when the last one has expired.
func (d *anchoredWindowLimiter) advance(t int64) {
	if d.fresh || t >= d.resetNs {
		d.fresh, d.hits, d.resetNs = false, 0, t+d.windowNs
	}
}

func (d *anchoredWindowLimiter) peek(t int64) bool {
	c := *d
	return c.Allow(t)
}

func (d *anchoredWindowLimiter) charge(t int64) {
	d.advance(t)
	d.hits++
}

func (d *anchoredWindowLimiter) cloneInto(dst decider) decider { return copyInto(dst, d) }

// stateSize: the window end and hits.
func (d *anchoredWindowLimiter) stateSize(t int64) (bool, int64) {
	return !d.fresh && t < d.resetNs, 2 * wordBytes
}
