package model

import "math"

// Lockstep decides many policies of one state-dependent algorithm over one
// key's requests at once: the policies' parameters and states are held as
// structure of arrays, and each request (its time and label read once) is
// decided by every policy in turn, with no interface call per decision.
// Where a step is a few instructions (gcra, nginx) the order is turned
// round within chunks of lockstepChunk requests, each policy over the chunk
// with its state in registers, which measured faster (BenchmarkReplayBatch).
// Decisions are exactly those of each policy's Decider (NewDeciderAt with the
// same origin), which share their step arithmetic with it.
//
// Use: Reset at each key, then AdmitByLabel over the key's requests in
// order (in one call or in consecutive chunks).
type Lockstep interface {
	// Len is the number of policies.
	Len() int
	// Reset returns every policy to the state of a key never seen.
	Reset()
	// AdmitByLabel offers requests at times ts (ns since the origin, not
	// decreasing, and not before the previous call's since Reset) labelled
	// labels to every policy k, adding the admitted ones by label to
	// admitted[k] (len(admitted) >= Len()).
	AdmitByLabel(ts []int64, labels []Stage, admitted [][4]int64)
}

// maxLockstepLog bounds the log slots (the sum of the limits) of a
// sliding_window or concurrency lockstep, 8 MiB of times; larger batches
// run on Deciders.
const maxLockstepLog = 1 << 20

// NewLockstep returns a Lockstep for valid policies ps, all of one
// algorithm, with event times in ns since originNs (see NewDeciderAt). ok is
// false where there is none and Deciders must be used: mixed or count-based
// algorithms (those have their one-pass replay, CountFunc), distributed
// policies, and sliding logs whose limits add up to more than
// maxLockstepLog.
func NewLockstep(ps []Policy, originNs int64) (Lockstep, bool) {
	if len(ps) == 0 {
		return nil, false
	}
	alg := ps[0].Algorithm
	for _, p := range ps {
		if p.Algorithm != alg || p.Distributed() {
			return nil, false
		}
	}
	switch alg {
	case TokenBucket:
		return newBucketLockstep(ps)
	case GCRA:
		return newGCRALockstep(ps), true
	case Nginx:
		return newNginxLockstep(ps), true
	case SlidingWindow, Concurrency:
		return newWindowLockstep(ps)
	case SlidingCounter:
		return newCounterLockstep(ps, originNs), true
	}
	return nil, false
}

// bucketLockstep is token_bucket: each policy's small bucket
// (tokenBucketLimiter with small set), refilled by refillUnits. Where the
// Decider keeps its tokens at its last admission, the lockstep keeps them at
// the key's last request, rejected or not, so one elapsed time serves every
// policy: refilling by e1 then by e2, capped at capacity each time, is
// refilling by e1 + e2 (integers, no overflow), so decisions are the same.
type bucketLockstep struct {
	num, unit, fullU, safeNs []int64 // per policy: the bucket's constants
	tokensU                  []int64 // per policy: units at the key's last request
	lastNs                   int64   // the key's last request
	fresh                    bool
	minSafeNs                int64 // the least safeNs: shorter times refill by refillShort
}

func newBucketLockstep(ps []Policy) (Lockstep, bool) {
	n := len(ps)
	b := &bucketLockstep{num: make([]int64, n), unit: make([]int64, n), fullU: make([]int64, n),
		safeNs: make([]int64, n), tokensU: make([]int64, n), fresh: true, minSafeNs: math.MaxInt64}
	var d tokenBucketLimiter
	for k, p := range ps {
		d.configure(p)
		if !d.small {
			return newWideBucketLockstep(ps), true
		}
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
	n := len(b.num)
	num, unit, fullU, safeNs := b.num[:n], b.unit[:n], b.fullU[:n], b.safeNs[:n]
	tokensU, admitted := b.tokensU[:n], admitted[:n]
	if b.fresh {
		// A new key's bucket is full; full at its first request is the same.
		b.fresh, b.lastNs = false, ts[0]
		copy(tokensU, fullU)
	}
	labels = labels[:len(ts)]
	last := b.lastNs
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
	b.lastNs = last
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

// gcraLockstep is gcra: each policy's theoretical arrival time, stepped by
// gcraStep. A rejection leaves TAT as it is, which is max(TAT, t) then (it
// is past t): gcraStep's next TAT either way.
type gcraLockstep struct {
	periodNs, tauNs []int64 // per policy
	tat             []int64 // per policy, ns
	fresh           bool
}

func newGCRALockstep(ps []Policy) Lockstep {
	n := len(ps)
	g := &gcraLockstep{periodNs: make([]int64, n), tauNs: make([]int64, n), tat: make([]int64, n), fresh: true}
	var d gcraLimiter
	for k, p := range ps {
		d.configure(p)
		g.periodNs[k], g.tauNs[k] = d.periodNs, d.tauNs
	}
	return g
}

func (g *gcraLockstep) Len() int { return len(g.tat) }
func (g *gcraLockstep) Reset()   { g.fresh = true }

func (g *gcraLockstep) AdmitByLabel(ts []int64, labels []Stage, admitted [][4]int64) {
	if len(ts) == 0 {
		return
	}
	n := len(g.tat)
	periodNs, tauNs, tat, admitted := g.periodNs[:n], g.tauNs[:n], g.tat[:n], admitted[:n]
	if g.fresh {
		// A new key's TAT is its first request's time (gcraLimiter.Allow).
		g.fresh = false
		for k := range tat {
			tat[k] = ts[0]
		}
	}
	labels = labels[:len(ts)]
	// Each policy over a chunk of requests with its TAT in a register: its
	// step is too cheap for the request-outer order to pay.
	for lo := 0; lo < len(ts); lo += lockstepChunk {
		chunk, lab := ts[lo:min(lo+lockstepChunk, len(ts))], labels[lo:min(lo+lockstepChunk, len(ts))]
		lab = lab[:len(chunk)]
		for k := range tat {
			x, period, tau := tat[k], periodNs[k], tauNs[k]
			adm := &admitted[k]
			for j, t := range chunk {
				var ok bool
				if x, ok = gcraStep(x, t, period, tau); ok {
					adm[lab[j]&3]++
				}
			}
			tat[k] = x
		}
	}
}

// lockstepChunk is how many requests a policy-outer lockstep offers each
// policy in turn (4 KiB of times, in the L1 cache).
const lockstepChunk = 512

// nginxLockstep is nginx limit_req (its admissions; delays do not change
// them): each policy's excess and clock, stepped by nginxExcess.
type nginxLockstep struct {
	rateM, burstM, idleMs []int64 // per policy
	excess, lastMs        []int64 // per policy
	fresh                 bool
}

func newNginxLockstep(ps []Policy) Lockstep {
	n := len(ps)
	g := &nginxLockstep{rateM: make([]int64, n), burstM: make([]int64, n), idleMs: make([]int64, n),
		excess: make([]int64, n), lastMs: make([]int64, n), fresh: true}
	var d nginxLimiter
	for k, p := range ps {
		d.configure(p)
		g.rateM[k], g.burstM[k], g.idleMs[k] = d.rateM, d.burstM, d.idleMs
	}
	return g
}

func (g *nginxLockstep) Len() int { return len(g.excess) }
func (g *nginxLockstep) Reset()   { g.fresh = true }

func (g *nginxLockstep) AdmitByLabel(ts []int64, labels []Stage, admitted [][4]int64) {
	if len(ts) == 0 {
		return
	}
	n := len(g.excess)
	rateM, burstM, idleMs := g.rateM[:n], g.burstM[:n], g.idleMs[:n]
	excess, lastMs, admitted := g.excess[:n], g.lastMs[:n], admitted[:n]
	labels = labels[:len(ts)]
	if g.fresh {
		// A new key's first request passes with excess 0 (nginxLimiter.Allow).
		g.fresh = false
		now, l := ts[0]/1e6, labels[0]&3
		for k := range excess {
			excess[k], lastMs[k] = 0, now
			admitted[k][l]++
		}
		ts, labels = ts[1:], labels[1:]
	}
	// Each chunk's times decoded to nginx's milliseconds once, then each
	// policy over them with its state in registers, as gcraLockstep.
	var nowMs [lockstepChunk]int64
	for lo := 0; lo < len(ts); lo += lockstepChunk {
		chunk, lab := ts[lo:min(lo+lockstepChunk, len(ts))], labels[lo:min(lo+lockstepChunk, len(ts))]
		lab = lab[:len(chunk)]
		ms := nowMs[:len(chunk)]
		for j, t := range chunk {
			ms[j] = t / 1e6
		}
		for k := range excess {
			x, m, rate, idle, burst := excess[k], lastMs[k], rateM[k], idleMs[k], burstM[k]
			adm := &admitted[k]
			for j, now := range ms {
				if e := nginxExcess(x, now-m, rate, idle); e <= burst {
					x, m = e, now
					adm[lab[j]&3]++
				}
			}
			excess[k], lastMs[k] = x, m
		}
	}
}

// windowLockstep is sliding_window and concurrency (slidingLogLimiter
// without countRejected): each policy logs the times of its admitted
// requests in (t − window, t], at most limit of them, so its log is a ring
// of limit slots in one shared buffer.
type windowLockstep struct {
	windowNs, limit []int64 // per policy
	off             []int   // per policy: its ring's first slot in log
	head, size      []int64 // per policy: the ring's oldest slot (0 <= head < limit) and entries
	log             []int64 // admitted times, ns
}

func newWindowLockstep(ps []Policy) (Lockstep, bool) {
	n := len(ps)
	w := &windowLockstep{windowNs: make([]int64, n), limit: make([]int64, n), off: make([]int, n),
		head: make([]int64, n), size: make([]int64, n)}
	var d slidingLogLimiter
	slots := 0
	for k, p := range ps {
		d.configure(p)
		if d.countRejected || d.limit > maxLockstepLog-int64(slots) {
			return nil, false
		}
		w.windowNs[k], w.limit[k], w.off[k] = d.windowNs, d.limit, slots
		slots += int(d.limit)
	}
	w.log = make([]int64, slots)
	return w, true
}

func (w *windowLockstep) Len() int { return len(w.limit) }
func (w *windowLockstep) Reset()   { clear(w.size) }

func (w *windowLockstep) AdmitByLabel(ts []int64, labels []Stage, admitted [][4]int64) {
	n := len(w.limit)
	windowNs, limit, off := w.windowNs[:n], w.limit[:n], w.off[:n]
	head, size, admitted := w.head[:n], w.size[:n], admitted[:n]
	labels = labels[:len(ts)]
	log := w.log
	for j, t := range ts {
		l := labels[j] & 3
		for k := range limit {
			h, n, lim, o := head[k], size[k], limit[k], off[k]
			// expire the entries at times <= t − window
			for cut := t - windowNs[k]; n > 0 && log[o+int(h)] <= cut; n-- {
				if h++; h == lim {
					h = 0
				}
			}
			if n < lim {
				p := h + n
				if p >= lim {
					p -= lim
				}
				log[o+int(p)] = t
				n++
				admitted[k][l]++
			}
			head[k], size[k] = h, n
		}
	}
}

// counterLockstep is sliding_counter: each policy's window and counts,
// moved by counterWindow when a request is past the window (its start is
// the same for every time before), estimated by counterEstimate.
type counterLockstep struct {
	sizeNs, phaseNs, limit []int64 // per policy (phase as NewDeciderAt puts it)
	start, prev, curr      []int64 // per policy
	fresh                  bool
}

func newCounterLockstep(ps []Policy, originNs int64) Lockstep {
	n := len(ps)
	c := &counterLockstep{sizeNs: make([]int64, n), phaseNs: make([]int64, n), limit: make([]int64, n),
		start: make([]int64, n), prev: make([]int64, n), curr: make([]int64, n), fresh: true}
	var d slidingCounterLimiter
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
	n := len(c.limit)
	sizeNs, phaseNs, limit := c.sizeNs[:n], c.phaseNs[:n], c.limit[:n]
	start, prev, curr, admitted := c.start[:n], c.prev[:n], c.curr[:n], admitted[:n]
	if c.fresh {
		// A new key's window is its first request's, with nothing counted.
		c.fresh = false
		for k := range start {
			start[k], prev[k], curr[k] = counterWindowStart(ts[0], phaseNs[k], sizeNs[k]), 0, 0
		}
	}
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
