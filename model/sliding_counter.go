package model

import "fmt"

// slidingCounterAlgorithm is sliding_counter, Cloudflare's sliding window
// counter (RussellLuo/slidingwindow): the previous window's count weighted
// by its overlap with the last window_s seconds.
var slidingCounterAlgorithm = Descriptor{
	Name: "sliding_counter", Family: WindowFamily, ColorSlot: 4,
	Example:  "sliding_counter window_s=60 limit=600",
	Params:   []string{"window_s", "limit"},
	Cost:     250,
	Validate: validateWindow,
	Label:    func(p Policy) string { return fmt.Sprintf("sliding counter %d s", p.WindowS) },
	Why: func(p Policy) string {
		return fmt.Sprintf("cut when the weighted count of the last two %d s windows reaches %d", p.WindowS, p.Limit)
	},
	Bound: func(p Policy, a []float64) string { return windowBound(p, a, false) },
	blank: func() decider { return &slidingCounterLimiter{} },
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

// countAdmitted offers the requests at times (ns, sorted) one by one and
// returns how many are admitted: admitEvents's loop with direct calls.
func (d *slidingCounterLimiter) countAdmitted(times []int64) (n int64) {
	for _, t := range times {
		if d.Allow(t) {
			n++
		}
	}
	return n
}

// countByLabel is AdmitByLabel's loop with direct calls.
func (d *slidingCounterLimiter) countByLabel(ts []int64, labels []Stage, admitted *[4]int64) {
	for j, t := range ts {
		if d.Allow(t) {
			admitted[labels[j]&3]++
		}
	}
}

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

// counterLockstep is sliding_counter: each policy's window and counts,
// moved by counterWindow when a request is past the window (its start is
// the same for every time before), estimated by counterEstimate.
type counterLockstep struct {
	sizeNs, phaseNs, limit []int64 // per policy (sorted; phase as NewDeciderAt puts it)
	start, prev, curr      []int64 // per policy
	fresh                  bool
	sortedPolicies         // groups of one window and phase, by limit
}

func newCounterLockstep(ps []Policy, originNs int64) Lockstep {
	n := len(ps)
	var d slidingCounterLimiter
	ps, sp := sortPolicies(ps, func(p Policy) [2]int64 {
		d.configure(p)
		atOrigin(&d, originNs)
		return [2]int64{d.sizeNs, d.phaseNs}
	}, func(p Policy) int64 { return p.Limit })
	c := &counterLockstep{sizeNs: make([]int64, n), phaseNs: make([]int64, n), limit: make([]int64, n),
		start: make([]int64, n), prev: make([]int64, n), curr: make([]int64, n), fresh: true, sortedPolicies: sp}
	for k, p := range ps {
		d.configure(p)
		atOrigin(&d, originNs)
		c.sizeNs[k], c.phaseNs[k], c.limit[k] = d.sizeNs, d.phaseNs, d.limit
	}
	return c
}

func (c *counterLockstep) Len() int { return len(c.limit) }
func (c *counterLockstep) Reset()   { c.fresh = true }

func (c *counterLockstep) AdmitByLabel(ts []int64, labels []Stage, admitted [][4]int64) {
	if len(ts) == 0 {
		return
	}
	if c.fresh {
		c.fresh = false
		c.first(0, len(c.limit), ts[0])
	}
	c.run(0, len(c.limit), ts, labels)
	c.fold(admitted)
}

// first starts a new key's window for sorted policies [lo, hi): its first
// request's, with nothing counted.
func (c *counterLockstep) first(lo, hi int, t int64) {
	for k := lo; k < hi; k++ {
		c.start[k], c.prev[k], c.curr[k] = counterWindowStart(t, c.phaseNs[k], c.sizeNs[k]), 0, 0
	}
}

// AdmitKey settles the policies of each window whose limit admits the whole
// key: with nothing rejected, the counts and so the estimate before each
// request do not depend on the limit, and a request is admitted iff its
// estimate is below the limit.
func (c *counterLockstep) AdmitKey(ts []int64, labels []Stage, offered *[4]int64, admitted [][4]int64) {
	c.fresh = true
	if len(ts) == 0 {
		return
	}
	for _, g := range c.groups {
		size, phase := c.sizeNs[g[0]], c.phaseNs[g[0]]
		start, prev, curr, maxE := counterWindowStart(ts[0], phase, size), int64(0), int64(0), int64(0)
		for _, t := range ts {
			if t-start >= size {
				start, prev, curr = counterWindow(t, phase, size, start, prev, curr)
			}
			maxE = max(maxE, counterEstimate(t, size, start, prev, curr))
			curr++
		}
		a := g[0]
		for a < g[1] && c.limit[a] <= maxE {
			a++
		}
		c.first(g[0], a, ts[0])
		c.run(g[0], a, ts, labels)
		c.admitAll(a, g[1], offered)
	}
	c.fold(admitted)
}

// run steps sorted policies [lo, hi) over ts.
func (c *counterLockstep) run(lo, hi int, ts []int64, labels []Stage) {
	sizeNs, phaseNs, limit := c.sizeNs[lo:hi], c.phaseNs[lo:hi], c.limit[lo:hi]
	start, prev, curr, admitted := c.start[lo:hi], c.prev[lo:hi], c.curr[lo:hi], c.adm[lo:hi]
	n := len(limit)
	sizeNs, phaseNs, start, prev, curr, admitted = sizeNs[:n], phaseNs[:n], start[:n], prev[:n], curr[:n], admitted[:n]
	labels = labels[:len(ts)]
	for j, t := range ts {
		l := labels[j] & 3
		for k := range limit {
			if t-start[k] >= sizeNs[k] {
				start[k], prev[k], curr[k] = counterWindow(t, phaseNs[k], sizeNs[k], start[k], prev[k], curr[k])
			}
			if counterEstimate(t, sizeNs[k], start[k], prev[k], curr[k]) < limit[k] {
				curr[k]++
				admitted[k][l]++
			}
		}
	}
}
