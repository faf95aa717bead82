package model

import (
	"fmt"
	"math"
	"time"
)

// traefikAlgorithm is traefik, Traefik v3's rateLimit middleware (in-memory
// buckets): an x/time/rate bucket per source that serves a request late when
// its token comes within maxDelay, answers 429 otherwise, and forgets an idle
// source's bucket.
var traefikAlgorithm = Descriptor{
	Name: "traefik", Title: "Traefik rateLimit", Family: BucketFamily, ColorSlot: -1, Color: "#225577",
	Example:  "traefik rate=10 capacity=100",
	Params:   []string{"rate", "capacity"},
	Cost:     300,
	Validate: validateTraefik,
	Label:    func(p Policy) string { return fmt.Sprintf("Traefik %g/s burst %d", p.Rate, p.Capacity) },
	Why: func(p Policy) string {
		return fmt.Sprintf("cut in bursts beyond %d requests, or when sustained above %s/s (a request whose token comes within %v waits for it)",
			p.Capacity, formatNum(p.Rate), time.Duration(traefikMaxDelayNs(p.Rate)))
	},
	Bound:  bucketBound,
	Shapes: func(p Policy) bool { return traefikMaxDelayNs(p.Rate) > 0 },
	blank:  func() decider { return &traefikLimiter{} },
}

// maxTraefikPeriodS is the longest period TraefikRate writes a rate over, s.
const maxTraefikPeriodS = 86400

// validateTraefik checks the deployment (one key, no lag), rate (a whole
// average per whole-second period of at most a day: TraefikRate) and
// capacity (Traefik's burst).
func validateTraefik(p Policy) error {
	// A request Traefik rejects still refreshes the idle TTL, and its token
	// comes back: the two-key and lagged simulations' charges do not model it.
	switch {
	case p.Key == KeyBoth:
		return fieldErr("key", "traefik cannot decide on two keys at once (Traefik chains two middlewares instead, all_of)")
	case p.SyncMs != 0:
		return fieldErr("sync_ms", "traefik cannot run on lagged shared state (Traefik's in-memory buckets are per instance)")
	}
	if !(p.Rate >= minRate) || p.Rate > maxRate {
		return fieldErr("rate", "must be a finite number >= %g and <= %g requests/s, got %v", minRate, float64(maxRate), p.Rate)
	}
	if _, _, ok := TraefikRate(p.Rate); !ok {
		return fieldErr("rate", "must be Traefik's average/period: a whole number of requests per whole number of seconds up to %d, got %v", maxTraefikPeriodS, p.Rate)
	}
	if p.Capacity < 1 || p.Capacity > math.MaxInt32 {
		return fieldErr("capacity", "must be >= 1 and <= %d requests (Traefik's burst), got %d", math.MaxInt32, p.Capacity)
	}
	return nil
}

// TraefikRate writes rate (requests/s) as Traefik's average per period: the
// shortest whole-second period up to a day over which a whole average gives
// exactly rate as Traefik computes it (New in
// pkg/middlewares/ratelimiter/rate_limiter.go: float64(average·1e9) /
// float64(period in ns)); ok is false when there is none.
func TraefikRate(rate float64) (average int64, period time.Duration, ok bool) {
	if !(rate > 0) || rate > maxRate {
		return 0, 0, false
	}
	for s := int64(1); s <= maxTraefikPeriodS; s++ {
		a := math.Round(rate * float64(s))
		if a < 1 || a > math.MaxInt64/1e9 {
			continue
		}
		avg, per := int64(a), time.Duration(s)*time.Second
		if traefikLimit(avg, per) == rate {
			return avg, per, true
		}
	}
	return 0, 0, false
}

// traefikLimit is the rate (requests/s) Traefik's New computes from average
// (requests) and period (ns, > 0).
func traefikLimit(average int64, period time.Duration) float64 {
	return float64(average*int64(time.Second)) / float64(period)
}

// TraefikPolicy is the policy a Traefik rateLimit middleware with average
// (requests per period), period and burst (requests) decides as, mapped as
// its New does: period 0 is 1 s, burst is at least 1; limited is false for
// average 0 (Traefik then limits nothing: every request passes at once).
// A negative average or period is an error naming the field, as is a rate
// Validate refuses.
func TraefikPolicy(average int64, period time.Duration, burst int64) (p Policy, limited bool, err error) {
	switch {
	case average < 0:
		return p, false, fieldErr("average", "must be >= 0 requests, got %d", average)
	case period < 0:
		return p, false, fieldErr("period", "must be >= 0 s, got %v", period)
	case average == 0:
		return p, false, nil
	}
	if period == 0 {
		period = time.Second
	}
	p = Policy{Algorithm: Traefik, Rate: traefikLimit(average, period), Capacity: max(burst, 1)}
	return p, true, p.Validate()
}

// traefikMaxDelayNs is the longest a Traefik request waits for its token,
// ns (New): 500 ms below 1 request/s, else 1 s / (2·int(rate)) in integer
// ns.
func traefikMaxDelayNs(rate float64) int64 {
	if rate < 1 {
		return int64(500 * time.Millisecond)
	}
	return int64(time.Second / (time.Duration(rate) * 2))
}

// traefikTTLS is how long an idle source's bucket is kept, whole s (New): 2
// at 1 request/s or more, else 1 + int(1/rate).
func traefikTTLS(rate float64) int64 {
	if rate >= 1 {
		return 2
	}
	return 1 + int64(1/rate)
}

var _ decider = (*traefikLimiter)(nil)

// traefikLimiter is Traefik v3's rateLimit middleware for one source, in
// golang.org/x/time/rate's float64 arithmetic, which it reproduces step by
// step (the model's token_bucket is exact instead; here the drift is
// Traefik's):
//
//   - inMemoryRateLimiter.Allow: Get the source's bucket from the ttlmap,
//     or a new rate.NewLimiter(rate, burst) (tokens = burst); Set it with
//     the TTL whether or not the request passes; then Reserve().
//   - mailgun/ttlmap: Set stores expiry Unix(now + ttl s); Get drops the
//     entry when expiry <= Unix(now), both in whole seconds (floor).
//   - Limiter.reserveN(now, 1, InfDuration): tokens = advance(now) − 1; a
//     negative count waits durationFromTokens(−tokens); the reservation is
//     always OK (burst >= 1), and last = now, tokens are stored.
//   - rateLimiter.ServeHTTP: a delay at most maxDelay is served after it
//     (time.After); beyond it, 429 and Reservation.CancelAt(now), which
//     restores the token: tokens = advance(now) + 1, capped at burst (the
//     restore is 1 − tokensFromDuration(lastEvent − timeToAct) = 1, as
//     lastEvent is this reservation's).
//
// Event times are ns since originNs, a Unix time (NewDeciderAt), which
// places the TTL's whole seconds. Traefik's ttlmap holds at most 65536
// sources (evicting the soonest to expire); the model keeps every key.
type traefikLimiter struct {
	limit      float64 // rate.Limit, requests/s
	burst      float64 // float64(burst), requests
	maxDelayNs int64
	ttlS       int64
	originNs   int64

	fresh   bool    // no bucket: the next request makes a full one
	tokens  float64 // Limiter.tokens
	lastNs  int64   // Limiter.last, Unix ns
	expiryS int64   // ttlmap expiry, Unix s
	delayNs int64   // delay of the request last admitted
	hasLast bool    // Limiter.last is set (not the zero time)
}

func (d *traefikLimiter) configure(p Policy) {
	d.limit, d.burst = p.Rate, float64(p.Capacity)
	d.maxDelayNs, d.ttlS = traefikMaxDelayNs(p.Rate), traefikTTLS(p.Rate)
	d.originNs = 0
	d.Reset()
}

func (d *traefikLimiter) atOrigin(originNs int64) { d.originNs = originNs }

func (d *traefikLimiter) Reset()         { d.fresh = true }
func (d *traefikLimiter) DelayNs() int64 { return d.delayNs }

// touch is the ttlmap's Get and Set at Unix time now (ns): a bucket expired
// by now is dropped and a new, full one takes its place; the expiry moves to
// now + ttl.
func (d *traefikLimiter) touch(now int64) {
	sec := floorDiv(now, 1e9)
	if d.fresh || d.expiryS <= sec {
		d.fresh, d.tokens, d.hasLast = false, d.burst, false
	}
	d.expiryS = sec + d.ttlS
}

// seconds is time.Duration.Seconds.
func seconds(ns int64) float64 {
	return float64(ns/1e9) + float64(ns%1e9)/1e9
}

// advance is Limiter.advance at now (ns): the tokens after the refill since
// last (tokensFromDuration: d.Seconds()·limit), capped at burst. A new
// Limiter's last is the zero time, so its elapsed time saturates and it is
// full.
func (d *traefikLimiter) advance(now int64) float64 {
	if !d.hasLast {
		return d.burst
	}
	last := min(d.lastNs, now)
	return min(d.tokens+seconds(now-last)*d.limit, d.burst)
}

// reserve is Limiter.reserveN(now, 1, InfDuration): the wait before the
// token, ns (durationFromTokens, truncated toward zero).
func (d *traefikLimiter) reserve(now int64) int64 {
	tokens := d.advance(now) - 1
	var wait int64
	if tokens < 0 {
		w := (-tokens / d.limit) * float64(time.Second)
		if w > math.MaxInt64 {
			wait = math.MaxInt64 // InfDuration
		} else {
			wait = int64(w)
		}
	}
	d.lastNs, d.hasLast, d.tokens = now, true, tokens
	return wait
}

func (d *traefikLimiter) Allow(t int64) bool {
	now := d.originNs + t
	d.touch(now)
	wait := d.reserve(now)
	if wait > d.maxDelayNs {
		// CancelAt(now): advance(now) adds 0·limit, then the token returns.
		d.tokens = min(d.advance(now)+1, d.burst)
		return false
	}
	d.delayNs = wait
	return true
}

func (d *traefikLimiter) AllowN(t, n int64) int64 {
	var k int64
	for range n { // each call: a cancelled token comes back in float64, not always bit for bit
		if d.Allow(t) {
			k++
		}
	}
	return k
}

func (d *traefikLimiter) peek(t int64) bool {
	c := *d
	return c.Allow(t)
}

// charge commits a request at t as an admitted one: the TTL and the
// reservation, never cancelled.
func (d *traefikLimiter) charge(t int64) {
	now := d.originNs + t
	d.touch(now)
	d.reserve(now)
}

func (d *traefikLimiter) cloneInto(dst decider) decider { return copyInto(dst, d) }

// stateSize: the tokens, the last time and the expiry, live while the
// bucket is kept and not full.
func (d *traefikLimiter) stateSize(t int64) (bool, int64) {
	now := d.originNs + t
	live := !d.fresh && d.expiryS > floorDiv(now, 1e9) && d.advance(now) < d.burst
	return live, 3 * wordBytes
}
