package model

import "time"

// Adapters from the parameters of real limiters to the canonical gcra policy
// (rate in requests/s; capacity = requests admitted at once from idle). Each
// library names the capacity differently (docs/algorithms.md):
//
//	x/time/rate NewLimiter(r, b)              capacity = b
//	go-redis/redis_rate Limit{Rate, Burst, Period}  capacity = Burst
//	throttled RateQuota{PerDuration(n, d), MaxBurst m}  capacity = m+1
//	nginx limit_req rate=… burst=B nodelay    capacity = B+1
//
// The oracle tests check the x/time/rate and throttled adapters decision by
// decision, and nginx nodelay against gcra on a millisecond grid.

// GCRAFromXTimeRate is the gcra policy of x/time/rate's NewLimiter(r, b),
// r in events/s.
func GCRAFromXTimeRate(r float64, b int) Policy {
	return Policy{Algorithm: GCRA, Rate: r, Capacity: int64(b)}
}

// GCRAFromRedisRate is the gcra policy of go-redis/redis_rate's
// Limit{Rate: rate, Burst: burst, Period: period}: rate/period requests per
// second and burst at once (Burst 0 never admits anything and has no gcra
// equivalent; it gives capacity 0, which Validate rejects).
func GCRAFromRedisRate(rate, burst int, period time.Duration) Policy {
	return Policy{Algorithm: GCRA, Rate: float64(rate) / period.Seconds(), Capacity: int64(burst)}
}

// GCRAFromThrottled is the gcra policy of throttled's
// RateQuota{MaxRate: PerDuration(n, period), MaxBurst: maxBurst}: MaxBurst is
// the number of requests beyond the first, so capacity = maxBurst+1.
// (throttled's PerSec(n) is PerDuration(n, time.Second).)
func GCRAFromThrottled(n int, period time.Duration, maxBurst int) Policy {
	return Policy{Algorithm: GCRA, Rate: float64(n) / period.Seconds(), Capacity: int64(maxBurst) + 1}
}

// GCRAFromNginx is the gcra policy of nginx's limit_req rate=rate burst=burst
// nodelay, rate in requests/s (see NginxRate): capacity = burst+1. It equals
// the nginx policy exactly when nginx's integer leak is exact (whole rates
// per second on a millisecond clock).
func GCRAFromNginx(rate float64, burst int) Policy {
	return Policy{Algorithm: GCRA, Rate: rate, Capacity: int64(burst) + 1}
}

// NginxRate converts nginx's rate=Nr/s (perMinute false) or rate=Nr/m
// (perMinute true) to requests/s. The nginx policy then truncates it to whole
// milli-requests/s as nginx does (1r/m runs at 0.016 r/s).
func NginxRate(n int, perMinute bool) float64 {
	if perMinute {
		return float64(n) / 60
	}
	return float64(n)
}
