package model_test

// Oracle tests of request costs: the deciders of a Costed policy spend a
// request's cost units all or nothing, decision by decision as the real
// libraries' n-unit calls do on the same random traces with random costs:
// x/time/rate's AllowN(t, c), throttled's RateLimit(key, c) and
// RussellLuo/slidingwindow's AllowN(t, c).

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/RussellLuo/slidingwindow"

	"github.com/ratesweep/ratesweep/model"
)

// randomCosts returns n costs in 1..max, mostly small, some above max
// (requests no limiter of that size can ever admit).
func randomCosts(rng *rand.Rand, n int, maxCost int64) []int64 {
	cs := make([]int64, n)
	for i := range cs {
		switch rng.IntN(10) {
		case 0:
			cs[i] = maxCost + 1 + rng.Int64N(3)
		case 1, 2, 3:
			cs[i] = 1
		default:
			cs[i] = 1 + rng.Int64N(maxCost)
		}
	}
	return cs
}

// costDecider returns the RequestDecider of p over traffic with costs.
func costDecider(t *testing.T, p model.Policy, originNs int64) model.RequestDecider {
	t.Helper()
	p.Costed = true
	d, err := model.NewDeciderAt(p, originNs)
	if err != nil {
		t.Fatal(err)
	}
	rd, ok := d.(model.RequestDecider)
	if !ok {
		t.Fatalf("%v: decider %T is not a RequestDecider", p, d)
	}
	return rd
}

// allowCost is ratBucket's rule for a request of cost c: admitted iff the
// deficit c tokens leave is below 1 ns of refill (x/time/rate's ReserveN
// with no wait; c above the capacity never is).
func (b *ratBucket) allowCost(t, c int64) bool {
	tokens := new(big.Rat).Set(b.capacity)
	if !b.fresh {
		e := new(big.Rat).SetFrac64(t-b.last, 1e9)
		tokens.Add(b.tokens, e.Mul(e, b.rate))
		if tokens.Cmp(b.capacity) > 0 {
			tokens.Set(b.capacity)
		}
	}
	tokens.Sub(tokens, big.NewRat(c, 1))
	oneNs := new(big.Rat).Mul(b.rate, big.NewRat(1, 1e9))
	deficit := new(big.Rat).Neg(tokens)
	b.onBoundary = deficit.Cmp(oneNs) == 0
	if deficit.Cmp(oneNs) >= 0 || c > b.capacity.Num().Int64() {
		return false
	}
	b.fresh, b.tokens, b.last = false, tokens, t
	return true
}

// token_bucket with costs vs x/time/rate Limiter.AllowN(t, c) on its own
// clock: every decision equals the exact-fraction mirror of the library's
// rule, and the library's own except where its float64 tokens round at an
// exact 1 ns boundary (counted, as in TestOracleTokenBucketXTimeRate).
func TestOracleCostTokenBucketAllowN(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	nice := []float64{1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000}
	var decisions, allowed, boundaries, heavy int
	for trace := range oracleTraces {
		r := nice[rng.IntN(len(nice))]
		switch trace % 3 {
		case 1:
			r = float64(50+rng.IntN(300_000)) / 1000
		case 2:
			r = float64(1+rng.IntN(100)) / float64(1+rng.IntN(60))
		}
		b := 1 + rng.IntN(30)
		p := model.Policy{Algorithm: model.TokenBucket, Rate: r, Capacity: int64(b)}
		d := costDecider(t, p, 0)
		lim := newXRate(r, b)
		mirror := newRatBucket(r, int64(b))
		times := randomTrace(rng, 250, int64(1e9/r), 1)
		costs := randomCosts(rng, len(times), int64(b))
		for i, tNs := range times {
			c := costs[i]
			got, exact := d.AllowRequest(tNs, c, 0), mirror.allowCost(tNs, c)
			if got != exact {
				t.Fatalf("%v: request %d at %d ns cost %d: decider says %v, exact fractions %v", p, i, tNs, c, got, exact)
			}
			decisions++
			if lib := lim.allow(tNs, c); lib != got {
				if !mirror.onBoundary {
					t.Fatalf("%v: request %d at %d ns cost %d: decider says %v, library %v (not at a 1 ns boundary)", p, i, tNs, c, got, lib)
				}
				boundaries++
				break
			}
			if got {
				allowed++
				if c > 1 {
					heavy++
				}
			}
		}
	}
	if boundaries > oracleTraces/20 {
		t.Errorf("%d of %d traces ended on a boundary: too many to be rounding", boundaries, oracleTraces)
	}
	if heavy == 0 {
		t.Error("no request of cost > 1 was admitted: the traces test nothing")
	}
	t.Logf("x/time/rate AllowN: %d traces, %d decisions (%d allowed, %d of cost > 1), all agree but %d exact 1 ns boundaries", oracleTraces, decisions, allowed, heavy, boundaries)
}

// gcra with costs vs throttled's GCRA RateLimit(key, quantity) on a
// virtual clock.
func TestOracleCostGCRAThrottled(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 2))
	var decisions, allowed int
	for trace := range oracleTraces / 2 {
		n := 1 + rng.IntN(1000)
		period := time.Second
		if trace%2 == 1 {
			n, period = 1+rng.IntN(50), time.Duration(1+rng.IntN(5000))*time.Millisecond
		}
		maxBurst := rng.IntN(20)
		lim := newThrottledGCRA(t, n, period, maxBurst)
		p := model.GCRAFromThrottled(n, period, maxBurst)
		d := costDecider(t, p, 0)
		times := randomTrace(rng, 250, int64(period)/int64(n), 1)
		costs := randomCosts(rng, len(times), int64(maxBurst+1))
		for i, tNs := range times {
			limited, _ := lim.rateLimit(tNs, int(costs[i]))
			if got := d.AllowRequest(tNs, costs[i], 0); got != !limited {
				t.Fatalf("%v (throttled %d per %v, MaxBurst %d): request %d at %d ns cost %d: decider says %v, library %v",
					p, n, period, maxBurst, i, tNs, costs[i], got, !limited)
			}
			decisions++
			allowed += b2i(!limited)
		}
	}
	t.Logf("throttled quantity: %d decisions (%d allowed), all agree", decisions, allowed)
}

// sliding_counter with costs vs RussellLuo/slidingwindow's AllowN(t, c),
// windows on the Unix epoch.
func TestOracleCostSlidingCounterRussellLuo(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 3))
	var decisions, allowed int
	for range oracleTraces / 2 {
		w := dayWindows[rng.IntN(len(dayWindows))]
		limit := 1 + rng.IntN(40)
		size := time.Duration(w) * time.Second
		origin := base.Add(time.Duration(rng.Int64N(int64(24 * time.Hour))))
		lim, _ := slidingwindow.NewLimiter(size, int64(limit), func() (slidingwindow.Window, slidingwindow.StopFunc) {
			return slidingwindow.NewLocalWindow()
		})
		p := model.Policy{Algorithm: model.SlidingCounter, WindowS: w, Limit: int64(limit)}
		d := costDecider(t, p, origin.UnixNano())
		times := randomTrace(rng, 250, int64(size)/int64(limit), 1)
		costs := randomCosts(rng, len(times), int64(limit))
		for i, tNs := range times {
			want := lim.AllowN(origin.Add(time.Duration(tNs)), costs[i])
			if got := d.AllowRequest(tNs, costs[i], 0); got != want {
				t.Fatalf("%v from %v: request %d at +%d ns cost %d: decider says %v, library %v (times %v, costs %v)", p, origin, i, tNs, costs[i], got, want, times[:i+1], costs[:i+1])
			}
			decisions++
			allowed += b2i(want)
		}
	}
	t.Logf("RussellLuo AllowN: %d decisions (%d allowed), all agree", decisions, allowed)
}
