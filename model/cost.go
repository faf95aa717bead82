package model

// Request costs (docs/costs.md): a request may cost more than one unit, and
// every algorithm that can spends a request's cost units all or nothing, as
// golang.org/x/time/rate's AllowN(t, c) does (unlike Decider.AllowN, which
// offers c separate requests): token_bucket and gcra take c tokens, the
// windows and logs add c to their counts. A request costing more than the
// limiter could ever hold (c above the capacity or the limit) is rejected.
//
// The cost modifier applies to a policy whose traffic carries costs
// (Policy.Costed); its decider is a RequestDecider, which the simulators
// give each request's cost.

// RequestDecider is a Decider that weighs what a request carries besides its
// time: its cost (a policy over traffic with costs) and its response status
// (count_if). The deciders of a policy that is Costed or has a CountIf are
// RequestDeciders; Allow(t) is AllowRequest(t, 1, 0).
type RequestDecider interface {
	Decider
	// AllowRequest reports whether a request arriving at tNs, costing cost
	// units (>= 1), whose response has status (0 when unknown), is admitted.
	AllowRequest(tNs, cost int64, status int) bool
}

// Weighed reports whether p's deciders weigh requests (RequestDecider):
// its traffic has costs or it counts only some responses.
func (p Policy) Weighed() bool { return p.Costed || p.CountIf != "" || p.Stack.weighed() }

// spender is the ability costs need from an algorithm's decider (found by
// type assertion): an all-or-nothing spend of c units.
type spender interface {
	// spend decides a request of cost c >= 1 at t: it is admitted iff all c
	// units fit now, and then charges all c; a rejected request changes the
	// state as a rejected request of the algorithm does (sliding_log and
	// fixed_window_anchored count its c units too).
	spend(t, c int64) bool
	// fits reports whether spend(t, c) would admit the request, leaving the
	// decisions to come unchanged.
	fits(t, c int64) bool
}

// MaxCost is the largest cost of one request, units.
const MaxCost = 1 << 40

var costModifier = modifier{
	name: "cost",
	uses: func(p Policy) bool { return p.Costed && p.Stack == nil }, // all_of: each component spends (Policy.components)
	validate: func(p Policy) error {
		if _, ok := p.Algorithm.Describe().decider().(spender); !ok {
			return fieldErr("cost", "%s counts requests, not costs: it cannot spend a request's cost units (use token_bucket, gcra or a window)", p.Algorithm)
		}
		return nil
	},
	wrap: func(inner decider, p Policy) decider {
		return &costDecider{wrapper: wrapper{inner}, sp: inner.(spender)}
	},
}

// costDecider is the cost modifier's decider: a request spends its cost.
type costDecider struct {
	wrapper
	sp spender
}

var (
	_ decider        = (*costDecider)(nil)
	_ RequestDecider = (*costDecider)(nil)
	_ spender        = (*costDecider)(nil)
)

func (d *costDecider) AllowRequest(t, cost int64, _ int) bool { return d.sp.spend(t, max(cost, 1)) }
func (d *costDecider) spend(t, c int64) bool                  { return d.sp.spend(t, c) }
func (d *costDecider) fits(t, c int64) bool                   { return d.sp.fits(t, c) }
func (d *costDecider) fitsRequest(t, cost int64, _ int) bool  { return d.sp.fits(t, max(cost, 1)) }

func (d *costDecider) cloneInto(dst decider) decider {
	c, _ := dst.(*costDecider)
	var inner decider
	if c != nil {
		inner = c.inner
	}
	inner = d.inner.cloneInto(inner)
	return &costDecider{wrapper: wrapper{inner}, sp: inner.(spender)}
}

// The algorithms' spends. Each is its decider's AllowN(t, 1) with c units
// in place of one request, all or nothing.

// spend takes c tokens iff the deficit they leave is worth less than 1 ns
// of refill (x/time/rate's ReserveN with no wait), c <= capacity.
func (d *tokenBucketLimiter) spend(t, c int64) bool {
	if c > d.capacity {
		return false
	}
	if d.small {
		u := d.unitsAt(t)
		if u-c*d.unit+d.num <= 0 {
			return false
		}
		d.fresh, d.tokensU, d.lastNs = false, u-c*d.unit, t
		return true
	}
	w, f := d.tokensAt(t)
	if wholeAdmits(w, f, d.num, d.unit, c) < c {
		return false
	}
	d.fresh, d.whole, d.frac, d.lastNs = false, w-c, f, t
	return true
}

func (d *tokenBucketLimiter) fits(t, c int64) bool { x := *d; return x.spend(t, c) }

// spend moves the TAT by c emission intervals iff the c-th of c requests
// at once would be admitted: TAT − t + (c−1)·T <= τ (throttled's quantity).
func (d *gcraLimiter) spend(t, c int64) bool {
	tat := t
	if !d.fresh {
		tat = max(d.tat, t)
	}
	room := d.tauNs - (tat - t)
	if room < 0 || room/d.periodNs+1 < c {
		return false
	}
	d.fresh, d.tat = false, tat+c*d.periodNs
	return true
}

func (d *gcraLimiter) fits(t, c int64) bool { x := *d; return x.spend(t, c) }

func (d *fixedWindowLimiter) spend(t, c int64) bool {
	d.advance(t)
	if d.count+c > d.limit {
		return false
	}
	d.count += c
	return true
}

func (d *fixedWindowLimiter) fits(t, c int64) bool { x := *d; return x.spend(t, c) }

// spend counts the hit's c units whether or not it is admitted, as every
// hit counts.
func (d *anchoredWindowLimiter) spend(t, c int64) bool {
	d.advance(t)
	ok := d.hits+c <= d.limit
	d.hits += c
	return ok
}

func (d *anchoredWindowLimiter) fits(t, c int64) bool { x := *d; return x.spend(t, c) }

func (d *slidingCounterLimiter) spend(t, c int64) bool {
	d.advance(t)
	if counterEstimate(t, d.sizeNs, d.start, d.prev, d.curr)+c > d.limit {
		return false
	}
	d.curr += c
	return true
}

func (d *slidingCounterLimiter) fits(t, c int64) bool { x := *d; return x.spend(t, c) }

// spend logs c units at t when admitted (sliding_log: always).
func (d *slidingLogLimiter) spend(t, c int64) bool {
	d.log.expire(t - d.windowNs)
	ok := d.log.total+c <= d.limit
	if ok || d.countRejected {
		d.log.add(t, c)
	}
	return ok
}

func (d *slidingLogLimiter) fits(t, c int64) bool {
	d.log.expire(t - d.windowNs)
	return d.log.total+c <= d.limit
}
