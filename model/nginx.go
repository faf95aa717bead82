package model

import "fmt"

// nginxAlgorithm is nginx, nginx's limit_req: a leaky bucket that admits
// burst requests beyond the one in service and delays those beyond delay.
var nginxAlgorithm = Descriptor{
	Name: "nginx", Family: BucketFamily, ColorSlot: 6,
	Example:  "nginx rate=10 burst=20",
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
	Shapes:   func(p Policy) bool { return p.Delay < p.Burst },
	blank:    func() decider { return &nginxLimiter{} },
	lockstep: func(ps []Policy, _ int64) (Lockstep, bool) { return newNginxLockstep(ps), true },
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
