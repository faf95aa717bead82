package model

import "fmt"

// nginxAlgorithm is nginx, nginx's limit_req: a leaky bucket that admits
// burst requests beyond the one in service and delays those beyond delay.
var nginxAlgorithm = Descriptor{
	Name: "nginx", Family: BucketFamily, ColorSlot: 6,
	Params:   []string{"rate", "burst"},
	Optional: []string{"delay"},
	Cost:     1300,
	Validate: func(p Policy) error {
		if !(p.Rate >= 0.001) || p.Rate > maxNginxRate {
			return fieldErr("rate", "must be >= 0.001 (nginx counts milli-requests/s) and <= %g requests/s, got %v", float64(maxNginxRate), p.Rate)
		}
		if p.Burst < 0 || p.Burst > maxNginxBurst {
			return fieldErr("burst", "must be >= 0 and <= %d requests, got %d", int64(maxNginxBurst), p.Burst)
		}
		if float64(p.Burst)*1e9/p.Rate > maxSpanNs {
			return fieldErr("burst", "burst/rate must be below %g s, got %d/%v", maxSpanNs/1e9, p.Burst, p.Rate)
		}
		if p.Delay < 0 {
			return fieldErr("delay", "must be >= 0 requests (>= burst means nodelay), got %d", p.Delay)
		}
		return nil
	},
	Label: func(p Policy) string {
		switch {
		case p.Delay >= p.Burst:
			return fmt.Sprintf("nginx %g r/s burst %d nodelay", p.Rate, p.Burst)
		case p.Delay > 0:
			return fmt.Sprintf("nginx %g r/s burst %d delay %d", p.Rate, p.Burst, p.Delay)
		}
		return fmt.Sprintf("nginx %g r/s burst %d", p.Rate, p.Burst)
	},
	Why: func(p Policy) string {
		return fmt.Sprintf("cut in bursts beyond %d requests, or when sustained above %s/s", p.Burst+1, formatNum(p.Rate))
	},
	Bound: func(p Policy, a []float64) string { return burstBound(p.Rate, p.Burst+1, a) },
	ValueName: func(name string, v float64, get func(string) float64) string {
		if name == "delay" && v >= get("burst") {
			return "nodelay"
		}
		return ""
	},
	Shapes:     func(p Policy) bool { return p.Delay < p.Burst },
	newDecider: func() decider { return &nginxLimiter{} },
	lockstep:   func(ps []Policy, _ int64) (Lockstep, bool) { return newNginxLockstep(ps), true },
}

var _ decider = (*nginxLimiter)(nil)

// nginxLimiter is nginx's limit_req for one key and one zone, in nginx's
// integer arithmetic (ngx_http_limit_req_lookup and _account): the clock is
// whole milliseconds, rate is milli-requests/s truncated (rate=1r/m is 16),
// excess is milli-requests. A new key passes with excess 0. Otherwise, after
// ms milliseconds, e = max(0, excess - rate·ms/1000 + 1000); the request is
// rejected iff e > burst·1000 (state unchanged), else excess = e (and the
// clock moves on if ms > 0). An admitted request with e > delay·1000 waits
// (e - delay·1000)·1000/rate ms. From idle, burst+1 requests pass at once:
// with delay >= burst (nodelay) it is gcra with capacity burst+1.
type nginxLimiter struct {
	rateM, burstM, delayM int64 // milli-requests/s; burst and delay in milli-requests
	idleMs                int64 // an idle time after which excess is 0 (avoids overflow)
	fresh                 bool
	excess, lastMs        int64
	delayNs               int64 // delay of the request last admitted
}

func (d *nginxLimiter) configure(p Policy) {
	r := ratioOf(p.Rate)
	d.rateM = r.num * 1000 / r.den
	d.burstM = p.Burst * 1000
	d.delayM = min(p.Delay, p.Burst) * 1000
	d.idleMs = (d.burstM+1000)*1000/d.rateM + 1
	d.Reset()
}

func (d *nginxLimiter) Reset()         { d.fresh = true }
func (d *nginxLimiter) DelayNs() int64 { return d.delayNs }

func (d *nginxLimiter) Allow(t int64) bool {
	now := t / 1e6
	if d.fresh {
		d.fresh, d.excess, d.lastMs, d.delayNs = false, 0, now, 0
		return true
	}
	ms := now - d.lastMs
	e := nginxExcess(d.excess, ms, d.rateM, d.idleMs)
	if e > d.burstM {
		return false
	}
	d.excess = e
	if ms != 0 {
		d.lastMs = now
	}
	d.delayNs = 0
	if e > d.delayM {
		d.delayNs = (e - d.delayM) * 1000 / d.rateM * 1e6
	}
	return true
}

func (d *nginxLimiter) AllowN(t, n int64) int64 {
	var k int64
	for k < n && d.Allow(t) { // at one instant, a rejection is final
		k++
	}
	return k
}

// nginxExcess is the excess (milli-requests) a request would leave ms >= 0
// milliseconds after the last one moved the clock, with excess then and
// rateM milli-requests/s leaking; past idleMs the bucket is empty anyway.
// The request is admitted iff the result is <= burst·1000. (nginxLimiter and
// nginxLockstep share it.)
func nginxExcess(excess, ms, rateM, idleMs int64) int64 {
	return max(0, excess-rateM*min(ms, idleMs)/1000+1000)
}

func (d *nginxLimiter) peek(t int64) bool {
	c := *d
	return c.Allow(t)
}

func (d *nginxLimiter) charge(t int64) {
	now := t / 1e6
	if d.fresh {
		d.fresh, d.excess, d.lastMs = false, 0, now
		return
	}
	ms := now - d.lastMs
	d.excess = max(0, d.excess-d.rateM*min(ms, d.idleMs)/1000+1000)
	if ms != 0 {
		d.lastMs = now
	}
}

func (d *nginxLimiter) cloneInto(dst decider) decider { return copyInto(dst, d) }

// stateSize: the excess and the last time.
func (d *nginxLimiter) stateSize(t int64) (bool, int64) {
	return !d.fresh && d.excess > d.rateM*(t/1e6-d.lastMs)/1000, 2 * wordBytes
}
