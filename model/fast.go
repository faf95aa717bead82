package model

import (
	"math"
	"math/bits"
	"slices"
)

// Fast paths: closed forms of the step-by-step kernels in limiter.go for
// piecewise-constant (fluid) workloads. Each returns exactly what Admit
// returns (proven by the property tests in fast_test.go); Admit stays the
// reference.
//
//   - fixed_window: a window admits min(window sum, limit), so the total is
//     Σ_k min(S_k, L). The window sums S_k do not depend on the limit: per
//     (client, window) they are sorted once and each limit is a binary search.
//   - sliding_window: the cumulative admitted A(t) obeys the min-plus
//     recurrence A(t+1) = min(A(t) + a_t, A(t-W+1) + L), A(t <= 0) = 0. Its
//     solution is A(D) = min_k (k·L + C − g(k)), where C is the offered total
//     and g(k) the most offered requests that k disjoint windows of W seconds
//     (the first may start before 0) can cover. g does not depend on the
//     limit: per (client, window) a dynamic programme computes it once, and
//     each limit is a binary search on the upper concave hull of g. Until
//     the table pays for itself (below), a point runs the run-by-run kernel
//     of slide.go: the admitted series is W-periodic from 2W seconds into a
//     run of constant offered requests, so a point costs O(runs·W), not O(D).
//   - token_bucket: per run of constant offered requests the bucket is in one
//     of a few regimes (filling, draining, empty), each with a closed form, so
//     a point costs O(runs), for every rate and capacity: the arithmetic is
//     the reference's exact fractions (exact.go), with 128-bit products.
//
// Tables built for one (algorithm, window) are cached per simulator. A table
// is built on the key's second use when that is cheap (cheapBuild), else only
// after the points that used the key have spent as much as the build costs
// (ski rental), so a grid that rarely repeats a window never costs much more
// than the reference.

// run is a stretch of n seconds with x offered requests in each second.
type run struct {
	n int64
	x int64
}

// fastKey identifies a cached table.
type fastKey struct {
	alg    Algorithm
	window int
	phase  int // fixed_window phase_s
}

// fastEntry is one key's tables, or the cost spent on it so far.
type fastEntry struct {
	spent, build int64 // reference-equivalent work spent on the key; cost of building
	pointCost    int64 // work of one point without tables, once measured (0: not yet)
	uses         int
	built        bool
	fixed        []fixedTable // per client (fixed_window, and sliding_window with W = 1)
	hulls        []slideHull  // per client (sliding_window)
}

// fixedTable answers Σ_k min(S_k, L) over one client's window sums S_k.
type fixedTable struct {
	vals   []int64 // distinct window sums, ascending
	preSum []int64 // preSum[i] = Σ_{j<i} vals[j]·count[j]
	preCnt []int64 // preCnt[i] = Σ_{j<i} count[j]
	n      int64   // windows
}

// admitted returns Σ min(S_k, limit).
func (f *fixedTable) admitted(limit int64) int64 {
	lo, hi := 0, len(f.vals) // first index with vals[i] > limit
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if f.vals[m] <= limit {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return f.preSum[lo] + limit*(f.n-f.preCnt[lo])
}

// admittedFrom is admitted(limit) for a caller that knows that every
// vals[j] with j < lo is <= limit (0 always is; the lo it returned for a
// smaller limit is): it returns the sum and the first index with vals >
// limit, found in one comparison when the limits step past few sums.
func (f *fixedTable) admittedFrom(limit int64, lo int) (int64, int) {
	if lo < len(f.vals) && f.vals[lo] <= limit {
		hi := len(f.vals)
		for lo++; lo < hi; {
			m := int(uint(lo+hi) >> 1)
			if f.vals[m] <= limit {
				lo = m + 1
			} else {
				hi = m
			}
		}
	}
	return f.preSum[lo] + limit*(f.n-f.preCnt[lo]), lo
}

// slideHull is the upper concave hull of g(k) for one client and window.
type slideHull struct {
	k, g    []int64 // hull vertices, k ascending
	offered int64   // C
}

// admitted returns C − max_k (g(k) − k·limit).
func (h *slideHull) admitted(limit int64) int64 {
	if limit >= h.offered {
		return h.offered // k = 0 is optimal: every slope is <= C
	}
	// First vertex i whose next edge does not gain: g[i+1]-g[i] <= limit·(k[i+1]-k[i]).
	lo, hi := 0, len(h.k)-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if h.g[m+1]-h.g[m] > limit*(h.k[m+1]-h.k[m]) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return h.offered - (h.g[lo] - h.k[lo]*limit)
}

// fastSim is a simulator's state for the fast paths.
type fastSim struct {
	w       *Workload
	runs    [][]run // per client: run-length encoding of the offered series
	safe    bool    // offered totals × duration fit in int64 comfortably
	cache   map[fastKey]*fastEntry
	last    *fastEntry
	lastKey fastKey
	sums    []int64 // scratch: window sums
	prev    []int64 // scratch: DP rows and prefix sums
	cur     []int64
	pre     []int64
	gk      []int64
	lv, lk  []int64 // scratch: bestWindows
	lc      []int64
	ring    []int64 // scratch: slidingRuns
	rate    float64 // token_bucket: the last rate seen and its exact fraction
	ratio   ratio
}

// cheapBuild is the build cost (reference steps) up to which a key's tables
// are built on its second use rather than by ski rental: a few milliseconds at
// most, and a Simulator warmed up by two runs of a policy no longer allocates.
var cheapBuild int64 = 1 << 22 // a variable for the tests

// maxCacheEntries bounds the per-simulator table cache; it is cleared when full.
const maxCacheEntries = 4096

func newFastSim(w *Workload) *fastSim {
	f := &fastSim{w: w, cache: make(map[fastKey]*fastEntry), safe: true}
	d := int64(w.Scenario.DurationS)
	for i, a := range w.series {
		var rs []run
		for t := 0; t < len(a); {
			u := t
			for u < len(a) && a[u] == a[t] {
				u++
			}
			rs = append(rs, run{n: int64(u - t), x: int64(a[t])})
			t = u
		}
		f.runs = append(f.runs, rs)
		// k·L and L·count stay below 2^62 when C·(D+2) does.
		if hi, lo := bits.Mul64(uint64(w.offered[i]), uint64(d+2)); hi != 0 || lo >= 1<<62 {
			f.safe = false
		}
	}
	return f
}

// admitAll fills clients (offered and admitted) for p and reports whether a
// fast path handled it; on false the caller uses Admit.
func (f *fastSim) admitAll(p Policy, clients []ClientResult) bool {
	w := f.w
	switch p.Algorithm {
	case FixedWindow, SlidingWindow:
		// Any other field set (a parameter added later, such as a phase)
		// means a variant the closed forms do not cover: use the reference.
		if p != (Policy{Algorithm: p.Algorithm, WindowS: p.WindowS, Limit: p.Limit, PhaseS: p.PhaseS}) ||
			!f.safe || p.WindowS <= 0 || p.Limit < 0 || p.PhaseS < 0 || p.PhaseS >= p.WindowS ||
			(p.PhaseS != 0 && p.Algorithm != FixedWindow) {
			return false
		}
		e := f.entry(p.Algorithm, p.WindowS, p.PhaseS)
		if !e.built {
			return f.admitUnbuilt(e, p, clients)
		}
		if e.fixed != nil {
			for i := range clients {
				clients[i] = ClientResult{Offered: w.offered[i], Admitted: e.fixed[i].admitted(min(p.Limit, w.offered[i]))}
			}
			return true
		}
		for i := range clients {
			clients[i] = ClientResult{Offered: w.offered[i], Admitted: e.hulls[i].admitted(p.Limit)}
		}
		return true
	case TokenBucket:
		if p != (Policy{Algorithm: p.Algorithm, Rate: p.Rate, Capacity: p.Capacity}) {
			return false
		}
		if p.Rate != f.rate {
			f.rate, f.ratio = p.Rate, ratioOf(p.Rate)
		}
		for i := range clients {
			adm := w.offered[i] // a bucket holding every request admits them all
			if p.Capacity < adm {
				adm = bucketRuns(f.runs[i], p.Capacity, f.ratio)
			}
			clients[i] = ClientResult{Offered: w.offered[i], Admitted: adm}
		}
		return true
	}
	return false
}

// entry returns the cache entry of (alg, window), counting the use.
func (f *fastSim) entry(alg Algorithm, window, phase int) *fastEntry {
	if alg == SlidingWindow && window == 1 {
		alg = FixedWindow // per second min(a, L) in both
	}
	key := fastKey{alg, window, phase}
	if f.last != nil && f.lastKey == key {
		return f.last
	}
	e := f.cache[key]
	if e == nil {
		if len(f.cache) >= maxCacheEntries {
			clear(f.cache)
		}
		e = &fastEntry{build: f.buildCost(alg, window)}
		f.cache[key] = e
	}
	f.last, f.lastKey = e, key
	return e
}

// buildCost estimates the work of building a key's tables, in the unit of
// one reference step (one client-second).
func (f *fastSim) buildCost(alg Algorithm, window int) int64 {
	d := int64(f.w.Scenario.DurationS)
	n := int64(len(f.runs))
	windows := (d + int64(window) - 1) / int64(window)
	if alg == FixedWindow {
		return n * (windows*int64(bits.Len64(uint64(windows))) + d)
	}
	// slidingHull: a few passes (two per hull vertex, and most clients'
	// hulls have two or three), at most half the rows of slidingHullRows.
	return n * slideHullPasses * (d + 1)
}

// slideHullPasses is buildCost's guess at slidingHull's passes per client.
const slideHullPasses = 8

// admitUnbuilt answers p without tables, adding the cost to the key, and
// builds the tables once enough has been spent.
func (f *fastSim) admitUnbuilt(e *fastEntry, p Policy, clients []ClientResult) bool {
	d := int64(f.w.Scenario.DurationS)
	n := int64(len(f.runs))
	e.uses++
	cost := e.pointCost
	if cost == 0 {
		cost = n * d
	}
	if (e.uses >= 2 && e.build <= cheapBuild) || e.spent+cost >= e.build {
		f.build(e, p.Algorithm, p.WindowS, p.PhaseS)
		return f.admitAll(p, clients)
	}
	if p.Algorithm == SlidingWindow && p.WindowS > 1 {
		// Without tables: the run-by-run kernel (slide.go), O(runs·W).
		var steps int64
		for i, rs := range f.runs {
			adm := min(f.w.offered[i], p.Limit) // a window of the whole duration holds every admission
			if p.WindowS < int(d) {
				f.ring = growInt64(f.ring, p.WindowS)
				var s int64
				adm, s = slidingRuns(rs, p.Limit, p.WindowS, f.ring)
				steps += s
			}
			clients[i] = ClientResult{Offered: f.w.offered[i], Admitted: adm}
		}
		e.pointCost = max(steps, 1)
		e.spent += e.pointCost
		return true
	}
	e.spent += n * d
	if p.Algorithm == FixedWindow || p.WindowS == 1 {
		for i, rs := range f.runs {
			f.sums = windowSums(rs, p.WindowS, p.PhaseS, f.sums[:0])
			var adm int64
			for _, s := range f.sums {
				adm += min(s, p.Limit)
			}
			clients[i] = ClientResult{Offered: f.w.offered[i], Admitted: adm}
		}
		return true
	}
	return false
}

// build fills the key's tables.
func (f *fastSim) build(e *fastEntry, alg Algorithm, window, phase int) {
	e.built = true
	if alg == FixedWindow || window == 1 {
		e.fixed = make([]fixedTable, len(f.runs))
		for i, rs := range f.runs {
			f.sums = windowSums(rs, window, phase, f.sums[:0])
			e.fixed[i] = newFixedTable(f.sums)
		}
		return
	}
	e.hulls = make([]slideHull, len(f.runs))
	for i := range f.runs {
		e.hulls[i] = f.slidingHull(f.w.series[i], f.w.offered[i], window)
	}
}

// windowSums appends the offered sums of the windows [phase+kW, phase+(k+1)W)
// ∩ [0, D), k = -1, 0, 1, … (the first is [0, phase) when phase > 0), where
// 0 <= phase < W.
func windowSums(rs []run, window, phase int, out []int64) []int64 {
	w := int64(window)
	var sum, fill int64 // current window's sum and seconds so far
	if phase > 0 {
		fill = w - int64(phase) // the first window is short
	}
	for _, r := range rs {
		n := r.n
		if fill > 0 { // finish the open window
			take := min(n, w-fill)
			sum += take * r.x
			fill += take
			n -= take
			if fill == w {
				out = append(out, sum)
				sum, fill = 0, 0
			}
		}
		if n == 0 {
			continue
		}
		for full := n / w; full > 0; full-- {
			out = append(out, w*r.x)
		}
		if rest := n % w; rest > 0 {
			sum, fill = rest*r.x, rest
		}
	}
	if fill > 0 {
		out = append(out, sum)
	}
	return out
}

func newFixedTable(sums []int64) fixedTable {
	slices.Sort(sums)
	var t fixedTable
	t.n = int64(len(sums))
	var ps, pc int64
	for i := 0; i < len(sums); {
		j := i
		for j < len(sums) && sums[j] == sums[i] {
			j++
		}
		t.vals = append(t.vals, sums[i])
		t.preSum = append(t.preSum, ps)
		t.preCnt = append(t.preCnt, pc)
		ps += sums[i] * int64(j-i)
		pc += int64(j - i)
		i = j
	}
	t.preSum = append(t.preSum, ps)
	t.preCnt = append(t.preCnt, pc)
	return t
}

// negInf marks an impossible placement in the sliding-window programme.
const negInf = math.MinInt64 / 4

// slidingHull returns the upper concave hull of g(k), the most offered
// requests k disjoint windows of W seconds can cover (window ends e in
// [1, D], covering [max(0, e−W), e): only the first can start before 0), for
// k = 0 … the fewest windows that cover every request. Only the hull is
// needed (admitted), and it is found by parametric search (Eisner and
// Severance): for the chord between two known vertices, of slope b/a, one
// O(D) pass (bestWindows) maximises a·g(k) − b·k over every k at once; a
// point strictly above the chord is a vertex between them, none means they
// are neighbours. So a hull of v vertices costs about 2v passes, where the
// programme over k (slidingHullRows) costs one pass per k up to D/W; it is
// the fallback should a hull have more than a quarter of those vertices.
func (f *fastSim) slidingHull(a []int32, offered int64, window int) slideHull {
	d := len(a)
	f.pre = growInt64(f.pre, d+1)
	pre := f.pre
	pre[0] = 0
	for t, x := range a {
		pre[t+1] = pre[t] + int64(x)
	}
	h := slideHull{offered: offered, k: []int64{0}, g: []int64{0}}
	kq, gq := f.bestWindows(pre, window, 1, 0) // every request covered, by the fewest windows
	if kq == 0 {
		return h
	}
	budget := max(16, (d/window+2)/4)
	var refine func(k1, g1, k2, g2 int64) bool
	refine = func(k1, g1, k2, g2 int64) bool {
		if budget--; budget < 0 {
			return false
		}
		da, db := k2-k1, g2-g1 // the chord's slope db/da
		k, g := f.bestWindows(pre, window, da, db)
		if da*g-db*k <= da*g1-db*k1 {
			return true // nothing above the chord
		}
		if !refine(k1, g1, k, g) {
			return false
		}
		h.k, h.g = append(h.k, k), append(h.g, g)
		return refine(k, g, k2, g2)
	}
	if !refine(0, 0, kq, gq) {
		return f.slidingHullRows(a, offered, window)
	}
	h.k, h.g = append(h.k, kq), append(h.g, gq)
	return h
}

// bestWindows maximises Σ (a·covered − b) over sets of disjoint windows (as
// in slidingHull) of the offered series with prefix sums pre, preferring the
// fewest windows among equals, and returns that set's windows and covered
// requests. a·covered fits in int64 where fastSim.safe holds (a <= D/W + 1).
func (f *fastSim) bestWindows(pre []int64, window int, a, b int64) (k, covered int64) {
	d := len(pre) - 1
	f.lv, f.lk, f.lc = growInt64(f.lv, d+1), growInt64(f.lk, d+1), growInt64(f.lc, d+1)
	val, cnt, cov := f.lv[:d+1], f.lk[:d+1], f.lc[:d+1]
	val[0], cnt[0], cov[0] = 0, 0, 0
	for e := 1; e <= d; e++ {
		var bv, bk, bc int64 // the best before the window ending at e
		c := pre[e]
		if s := e - window; s >= 0 {
			bv, bk, bc = val[s], cnt[s], cov[s]
			c -= pre[s]
		}
		v, pv := bv+a*c-b, val[e-1]
		if v > pv || (v == pv && bk+1 < cnt[e-1]) {
			val[e], cnt[e], cov[e] = v, bk+1, bc+c
		} else {
			val[e], cnt[e], cov[e] = pv, cnt[e-1], cov[e-1]
		}
	}
	return cnt[d], cov[d]
}

// slidingHullRows computes g(k) row by row, k = 0 … until every request is
// covered or no more windows fit (a dynamic programme over window ends), and
// returns the upper hull of (k, g(k)).
func (f *fastSim) slidingHullRows(a []int32, offered int64, window int) slideHull {
	d := len(a)
	f.pre = growInt64(f.pre, d+1)
	f.prev = growInt64(f.prev, d+1)
	f.cur = growInt64(f.cur, d+1)
	pre, prev, cur := f.pre, f.prev, f.cur
	pre[0] = 0
	for t, x := range a {
		pre[t+1] = pre[t] + int64(x)
	}
	f.gk = append(f.gk[:0], 0)
	for e := range prev {
		prev[e] = 0 // g_0 = 0 everywhere
	}
	for k := 1; f.gk[k-1] < offered; k++ {
		cur[0] = negInf
		for e := 1; e <= d; e++ {
			s := e - window
			base := int64(negInf)
			cov := pre[e]
			if s >= 0 {
				base = prev[s]
				cov -= pre[s]
			} else if k == 1 {
				base = 0
			}
			best := cur[e-1]
			if base > negInf && base+cov > best {
				best = base + cov
			}
			cur[e] = best
		}
		if cur[d] <= negInf {
			break // k windows do not fit
		}
		f.gk = append(f.gk, cur[d])
		prev, cur = cur, prev
	}
	// Upper hull (monotone chain) of (k, g(k)).
	h := slideHull{offered: offered}
	for k, g := range f.gk {
		k := int64(k)
		for n := len(h.k); n >= 2; n-- {
			// drop the middle vertex unless it lies strictly above the chord
			k1, g1, k2, g2 := h.k[n-2], h.g[n-2], h.k[n-1], h.g[n-1]
			if (g2-g1)*(k-k1) > (g-g1)*(k2-k1) {
				break
			}
			h.k, h.g = h.k[:n-1], h.g[:n-1]
		}
		h.k = append(h.k, k)
		h.g = append(h.g, g)
	}
	return h
}

func growInt64(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n)
	}
	return s[:n]
}

// bucketRuns is the token bucket over runs in exact arithmetic (exact.go),
// rate r; it returns the total admitted. Per run of m seconds at x requests
// the bucket is in one of a few regimes, each a closed form: refill covers
// demand (admit x, tokens grow to capacity - x), draining (admit x while the
// tokens last), empty (admit the refill, whole tokens of it).
func bucketRuns(rs []run, capacity int64, r ratio) int64 {
	b := newStepBucket(r, capacity)
	var total int64
	for _, rn := range rs {
		x, m := rn.x, rn.n
		xU := x * r.den  // demand per second in units of 1/den token
		if r.num >= xU { // refill covers demand
			if capacity >= x {
				total += m * x
				b.add(m, r.num-xU, capacity-x)
			} else { // the bucket caps each second at capacity < x
				total += m * capacity
				b.whole, b.frac = 0, 0
			}
			continue
		}
		// Demand exceeds refill: drain at x, then admit the refill.
		n := b.step(x)
		total += n
		m--
		if m == 0 {
			continue
		}
		if n == x {
			dr := xU - r.num
			q := b.drainSteps(m, dr)
			total += q * x
			b.sub(q, dr)
			m -= q
			if m == 0 {
				continue
			}
			total += b.step(x) // tokens now run short
			m--
			if m == 0 {
				continue
			}
		}
		// Empty: tokens < 1; each second admits floor(tokens + rate).
		switch {
		case capacity <= b.rw: // capacity <= rate
			total += m * capacity
			b.whole, b.frac = 0, 0
		case capacity > (r.num+r.den-2)/r.den: // tokens + rate never reach capacity
			q, f, ok := mulDiv(m, r.num, r.den)
			if !ok { // more than 2^63 tokens: not a workload anyone runs
				panic("model: token bucket total overflows")
			}
			f += b.frac
			if f >= r.den {
				f -= r.den
				q++
			}
			total += q
			b.whole, b.frac = 0, f
		default: // capacity = ceil(rate): the cap cuts fractions; step it
			for ; m > 0; m-- {
				total += b.step(x)
			}
		}
	}
	return total
}
