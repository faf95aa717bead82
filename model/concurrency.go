package model

import "fmt"

// concurrencyAlgorithm is concurrency, Stripe's in-flight limit with a
// constant service time: an admitted request is in flight for service_s, so
// the requests in flight at t are those admitted in (t - service_s, t], and
// its decider is sliding_window's with window service_s (sliding_log.go).
// service_s is a property of the backend, not a setting.
var concurrencyAlgorithm = Descriptor{
	Name: "concurrency", Family: InFlightFamily, ColorSlot: 8,
	Example: "concurrency limit=10 service_s=0.5",
	Params:  []string{"limit", "service_s"},
	Cost:    260,
	Validate: func(p Policy) error {
		if p.Limit < 0 {
			return fieldErr("limit", "must be >= 0 requests in flight, got %d", p.Limit)
		}
		if !(p.ServiceS > 0) || p.ServiceS*1e9 > maxSpanNs {
			return fieldErr("service_s", "must be a finite number > 0 seconds, got %v", p.ServiceS)
		}
		return nil
	},
	Label:      func(p Policy) string { return fmt.Sprintf("concurrency %d in flight", p.Limit) },
	Why:        func(p Policy) string { return fmt.Sprintf("cut with %d requests in flight", p.Limit) },
	AxisLabels: map[string]string{"limit": "limit (requests in flight)"},
	blank:      func() decider { return &slidingLogLimiter{} },
	lockstep:   func(ps []Policy, _ int64) (Lockstep, bool) { return newWindowLockstep(ps) },
}
