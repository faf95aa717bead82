package model

import "fmt"

// gcraAlgorithm is gcra, the generic cell rate algorithm (throttled,
// redis_rate): a token bucket of capacity requests refilling at rate per
// second, kept as one theoretical arrival time.
var gcraAlgorithm = Descriptor{
	Name: "gcra", Family: BucketFamily, ColorSlot: 5,
	Params: []string{"rate", "capacity"},
	Cost:   220,
	Validate: func(p Policy) error {
		if err := validateBucket(p); err != nil {
			return err
		}
		if float64(p.Capacity)*1e9/p.Rate > maxSpanNs {
			return fieldErr("capacity", "capacity/rate must be below %g s, got %d/%v", maxSpanNs/1e9, p.Capacity, p.Rate)
		}
		return nil
	},
	Label:      func(p Policy) string { return fmt.Sprintf("GCRA %g/s", p.Rate) },
	Why:        bucketWhy,
	Bound:      bucketBound,
	newDecider: func() decider { return &gcraLimiter{} },
	lockstep:   func(ps []Policy, _ int64) (Lockstep, bool) { return newGCRALockstep(ps), true },
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
