package model

import "fmt"

// gcraAlgorithm is gcra, the generic cell rate algorithm (throttled,
// redis_rate): a token bucket of capacity requests refilling at rate per
// second, kept as one theoretical arrival time.
var gcraAlgorithm = Descriptor{
	Name: "gcra", Family: BucketFamily, ColorSlot: 5,
	Example: "gcra rate=10 capacity=100",
	Params:  []string{"rate", "capacity"},
	Cost:    220,
	Validate: func(p Policy) error {
		if err := validateBucket(p); err != nil {
			return err
		}
		if float64(p.Capacity)*1e9/p.Rate > maxSpanNs {
			return fieldErr("capacity", "capacity/rate must be below %g s, got %d/%v", maxSpanNs/1e9, p.Capacity, p.Rate)
		}
		return nil
	},
	Label:    func(p Policy) string { return fmt.Sprintf("GCRA %g/s", p.Rate) },
	Why:      bucketWhy,
	Bound:    bucketBound,
	blank:    func() decider { return &gcraLimiter{} },
	lockstep: func(ps []Policy, _ int64) (Lockstep, bool) { return newGCRALockstep(ps), true },
}

var _ decider = (*gcraLimiter)(nil)

// gcraLimiter is gcra, the generic cell rate algorithm as in
// throttled/throttled (integer nanoseconds): emission interval T = 1/rate,
// tolerance τ = (capacity-1)·T, state TAT (theoretical arrival time). A
// request at t is rejected iff TAT - t > τ; else TAT = max(TAT, t) + T.
// Rejected requests leave the state unchanged; a new key is a full bucket.
type gcraLimiter struct {
	periodNs, tauNs int64
	fresh           bool
	tat             int64
}

func (d *gcraLimiter) configure(p Policy) {
	d.periodNs = emissionNs(ratioOf(p.Rate))
	d.tauNs = (p.Capacity - 1) * d.periodNs
	d.Reset()
}

func (d *gcraLimiter) Reset() { d.fresh = true }

func (d *gcraLimiter) Allow(t int64) bool {
	tat := t
	if !d.fresh {
		tat = d.tat
	}
	tat, ok := gcraStep(tat, t, d.periodNs, d.tauNs)
	if ok {
		d.fresh, d.tat = false, tat
	}
	return ok
}

// countAdmitted offers the requests at times (ns, sorted) one by one and
// returns how many are admitted: admitEvents's loop with direct calls.
func (d *gcraLimiter) countAdmitted(times []int64) (n int64) {
	for _, t := range times {
		if d.Allow(t) {
			n++
		}
	}
	return n
}

// countByLabel is AdmitByLabel's loop with direct calls.
func (d *gcraLimiter) countByLabel(ts []int64, labels []Stage, admitted *[4]int64) {
	for j, t := range ts {
		if d.Allow(t) {
			admitted[labels[j]&3]++
		}
	}
}

// gcraStep decides one request at t given the theoretical arrival time tat
// (t for a new key), all ns: it is admitted iff max(tat, t) - t <= tauNs,
// and then the new TAT is max(tat, t) + periodNs; a rejected request leaves
// next = max(tat, t) = tat. (gcraLimiter and gcraLockstep share it.)
func gcraStep(tat, t, periodNs, tauNs int64) (next int64, ok bool) {
	tat = max(tat, t)
	if tat-t > tauNs {
		return tat, false
	}
	return tat + periodNs, true
}

func (d *gcraLimiter) AllowN(t, n int64) int64 {
	tat := t
	if !d.fresh {
		tat = max(d.tat, t)
	}
	ahead := tat - t
	if n <= 0 || ahead > d.tauNs {
		return 0
	}
	k := min(n, (d.tauNs-ahead)/d.periodNs+1)
	d.fresh, d.tat = false, tat+k*d.periodNs
	return k
}

// emissionNs is gcra's emission interval 1/rate in whole nanoseconds,
// truncated as throttled truncates period/n; the rate is exact (exact.go), so
// n per period gives period/n exactly.
func emissionNs(r ratio) int64 {
	q, _, _ := mulDiv(r.den, secondNs, r.num)
	return q
}

func (d *gcraLimiter) peek(t int64) bool {
	c := *d
	return c.Allow(t)
}

func (d *gcraLimiter) charge(t int64) {
	tat := t
	if !d.fresh {
		tat = max(d.tat, t)
	}
	d.fresh, d.tat = false, tat+d.periodNs
}

func (d *gcraLimiter) cloneInto(dst decider) decider { return copyInto(dst, d) }

// stateSize: the theoretical arrival time.
func (d *gcraLimiter) stateSize(t int64) (bool, int64) { return !d.fresh && d.tat > t, wordBytes }

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
