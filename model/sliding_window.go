package model

import "fmt"

// slidingWindowAlgorithm is sliding_window, the lesson's sliding window: a
// request is admitted while fewer than limit requests were admitted in the
// last window_s seconds; rejected requests are not counted (as in the lesson). Its
// decider is the sliding log of admitted requests (sliding_log.go).
var slidingWindowAlgorithm = Descriptor{
	Name: "sliding_window", Title: "sliding window", Family: WindowFamily, Lesson: true, ColorSlot: 1,
	Example:  "sliding_window window_s=60 limit=600",
	Params:   []string{"window_s", "limit"},
	Cost:     80,
	Validate: validateWindow,
	Label:    func(p Policy) string { return fmt.Sprintf("sliding window %d s", p.WindowS) },
	Why: func(p Policy) string {
		return fmt.Sprintf("cut when %d requests were admitted in the last %d s", p.Limit, p.WindowS)
	},
	Bound: func(p Policy, a []float64) string { return windowBound(p, a, false) },
	blank: func() decider { return &slidingLogLimiter{} },
	kernel: func(p Policy, a, adm []int32) int64 {
		return slidingWindow(a, adm, p.Limit, p.WindowS)
	},
	lockstep: func(ps []Policy, _ int64) (Lockstep, bool) { return newWindowLockstep(ps) },
}

// slidingWindow admits min(a, limit - admitted in the previous window-1 seconds).
// Rejected requests are not counted. A running sum keeps it O(len(a)).
func slidingWindow(a, adm []int32, limit int64, window int) int64 {
	var total, inWindow int64 // inWindow = sum(adm[t-window+1 .. t-1])
	for t, x := range a {
		n := min(int64(x), max(0, limit-inWindow))
		adm[t] = int32(n)
		total += n
		inWindow += n
		if old := t - window + 1; old >= 0 {
			inWindow -= int64(adm[old])
		}
	}
	return total
}

// windowLockstep is sliding_window and concurrency (slidingLogLimiter
// without countRejected): each policy keeps the times of its last limit
// admitted requests, a ring of limit slots in one shared buffer. Fewer than
// limit of them fall in (t − window, t] iff the oldest does not, so a
// decision reads one slot, and nothing expires.
type windowLockstep struct {
	windowNs, limit []int64 // per policy (sorted)
	off             []int   // per policy: its ring's first slot in log
	head, size      []int64 // per policy: the ring's oldest slot (0 <= head < limit) and its entries (<= limit)
	log             []int64 // admitted times, ns
	sortedPolicies          // groups of one window, by limit
}

func newWindowLockstep(ps []Policy) (Lockstep, bool) {
	n := len(ps)
	var d slidingLogLimiter
	slots := 0
	for _, p := range ps {
		d.configure(p)
		if d.countRejected || d.limit > maxLockstepLog-int64(slots) {
			return nil, false
		}
		slots += int(d.limit)
	}
	ps, sp := sortPolicies(ps, func(p Policy) [2]int64 {
		d.configure(p)
		return [2]int64{d.windowNs}
	}, func(p Policy) int64 { return p.Limit })
	w := &windowLockstep{windowNs: make([]int64, n), limit: make([]int64, n), off: make([]int, n),
		head: make([]int64, n), size: make([]int64, n), log: make([]int64, slots), sortedPolicies: sp}
	slots = 0
	for k, p := range ps {
		d.configure(p)
		w.windowNs[k], w.limit[k], w.off[k] = d.windowNs, d.limit, slots
		slots += int(d.limit)
	}
	return w, true
}

func (w *windowLockstep) Len() int { return len(w.limit) }
func (w *windowLockstep) Reset()   { clear(w.size) }

func (w *windowLockstep) AdmitByLabel(ts []int64, labels []Stage, admitted [][4]int64) {
	for _, g := range w.groups {
		w.run(g[0], g[1], ts, labels)
	}
	w.fold(admitted)
}

// AdmitKey settles the policies of each window whose limit admits the
// whole key: with nothing rejected, the log before request j holds the
// c_j requests of the window before it, so every request is admitted iff
// the limit is above max c_j.
func (w *windowLockstep) AdmitKey(ts []int64, labels []Stage, offered *[4]int64, admitted [][4]int64) {
	w.Reset()
	for _, g := range w.groups {
		maxC := maxInWindow(ts, w.windowNs[g[0]])
		a := g[0]
		for a < g[1] && w.limit[a] <= maxC {
			a++
		}
		w.run(g[0], a, ts, labels)
		w.admitAll(a, g[1], offered)
	}
	w.fold(admitted)
}

// maxInWindow is the most requests of ts (ns, not decreasing) before one of
// them and after its time − windowNs.
func maxInWindow(ts []int64, windowNs int64) int64 {
	i, m := 0, 0
	for j, t := range ts {
		for cut := t - windowNs; i < j && ts[i] <= cut; i++ {
		}
		m = max(m, j-i)
	}
	return int64(m)
}

// run steps sorted policies [lo, hi) of one group (one window) over ts.
func (w *windowLockstep) run(lo, hi int, ts []int64, labels []Stage) {
	if lo == hi {
		return
	}
	windowNs, limit, off := w.windowNs[lo], w.limit[lo:hi], w.off[lo:hi]
	head, size, admitted := w.head[lo:hi], w.size[lo:hi], w.adm[lo:hi]
	n := len(limit)
	off, head, size, admitted = off[:n], head[:n], size[:n], admitted[:n]
	labels = labels[:len(ts)]
	log := w.log
	for j, t := range ts {
		l := labels[j] & 3
		cut := t - windowNs // admitted times <= cut are out of the window
		for k, lim := range limit {
			h, o := head[k], off[k]
			if n := size[k]; n < lim {
				size[k] = n + 1 // fewer than limit admitted since the key began
			} else if lim == 0 || log[o+int(h)] > cut {
				continue // limit admissions in the window
			}
			log[o+int(h)] = t
			if h++; h == lim {
				h = 0
			}
			head[k] = h
			admitted[k][l]++
		}
	}
}
