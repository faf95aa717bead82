package model_test

// Oracle tests: the Deciders that the event simulation runs agree, decision
// by decision, with the real limiter libraries on random request traces
// (virtual clocks, non-decreasing times; limiters.md §1, §2b, §5).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/RussellLuo/slidingwindow"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	"golang.org/x/time/rate"

	"github.com/ratesweep/ratesweep/model"
)

const oracleTraces = 1200 // per library

// base is the virtual clock's origin (time 0 of a trace).
var base = time.Unix(1_700_000_000, 0)

// randomTrace returns n non-decreasing request times, ns from 0, mixing
// simultaneous requests, sub-period gaps and idle spells around period ns.
// With grid > 1 every time is a multiple of grid.
func randomTrace(rng *rand.Rand, n int, period, grid int64) []int64 {
	times := make([]int64, n)
	var t int64
	for i := range times {
		var gap int64
		switch rng.IntN(8) {
		case 0, 1: // same instant
		case 2, 3:
			gap = rng.Int64N(max(1, period/4))
		case 4:
			gap = rng.Int64N(2 * period)
		case 5:
			gap = period + rng.Int64N(3) - 1 // exactly one period, ±1 ns
		case 6:
			gap = rng.Int64N(max(1, period/1000))
		case 7:
			gap = rng.Int64N(20 * period)
		}
		t += gap
		if grid > 1 {
			t -= t % grid
		}
		times[i] = t
	}
	return times
}

// agree runs decider d and the oracle allow over times and reports the first
// disagreement.
func agree(t *testing.T, what string, d model.Decider, allow func(time.Time) bool, times []int64) (allowed int) {
	t.Helper()
	for i, tNs := range times {
		want := allow(base.Add(time.Duration(tNs)))
		if got := d.Allow(tNs); got != want {
			t.Fatalf("%s: request %d at %d ns: decider says %v, library %v (trace %v)", what, i, tNs, got, want, times[:i+1])
		}
		if want {
			allowed++
		}
	}
	return allowed
}

// Event-mode token_bucket vs golang.org/x/time/rate Limiter.AllowN(t, 1),
// for any rate (the decider repeats x/time/rate's float arithmetic, including
// the forgiven sub-nanosecond deficit).
func TestOracleTokenBucketXTimeRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	nice := []float64{1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000}
	var decisions, allowed int
	for trace := range oracleTraces {
		r := nice[rng.IntN(len(nice))]
		if trace%2 == 1 { // any rate, e.g. 3/s (limiters.md §1 quirk 2)
			r = 0.05 + rng.Float64()*300
		}
		b := 1 + rng.IntN(20)
		p := model.Policy{Algorithm: model.TokenBucket, Rate: r, Capacity: int64(b)}
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		lim := rate.NewLimiter(rate.Limit(r), b)
		times := randomTrace(rng, 250, int64(1e9/r), 1)
		allowed += agree(t, fmt.Sprint(p), d, func(at time.Time) bool { return lim.AllowN(at, 1) }, times)
		decisions += len(times)
	}
	t.Logf("x/time/rate: %d traces, %d decisions (%d allowed), all agree", oracleTraces, decisions, allowed)
}

// gcra vs github.com/throttled/throttled/v2 GCRA with a memstore on a
// virtual clock, through the GCRAFromThrottled adapter (capacity =
// MaxBurst+1, emission interval period/n truncated to whole ns).
func TestOracleGCRAThrottled(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	var decisions, allowed int
	for trace := range oracleTraces {
		n := 1 + rng.IntN(1000)
		period := time.Second
		switch trace % 3 {
		case 1:
			period = time.Minute
		case 2:
			n = 1 + rng.IntN(50)
			period = time.Duration(1+rng.IntN(5000)) * time.Millisecond
		}
		maxBurst := rng.IntN(20)
		store, err := memstore.New(0)
		if err != nil {
			t.Fatal(err)
		}
		var now time.Time
		store.SetTimeNow(func() time.Time { return now })
		lim, err := throttled.NewGCRARateLimiterCtx(throttled.WrapStoreWithContext(store),
			throttled.RateQuota{MaxRate: throttled.PerDuration(n, period), MaxBurst: maxBurst})
		if err != nil {
			t.Fatal(err)
		}
		p := model.GCRAFromThrottled(n, period, maxBurst)
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		times := randomTrace(rng, 250, int64(period)/int64(n), 1)
		allowed += agree(t, fmt.Sprintf("%v (throttled %d per %v, MaxBurst %d)", p, n, period, maxBurst), d, func(at time.Time) bool {
			now = at
			limited, _, err := lim.RateLimitCtx(context.Background(), "k", 1)
			if err != nil {
				t.Fatal(err)
			}
			return !limited
		}, times)
		decisions += len(times)
	}
	t.Logf("throttled: %d traces, %d decisions (%d allowed), all agree", oracleTraces, decisions, allowed)
}

// sliding_counter vs github.com/RussellLuo/slidingwindow with a LocalWindow
// (windows aligned at the trace's origin).
func TestOracleSlidingCounterRussellLuo(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 1))
	var decisions, allowed int
	for range oracleTraces {
		w := 1 + rng.IntN(10)
		if rng.IntN(4) == 0 {
			w = 60
		}
		limit := rng.IntN(30)
		size := time.Duration(w) * time.Second
		origin := base.Truncate(size)
		lim, _ := slidingwindow.NewLimiter(size, int64(limit), func() (slidingwindow.Window, slidingwindow.StopFunc) {
			return slidingwindow.NewLocalWindow()
		})
		p := model.Policy{Algorithm: model.SlidingCounter, WindowS: w, Limit: int64(limit)}
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		times := randomTrace(rng, 250, int64(size)/int64(max(limit, 1)), 1)
		offset := base.Sub(origin)
		allowed += agree(t, fmt.Sprint(p), d, func(at time.Time) bool {
			return lim.AllowN(at.Add(-offset), 1)
		}, times)
		decisions += len(times)
	}
	t.Logf("RussellLuo/slidingwindow: %d traces, %d decisions (%d allowed), all agree", oracleTraces, decisions, allowed)
}

// The gcra adapter for x/time/rate: gcra with capacity b decides as
// rate.NewLimiter(r, b) when 1e9/r is whole and times are on a ms grid.
func TestOracleGCRAXTimeRateAdapter(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	rates := []float64{1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000}
	for range oracleTraces {
		r, b := rates[rng.IntN(len(rates))], 1+rng.IntN(20)
		d, err := model.NewDecider(model.GCRAFromXTimeRate(r, b))
		if err != nil {
			t.Fatal(err)
		}
		lim := rate.NewLimiter(rate.Limit(r), b)
		times := randomTrace(rng, 250, int64(1e9/r), int64(time.Millisecond))
		agree(t, fmt.Sprintf("gcra adapter of x/time/rate r=%v b=%d", r, b), d,
			func(at time.Time) bool { return lim.AllowN(at, 1) }, times)
	}
}

// nginx nodelay is gcra with capacity burst+1 (GCRAFromNginx) when nginx's
// integer leak is exact: whole rates dividing 1e9, times on a ms grid.
func TestNginxNodelayIsGCRA(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 1))
	rates := []int{1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000}
	for range oracleTraces {
		r, burst := rates[rng.IntN(len(rates))], rng.IntN(20)
		ng, err := model.NewDecider(model.Policy{Algorithm: model.Nginx, Rate: model.NginxRate(r, false), Burst: int64(burst), Delay: int64(burst)})
		if err != nil {
			t.Fatal(err)
		}
		g, err := model.NewDecider(model.GCRAFromNginx(float64(r), burst))
		if err != nil {
			t.Fatal(err)
		}
		times := randomTrace(rng, 250, int64(1e9)/int64(r), int64(time.Millisecond))
		agree(t, fmt.Sprintf("nginx rate=%dr/s burst=%d nodelay vs gcra", r, burst), ng,
			func(at time.Time) bool { return g.Allow(int64(at.Sub(base))) }, times)
	}
}
