package model

import "fmt"

// slidingCounterAlgorithm is sliding_counter, Cloudflare's sliding window
// counter (RussellLuo/slidingwindow): the previous window's count weighted
// by its overlap with the last window_s seconds.
var slidingCounterAlgorithm = Descriptor{
	Name: "sliding_counter", Family: WindowFamily, ColorSlot: 4,
	Params:   []string{"window_s", "limit"},
	Cost:     250,
	Validate: validateWindow,
	Label:    func(p Policy) string { return fmt.Sprintf("sliding counter %d s", p.WindowS) },
	Why: func(p Policy) string {
		return fmt.Sprintf("cut when the weighted count of the last two %d s windows reaches %d", p.WindowS, p.Limit)
	},
	Bound:      func(p Policy, a []float64) string { return windowBound(p, a, false) },
	newDecider: func() decider { return &slidingCounterLimiter{} },
	lockstep: func(ps []Policy, originNs int64) (Lockstep, bool) {
		return newCounterLockstep(ps, originNs), true
	},
}

var _ decider = (*slidingCounterLimiter)(nil)

// slidingCounterLimiter is sliding_counter as in RussellLuo/slidingwindow
// (Cloudflare's sliding window counter): windows [phase + k·W, phase +
// (k+1)·W) (phase 0 in scenarios; NewDeciderAt puts them on the Unix epoch)
// count admitted requests; at t in the current window the estimate is
// floor(w·prev) + curr with w = (W - (t - start))/W, and a request is
// admitted iff estimate + 1 <= limit. Rejected requests are not counted. The
// float arithmetic is the library's, so decisions agree exactly.
type slidingCounterLimiter struct {
	limit, sizeNs     int64
	phaseNs           int64 // windows start at phaseNs + k·sizeNs, 0 <= phaseNs < sizeNs
	fresh             bool
	start, prev, curr int64 // current window start (ns); admitted in the previous and current windows
}

func (d *slidingCounterLimiter) configure(p Policy) {
	d.limit, d.sizeNs, d.phaseNs = p.Limit, int64(p.WindowS)*secondNs, 0
	d.Reset()
}

func (d *slidingCounterLimiter) Reset()             { d.fresh = true }
func (d *slidingCounterLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

// advance moves the current window to t's, keeping the count of the window
// just before it as prev (0 when a whole window passed without requests).
func (d *slidingCounterLimiter) advance(t int64) {
	if d.fresh {
		d.fresh, d.start, d.prev, d.curr = false, counterWindowStart(t, d.phaseNs, d.sizeNs), 0, 0
	} else {
		d.start, d.prev, d.curr = counterWindow(t, d.phaseNs, d.sizeNs, d.start, d.prev, d.curr)
	}
}

func (d *slidingCounterLimiter) AllowN(t, n int64) int64 {
	d.advance(t)
	k := admitted(d.limit, counterEstimate(t, d.sizeNs, d.start, d.prev, d.curr), n)
	d.curr += k
	return k
}

// counterWindowStart is the start of t's sliding_counter window, ns.
func counterWindowStart(t, phaseNs, sizeNs int64) int64 {
	return floorDiv(t-phaseNs, sizeNs)*sizeNs + phaseNs
}

// counterWindow moves sliding_counter's current window (start, with prev
// and curr admitted in the one before and in it) to t's, keeping curr as
// prev when t's window is the next one, 0 when a whole window passed.
// (slidingCounterLimiter and counterLockstep share it.)
func counterWindow(t, phaseNs, sizeNs, start, prev, curr int64) (int64, int64, int64) {
	s := counterWindowStart(t, phaseNs, sizeNs)
	if gap := (s - start) / sizeNs; gap >= 1 {
		prev = 0
		if gap == 1 {
			prev = curr
		}
		return s, prev, 0
	}
	return start, prev, curr
}

// counterEstimate is sliding_counter's count at t in the window starting at
// start: floor(w·prev) + curr, w = (size − (t − start))/size, in the
// library's float arithmetic.
func counterEstimate(t, sizeNs, start, prev, curr int64) int64 {
	weight := float64(sizeNs-(t-start)) / float64(sizeNs)
	return int64(weight*float64(prev)) + curr
}

// atOrigin puts the windows at k·window_s of the clock whose 0 is originNs
// ns before the times' 0 (the Unix epoch for a log: NewDeciderAt).
func (d *slidingCounterLimiter) atOrigin(originNs int64) {
	d.phaseNs = floorMod(-originNs, d.sizeNs)
}

func (d *slidingCounterLimiter) peek(t int64) bool {
	c := *d
	return c.Allow(t)
}

func (d *slidingCounterLimiter) charge(t int64) {
	d.advance(t)
	d.curr++
}

func (d *slidingCounterLimiter) cloneInto(dst decider) decider { return copyInto(dst, d) }

// stateSize: the window start, previous and current counts.
func (d *slidingCounterLimiter) stateSize(t int64) (bool, int64) {
	return !d.fresh && t < d.start+2*d.sizeNs && d.prev+d.curr > 0, 3 * wordBytes
}
