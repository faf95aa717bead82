package model

import (
	"math"
	"math/bits"
	"time"
)

// secondNs is one second in nanoseconds, the unit of every event time.
const secondNs = int64(time.Second)

// Decider is one key's limiter, deciding request by request. Times are
// nanoseconds since the start of the scenario; they must not decrease from
// one call to the next (until Reset), as with the real libraries.
//
// The event simulation runs every algorithm through its Decider, and the
// oracle tests compare the same Deciders with real limiter libraries.
type Decider interface {
	// Reset returns the decider to the state of a key never seen.
	Reset()
	// Allow reports whether a request arriving at tNs is admitted.
	Allow(tNs int64) bool
	// AllowN offers n >= 0 requests arriving together at tNs and returns how
	// many are admitted; it is the same as n calls Allow(tNs).
	AllowN(tNs, n int64) int64
}

// Shaper is a Decider that may delay the requests it admits (nginx).
type Shaper interface {
	Decider
	// DelayNs is how long the request last admitted by Allow waits before it
	// is served, ns.
	DelayNs() int64
}

// NewDecider returns a Decider for policy p, in the state of a new key.
func NewDecider(p Policy) (Decider, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return newDecider(p), nil
}

// NewDeciderAt returns a Decider for policy p whose event times are ns
// since originNs, a Unix time in ns (a replayed log's first second), with
// its windows on the wall clock as deployed limiters put them: fixed_window's
// boundaries at Unix phase_s + k·window_s (envoy, Kong, a Redis INCR per
// window), sliding_counter's windows at Unix k·window_s (Cloudflare,
// RussellLuo/slidingwindow's time.Truncate). Every other algorithm has no
// boundaries and decides as NewDecider's; fixed_window_anchored's windows
// open at each key's first request (express-rate-limit, ulule/limiter).
// NewDecider is NewDeciderAt with the origin itself on a boundary (a
// scenario's t = 0).
func NewDeciderAt(p Policy, originNs int64) (Decider, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	d := newDecider(p)
	atOrigin(d, originNs)
	return d, nil
}

// atOrigin moves a configured decider's window boundaries for event times
// counted from originNs (NewDeciderAt).
func atOrigin(d decider, originNs int64) {
	switch d := d.(type) {
	case *fixedWindowLimiter:
		d.phaseNs = floorMod(d.phaseNs-originNs, d.windowNs)
	case *slidingCounterLimiter:
		d.phaseNs = floorMod(-originNs, d.sizeNs)
	}
}

// floorMod is a mod b in [0, b) (b > 0).
func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// decider is a Decider that can be reconfigured without allocating, so the
// Simulator keeps one per algorithm.
type decider interface {
	Decider
	// configure sets the parameters of a valid policy and resets the state,
	// keeping buffers.
	configure(p Policy)
}

func newDecider(p Policy) decider {
	var d decider
	switch p.Algorithm {
	case FixedWindow:
		d = &fixedWindowLimiter{}
	case FixedWindowAnchored:
		d = &anchoredWindowLimiter{}
	case SlidingWindow, SlidingLog, Concurrency:
		d = &slidingLogLimiter{}
	case SlidingCounter:
		d = &slidingCounterLimiter{}
	case TokenBucket:
		d = &tokenBucketLimiter{}
	case GCRA:
		d = &gcraLimiter{}
	case Nginx:
		d = &nginxLimiter{}
	default:
		panic("model: no decider for " + p.Algorithm.String())
	}
	d.configure(p)
	return d
}

// admitBatches runs d over per-second batches (fluid arrivals: the a[t]
// requests of second t arrive together at t seconds), writes the admitted
// requests per second into adm and returns the total. When d shapes and
// delays is not nil, the delay of every admitted request is recorded.
func admitBatches(d Decider, a, adm []int32, delays *delayStats) int64 {
	adm = adm[:len(a)]
	sh, shapes := d.(Shaper)
	shapes = shapes && delays != nil
	d.Reset()
	var total int64
	for t, x := range a {
		tNs := int64(t) * secondNs
		var n int64
		if shapes {
			for ; n < int64(x) && d.Allow(tNs); n++ {
				delays.add(sh.DelayNs())
			}
		} else if x > 0 {
			n = d.AllowN(tNs, int64(x))
		}
		adm[t] = int32(n)
		total += n
	}
	return total
}

// admitEvents runs d over request times (non-decreasing, ns) and returns the
// number admitted, recording delays as admitBatches does.
func admitEvents(d Decider, times []int64, delays *delayStats) int64 {
	d.Reset()
	var total int64
	if sh, ok := d.(Shaper); ok && delays != nil {
		for _, t := range times {
			if d.Allow(t) {
				total++
				delays.add(sh.DelayNs())
			}
		}
		return total
	}
	for _, t := range times {
		if d.Allow(t) {
			total++
		}
	}
	return total
}

// admitted is how many of n requests fit below limit when used requests
// already count against it.
func admitted(limit, used, n int64) int64 { return min(n, max(0, limit-used)) }

// floorDiv is a/b rounded towards minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// fixedWindowLimiter is fixed_window on event times: windows
// [phase + k·window, phase + (k+1)·window); a request is admitted while fewer
// than limit were admitted in its window.
type fixedWindowLimiter struct {
	limit, windowNs, phaseNs int64
	fresh                    bool
	window                   int64 // index k of the current window
	count                    int64 // admitted in it
}

func (d *fixedWindowLimiter) configure(p Policy) {
	d.limit, d.windowNs, d.phaseNs = p.Limit, int64(p.WindowS)*secondNs, int64(p.PhaseS)*secondNs
	d.Reset()
}

func (d *fixedWindowLimiter) Reset()             { d.fresh, d.count = true, 0 }
func (d *fixedWindowLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

func (d *fixedWindowLimiter) AllowN(t, n int64) int64 {
	d.advance(t)
	k := admitted(d.limit, d.count, n)
	d.count += k
	return k
}

// advance starts t's window when t is past the current one.
func (d *fixedWindowLimiter) advance(t int64) {
	if w := floorDiv(t-d.phaseNs, d.windowNs); d.fresh || w != d.window {
		d.fresh, d.window, d.count = false, w, 0
	}
}

// anchoredWindowLimiter is fixed_window_anchored, express-rate-limit's
// MemoryStore and ulule/limiter: the first hit after a window has expired
// opens a new window [t, t + window); every hit counts (rejected ones too,
// which does not change admission) and a hit is admitted iff the count is
// <= limit.
type anchoredWindowLimiter struct {
	limit, windowNs int64
	fresh           bool
	resetNs, hits   int64 // end of the current window; hits in it
}

func (d *anchoredWindowLimiter) configure(p Policy) {
	d.limit, d.windowNs = p.Limit, int64(p.WindowS)*secondNs
	d.Reset()
}

func (d *anchoredWindowLimiter) Reset()             { d.fresh, d.hits = true, 0 }
func (d *anchoredWindowLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

func (d *anchoredWindowLimiter) AllowN(t, n int64) int64 {
	if n <= 0 { // no hit, so no window opens
		return 0
	}
	d.advance(t)
	k := admitted(d.limit, d.hits, n)
	d.hits += n
	return k
}

// advance opens a window at t when the last one has expired.
func (d *anchoredWindowLimiter) advance(t int64) {
	if d.fresh || t >= d.resetNs {
		d.fresh, d.hits, d.resetNs = false, 0, t+d.windowNs
	}
}

// slidingLogLimiter keeps a log of request times and admits a request while
// the log holds fewer than limit entries in (t - window, t].
//   - sliding_window (the lesson's): only admitted requests are logged.
//   - sliding_log: every attempt is logged before the check, as in the Redis
//     ZADD-then-ZCARD pattern (rolling-rate-limiter), so the attempt itself
//     counts and a client that keeps trying above the limit is locked out.
//   - concurrency: an admitted request is in flight for service_s, so the
//     requests in flight at t are those admitted in (t - service_s, t]: the
//     Stripe in-flight limit with a constant service time is exactly
//     sliding_window with window service_s.
type slidingLogLimiter struct {
	limit, windowNs int64
	countRejected   bool
	log             tally
}

func (d *slidingLogLimiter) configure(p Policy) {
	d.limit, d.countRejected = p.Limit, p.Algorithm == SlidingLog
	if p.Algorithm == Concurrency {
		d.windowNs = int64(math.Round(p.ServiceS * 1e9))
	} else {
		d.windowNs = int64(p.WindowS) * secondNs
	}
	d.Reset()
}

func (d *slidingLogLimiter) Reset()             { d.log.reset() }
func (d *slidingLogLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

func (d *slidingLogLimiter) AllowN(t, n int64) int64 {
	d.log.expire(t - d.windowNs)
	k := admitted(d.limit, d.log.total, n)
	if d.countRejected {
		d.log.add(t, n)
	} else if k > 0 {
		d.log.add(t, k)
	}
	return k
}

// tally is a FIFO of (time, count) entries with their running total, in a
// ring buffer that only grows.
type tally struct {
	buf        []tallyEntry
	head, size int
	total      int64
}

type tallyEntry struct{ t, n int64 }

func (r *tally) reset() { r.head, r.size, r.total = 0, 0, 0 }

// expire drops the entries at times <= cutoff.
func (r *tally) expire(cutoff int64) {
	for r.size > 0 && r.buf[r.head].t <= cutoff {
		r.total -= r.buf[r.head].n
		r.head++
		if r.head == len(r.buf) {
			r.head = 0
		}
		r.size--
	}
}

// add counts n at time t (not before the last entry's time).
// The buffer's length is a power of two (16, 32, …), so positions wrap with a
// mask rather than a division.
func (r *tally) add(t, n int64) {
	r.total += n
	mask := len(r.buf) - 1
	if r.size > 0 {
		if last := &r.buf[(r.head+r.size-1)&mask]; last.t == t {
			last.n += n
			return
		}
	}
	if r.size == len(r.buf) {
		grown := make([]tallyEntry, max(16, 2*len(r.buf)))
		for i := range r.size {
			grown[i] = r.buf[(r.head+i)&mask]
		}
		r.buf, r.head = grown, 0
		mask = len(r.buf) - 1
	}
	r.buf[(r.head+r.size)&mask] = tallyEntry{t, n}
	r.size++
}

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

// tokenBucketLimiter is token_bucket on event times, deciding as
// golang.org/x/time/rate's AllowN(t, 1) does, in exact arithmetic: the
// bucket starts full, refills continuously at rate, and a request takes one
// token. As in x/time/rate, a request is admitted when the deficit it leaves
// is worth less than 1 ns of refill (the library truncates the wait to whole
// ns); at whole-second times this never differs from SPEC's floor(tokens)
// unless the rate's numerator exceeds 10^9 (rates with 9 decimals above 1).
// Tokens are counted in units of 1/(den·10^9) token, so the refill over e ns
// is num·e units (exact.go); rejected requests leave the state unchanged.
// Unlike x/time/rate's float64 tokens nothing drifts: rate 0.1 admits
// exactly every 10 s, and capacities up to 2^62 stay exact.
type tokenBucketLimiter struct {
	rate      float64
	num, unit int64 // refill per ns in units; units per token
	capacity  int64
	fresh     bool
	lastNs    int64
	// A bucket of at most 2^60 units (every realistic one) holds its tokens
	// as one count of units, so a decision is a multiply and compares.
	small       bool
	fullU       int64 // capacity in units (small)
	safeNs      int64 // below this elapsed time num·e cannot overflow (small)
	tokensU     int64 // tokens at lastNs, units (small)
	whole, frac int64 // otherwise: tokens at lastNs = whole + frac/unit, 0 <= frac < unit
}

func (d *tokenBucketLimiter) configure(p Policy) {
	if p.Rate != d.rate || d.unit == 0 {
		r := ratioOf(p.Rate)
		d.rate, d.num, d.unit = p.Rate, r.num, r.den*secondNs
		d.safeNs = (1 << 61) / d.num
	}
	d.capacity = p.Capacity
	d.small, d.fullU = d.capacity <= (1<<60)/d.unit, 0
	if d.small {
		d.fullU = d.capacity * d.unit
	}
	d.Reset()
}

func (d *tokenBucketLimiter) Reset()             { d.fresh = true }
func (d *tokenBucketLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

// unitsAt returns a small bucket's tokens at t (not before the last
// request), refilled and capped at capacity, in units.
func (d *tokenBucketLimiter) unitsAt(t int64) int64 {
	if d.fresh {
		return d.fullU
	}
	return refillUnits(d.tokensU, d.fullU, d.num, t-d.lastNs, d.safeNs)
}

// refillUnits is a small bucket holding tokensU units refilled for e >= 0
// ns at num units per ns, capped at fullU units; below safeNs = 2^61/num ns
// the product cannot overflow, beyond it is taken in 128 bits.
// (tokenBucketLimiter and bucketLockstep share it.)
func refillUnits(tokensU, fullU, num, e, safeNs int64) int64 {
	if e < safeNs {
		return refillShort(tokensU, fullU, num, e)
	}
	hi, lo := bits.Mul64(uint64(num), uint64(e))
	if room := fullU - tokensU; hi != 0 || lo >= uint64(room) {
		return fullU
	}
	return tokensU + int64(lo)
}

// refillShort is refillUnits for e < safeNs, where num·e does not overflow.
func refillShort(tokensU, fullU, num, e int64) int64 { return min(fullU, tokensU+num*e) }

// takesToken reports whether a small bucket holding u units admits one
// request: the deficit it leaves, unit - u, is worth less than 1 ns of
// refill (num units), as x/time/rate truncates its wait to whole ns.
func takesToken(u, unit, num int64) bool { return u-unit+num > 0 }

// tokensAt is unitsAt for a bucket that is not small: whole tokens and a
// remainder in units.
func (d *tokenBucketLimiter) tokensAt(t int64) (whole, frac int64) {
	if d.fresh {
		return d.capacity, 0
	}
	return refillWhole(d.whole, d.frac, d.capacity, d.num, d.unit, t-d.lastNs)
}

// refillWhole is a bucket that is not small, holding whole + frac/unit
// tokens, refilled for e >= 0 ns at num units per ns, capped at capacity.
// (tokenBucketLimiter and wideBucketLockstep share it.)
func refillWhole(whole, frac, capacity, num, unit, e int64) (int64, int64) {
	if e == 0 {
		return whole, frac
	}
	q, r, ok := mulDiv(num, e, unit)
	if !ok || q >= capacity-whole {
		return capacity, 0
	}
	whole, frac = whole+q, frac+r
	if frac >= unit {
		whole, frac = whole+1, frac-unit
	}
	if whole >= capacity {
		return capacity, 0
	}
	return whole, frac
}

// wholeAdmits is how many of n requests a bucket that is not small, holding
// w + f/unit tokens, admits at once: j <= w + floor((f + num − 1)/unit).
func wholeAdmits(w, f, num, unit, n int64) int64 { return min(n, max(0, w+(f+num-1)/unit)) }

// Request j of a batch is admitted iff the tokens after it are above -num
// units (a deficit below 1 ns of refill): tokens - j·unit > -num.
func (d *tokenBucketLimiter) AllowN(t, n int64) int64 {
	if n <= 0 {
		return 0
	}
	if d.small {
		u := d.unitsAt(t)
		k := int64(0)
		if takesToken(u, d.unit, d.num) {
			k = 1
			if n > 1 {
				k = min(n, (u+d.num-1)/d.unit)
			}
			d.fresh, d.tokensU, d.lastNs = false, u-k*d.unit, t
		}
		return k
	}
	w, f := d.tokensAt(t)
	k := wholeAdmits(w, f, d.num, d.unit, n)
	if k > 0 {
		d.fresh, d.whole, d.frac, d.lastNs = false, w-k, f, t
	}
	return k
}

// charge takes one token at t whether or not one is there (charge.go).
func (d *tokenBucketLimiter) charge(t int64) {
	if d.small {
		d.tokensU = d.unitsAt(t) - d.unit
	} else {
		w, f := d.tokensAt(t)
		d.whole, d.frac = w-1, f
	}
	d.fresh, d.lastNs = false, t
}

// full reports whether the bucket is full at t (a new key's state).
func (d *tokenBucketLimiter) full(t int64) bool {
	if d.fresh {
		return true
	}
	if d.small {
		return d.unitsAt(t) == d.fullU
	}
	w, _ := d.tokensAt(t)
	return w == d.capacity
}

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
