package model

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

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
// Use: AdmitKey with each key's requests (the replay), or Reset at each key
// and then AdmitByLabel over its requests in order, in one call or in
// consecutive chunks.
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
	// AdmitKey is Reset, then AdmitByLabel over all of one key's requests;
	// offered is their count by label. Knowing the whole key, a lockstep
	// settles at once the policies that admit every request of it (see
	// sortedPolicies) and steps only the others.
	AdmitKey(ts []int64, labels []Stage, offered *[4]int64, admitted [][4]int64)
}

// sortedPolicies orders a lockstep's policies by group, policies whose
// every-request-admitted test is one pass over a key (one window, one
// rate), and within a group by size (limit, capacity). Where every admitted
// request leaves the next state as it would be had nothing been rejected,
// the state of a key that no policy has limited yet does not depend on the
// size, so one pass gives the least size that admits the whole key, and
// only the policies below it need stepping: under a skewed key
// distribution most keys are far below most limits.
type sortedPolicies struct {
	orig   []int      // sorted position -> the caller's policy index
	groups [][2]int   // [lo, hi) of each group, in sorted positions
	adm    [][4]int64 // admissions by sorted position, per call
}

// sortPolicies returns ps sorted by (group, size) and the order, where
// group and size are cmp-ordered keys of a policy.
func sortPolicies(ps []Policy, group func(Policy) [2]int64, size func(Policy) int64) ([]Policy, sortedPolicies) {
	n := len(ps)
	sp := sortedPolicies{orig: make([]int, n), adm: make([][4]int64, n)}
	for k := range sp.orig {
		sp.orig[k] = k
	}
	slices.SortStableFunc(sp.orig, func(a, b int) int {
		ga, gb := group(ps[a]), group(ps[b])
		if c := cmp.Compare(ga[0], gb[0]); c != 0 {
			return c
		}
		if c := cmp.Compare(ga[1], gb[1]); c != 0 {
			return c
		}
		return cmp.Compare(size(ps[a]), size(ps[b]))
	})
	sorted := make([]Policy, n)
	for i, k := range sp.orig {
		sorted[i] = ps[k]
	}
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && group(sorted[hi]) == group(sorted[lo]) {
			hi++
		}
		sp.groups = append(sp.groups, [2]int{lo, hi})
		lo = hi
	}
	return sorted, sp
}

// admitAll settles sorted positions [lo, hi): they admit every request
// offered.
func (sp *sortedPolicies) admitAll(lo, hi int, offered *[4]int64) {
	for k := lo; k < hi; k++ {
		sp.adm[k] = *offered
	}
}

// fold adds the admissions by sorted position to admitted by the caller's
// index and clears them.
func (sp *sortedPolicies) fold(admitted [][4]int64) {
	for i, k := range sp.orig {
		a := &sp.adm[i]
		admitted[k][0] += a[0]
		admitted[k][1] += a[1]
		admitted[k][2] += a[2]
		admitted[k][3] += a[3]
		*a = [4]int64{}
	}
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
		if p.Algorithm != alg || p.Distributed() || p.modified() {
			return nil, false
		}
	}
	if f := alg.Describe().lockstep; f != nil {
		return f(ps, originNs)
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

// gcraLockstep is gcra: each policy's theoretical arrival time, stepped by
// gcraStep. A rejection leaves TAT as it is, which is max(TAT, t) then (it
// is past t): gcraStep's next TAT either way.
type gcraLockstep struct {
	periodNs, tauNs []int64 // per policy (sorted)
	tat             []int64 // per policy, ns
	fresh           bool
	sortedPolicies  // groups of one period, by capacity
}

func newGCRALockstep(ps []Policy) Lockstep {
	n := len(ps)
	var d gcraLimiter
	ps, sp := sortPolicies(ps, func(p Policy) [2]int64 {
		d.configure(p)
		return [2]int64{d.periodNs}
	}, func(p Policy) int64 { return p.Capacity })
	g := &gcraLockstep{periodNs: make([]int64, n), tauNs: make([]int64, n), tat: make([]int64, n), fresh: true,
		sortedPolicies: sp}
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
	if g.fresh {
		// A new key's TAT is its first request's time (gcraLimiter.Allow).
		g.fresh = false
		for k := range g.tat {
			g.tat[k] = ts[0]
		}
	}
	g.run(0, len(g.tat), ts, labels)
	g.fold(admitted)
}

// AdmitKey settles the policies of each period whose tolerance admits the
// whole key: with nothing rejected, TAT_j = max(TAT_{j-1}, t_{j-1}) +
// period does not depend on the capacity, and request j is admitted iff
// max(TAT_j, t_j) − t_j <= tau.
func (g *gcraLockstep) AdmitKey(ts []int64, labels []Stage, offered *[4]int64, admitted [][4]int64) {
	g.fresh = true
	if len(ts) == 0 {
		return
	}
	for _, gr := range g.groups {
		period := g.periodNs[gr[0]]
		var ahead int64
		tat := ts[0]
		for _, t := range ts {
			tat = max(tat, t)
			ahead = max(ahead, tat-t)
			tat += period
		}
		a := gr[0]
		for a < gr[1] && g.tauNs[a] < ahead {
			a++
		}
		for k := gr[0]; k < a; k++ {
			g.tat[k] = ts[0]
		}
		g.run(gr[0], a, ts, labels)
		g.admitAll(a, gr[1], offered)
	}
	g.fold(admitted)
}

// run steps sorted policies [lo, hi) over ts. Each policy goes over a chunk
// of requests with its TAT in a register: its step is too cheap for the
// request-outer order to pay.
func (g *gcraLockstep) run(lo, hi int, ts []int64, labels []Stage) {
	periodNs, tauNs, tat, admitted := g.periodNs[lo:hi], g.tauNs[lo:hi], g.tat[lo:hi], g.adm[lo:hi]
	labels = labels[:len(ts)]
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
	rateM, burstM, idleMs []int64 // per policy (sorted)
	excess, lastMs        []int64 // per policy
	fresh                 bool
	sortedPolicies        // groups of one rate, by burst
}

func newNginxLockstep(ps []Policy) Lockstep {
	n := len(ps)
	var d nginxLimiter
	ps, sp := sortPolicies(ps, func(p Policy) [2]int64 {
		d.configure(p)
		return [2]int64{d.rateM}
	}, func(p Policy) int64 { return p.Burst })
	g := &nginxLockstep{rateM: make([]int64, n), burstM: make([]int64, n), idleMs: make([]int64, n),
		excess: make([]int64, n), lastMs: make([]int64, n), fresh: true, sortedPolicies: sp}
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
	labels = labels[:len(ts)]
	if g.fresh {
		g.fresh = false
		ts, labels = g.first(0, len(g.excess), ts, labels)
	}
	g.run(0, len(g.excess), ts, labels)
	g.fold(admitted)
}

// first admits a new key's first request for sorted policies [lo, hi), with
// excess 0 (nginxLimiter.Allow), and returns the requests after it.
func (g *nginxLockstep) first(lo, hi int, ts []int64, labels []Stage) ([]int64, []Stage) {
	now, l := ts[0]/1e6, labels[0]&3
	for k := lo; k < hi; k++ {
		g.excess[k], g.lastMs[k] = 0, now
		g.adm[k][l]++
	}
	return ts[1:], labels[1:]
}

// AdmitKey settles the policies of each rate whose burst admits the whole
// key: with nothing rejected, the excess after each request (nginxExcess;
// its cap on the idle time only ever turns an excess within the burst to
// 0, as no cap does) does not depend on the burst, and a request is
// admitted iff its excess is within the burst.
func (g *nginxLockstep) AdmitKey(ts []int64, labels []Stage, offered *[4]int64, admitted [][4]int64) {
	g.fresh = true
	if len(ts) == 0 {
		return
	}
	labels = labels[:len(ts)]
	for _, gr := range g.groups {
		rateM := g.rateM[gr[0]]
		var x, maxX int64
		last := ts[0] / 1e6
		for _, t := range ts[1:] {
			now := t / 1e6
			// nginxExcess with an idle cap past which any excess drains to 0
			x = nginxExcess(x, now-last, rateM, (x+1000)*1000/rateM+1)
			last = now
			maxX = max(maxX, x)
		}
		a := gr[0]
		for a < gr[1] && g.burstM[a] < maxX {
			a++
		}
		rest, restLabels := g.first(gr[0], a, ts, labels)
		g.run(gr[0], a, rest, restLabels)
		g.admitAll(a, gr[1], offered)
	}
	g.fold(admitted)
}

// run steps sorted policies [lo, hi) over ts, after their first request.
// Each chunk's times are decoded to nginx's milliseconds once, then each
// policy goes over them with its state in registers, as gcraLockstep.
func (g *nginxLockstep) run(lo, hi int, ts []int64, labels []Stage) {
	rateM, burstM, idleMs := g.rateM[lo:hi], g.burstM[lo:hi], g.idleMs[lo:hi]
	excess, lastMs, admitted := g.excess[lo:hi], g.lastMs[lo:hi], g.adm[lo:hi]
	labels = labels[:len(ts)]
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
