package model_test

import (
	"context"
	"testing"
	"time"

	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	"golang.org/x/time/rate"
)

// The oracle libraries run on the tests' virtual clock: a request at tNs
// (ns from a trace's time 0, as a decider takes it) is at onClock(tNs).

// onClock is the library time of tNs: base plus tNs ns.
func onClock(tNs int64) time.Time { return base.Add(time.Duration(tNs)) }

// xRate is golang.org/x/time/rate's Limiter, whose methods take the time.
type xRate struct{ *rate.Limiter }

// newXRate is rate.NewLimiter(r, b).
func newXRate(r float64, b int) xRate { return xRate{rate.NewLimiter(rate.Limit(r), b)} }

// allow is AllowN(onClock(tNs), n).
func (x xRate) allow(tNs, n int64) bool { return x.AllowN(onClock(tNs), int(n)) }

// throttledGCRA is throttled's GCRA rate limiter on a memstore whose clock
// reads the time of the request being decided.
type throttledGCRA struct {
	t   *testing.T
	lim *throttled.GCRARateLimiterCtx
	now time.Time
}

// newThrottledGCRA is throttled's limiter of n requests per period with
// MaxBurst maxBurst.
func newThrottledGCRA(t *testing.T, n int, period time.Duration, maxBurst int) *throttledGCRA {
	t.Helper()
	store, err := memstore.New(0)
	if err != nil {
		t.Fatal(err)
	}
	g := &throttledGCRA{t: t}
	store.SetTimeNow(func() time.Time { return g.now })
	g.lim, err = throttled.NewGCRARateLimiterCtx(throttled.WrapStoreWithContext(store),
		throttled.RateQuota{MaxRate: throttled.PerDuration(n, period), MaxBurst: maxBurst})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// rateLimitAt is RateLimitCtx of quantity requests of one key at time now.
func (g *throttledGCRA) rateLimitAt(now time.Time, quantity int) (limited bool, res throttled.RateLimitResult) {
	g.t.Helper()
	g.now = now
	limited, res, err := g.lim.RateLimitCtx(context.Background(), "k", quantity)
	if err != nil {
		g.t.Fatal(err)
	}
	return limited, res
}

// rateLimit is rateLimitAt(onClock(tNs), quantity).
func (g *throttledGCRA) rateLimit(tNs int64, quantity int) (limited bool, res throttled.RateLimitResult) {
	g.t.Helper()
	return g.rateLimitAt(onClock(tNs), quantity)
}
