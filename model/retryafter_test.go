package model_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/model"
)

// token_bucket's Retry-After vs x/time/rate's Reservation.DelayFrom on the
// library's own clock: at every request the library rejects, reserve a
// token, read the delay and cancel the reservation (which returns the
// token, the reservation being the last). The library's float64 tokens may
// round a wait by a few ns; a trace ends where the decisions part (the 1 ns
// boundaries TestOracleTokenBucketXTimeRate counts).
func TestRetryAfterTokenBucketXTimeRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	var compared int
	for range 400 {
		r := []float64{1, 2, 5, 10, 50, 100, 250}[rng.IntN(7)]
		if rng.IntN(2) == 0 {
			r = float64(1+rng.IntN(100)) / float64(1+rng.IntN(60))
		}
		b := 1 + rng.IntN(20)
		p := model.Policy{Algorithm: model.TokenBucket, Rate: r, Capacity: int64(b)}
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		lim := newXRate(r, b)
		for i, tNs := range randomTrace(rng, 200, int64(1e9/r), 1) {
			at := onClock(tNs)
			got := model.RetryAfter(d, tNs)
			if lib := lim.AllowN(at, 1); lib != d.Allow(tNs) {
				break
			} else if lib {
				if got != 0 {
					t.Fatalf("%v: request %d at %d ns admitted, but Retry-After %d ns", p, i, tNs, got)
				}
				continue
			}
			res := lim.ReserveN(at, 1)
			want := int64(res.DelayFrom(at))
			res.CancelAt(at)
			if diff := got - want; diff < -2 || diff > 2+want/1e9 {
				t.Fatalf("%v: request %d at %d ns: Retry-After %d ns, Reservation.Delay %d ns", p, i, tNs, got, want)
			}
			compared++
		}
	}
	t.Logf("x/time/rate: %d rejections, every Retry-After equals Reservation.Delay within a few ns", compared)
}

// gcra's Retry-After vs throttled's RateLimitResult.RetryAfter (GCRA on a
// memstore with a virtual clock, through GCRAFromThrottled): equal to the
// ns at every rejection.
func TestRetryAfterGCRAThrottled(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 2))
	var compared int
	for range 400 {
		n, period := 1+rng.IntN(200), time.Duration(1+rng.IntN(5000))*time.Millisecond
		maxBurst := rng.IntN(20)
		lim := newThrottledGCRA(t, n, period, maxBurst)
		p := model.GCRAFromThrottled(n, period, maxBurst)
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, tNs := range randomTrace(rng, 200, int64(period)/int64(n), 1) {
			got := model.RetryAfter(d, tNs)
			limited, res := lim.rateLimit(tNs, 1)
			if d.Allow(tNs) == limited {
				t.Fatalf("%v: request %d at %d ns: decisions differ", p, i, tNs)
			}
			want := int64(0)
			if limited {
				want = int64(res.RetryAfter)
				compared++
			}
			if got != want {
				t.Fatalf("%v: request %d at %d ns (limited %v): Retry-After %d ns, throttled %d ns", p, i, tNs, limited, got, want)
			}
		}
	}
	t.Logf("throttled: %d rejections, every Retry-After equal", compared)
}
