package export

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ratesweep/ratesweep/model"
)

// Each target has one table, from an algorithm of the model to the form in
// which the target configures it; an algorithm missing from a target's
// table is one the target cannot configure, and the target's nearest rule
// says what it configures instead. Nothing else in export chooses by
// algorithm except families, the one table of what every target needs of
// an algorithm (its rate and capacity, its division over replicas).

// A target is one proxy or library.
type target struct {
	comment func(string) string // hashComment or slashComment: its configuration's comments
	forms   map[model.Algorithm]form
	// nearest is the policy the target configures, by rule, for a policy it
	// has no form for (or whose parameters it cannot write), with the same
	// long-run rate and the same requests at once from idle; why says what
	// the target lacks.
	nearest func(p model.Policy, rate float64, capacity int64) (q model.Policy, why string)
	write   func(r *Result, o Options) error
}

// A form is how a target configures one algorithm.
type form struct {
	fit Fit
	// as is the policy the configuration implements for p (p itself when
	// exact); ok is false when the target cannot write p's parameters.
	as func(p model.Policy) (q model.Policy, ok bool)
	// differs says how the target decides otherwise than the configured
	// policy q, "" when it does not; a form that differs is Nearest.
	differs func(q model.Policy) string
	// detail is what the target's configuration names for the form (Redis:
	// the script).
	detail string
}

var targets = map[string]target{
	"nginx": {hashComment, nginxForms, nearestNginx, writeNginx},
	"haproxy": {hashComment, map[model.Algorithm]form{
		model.HAProxyRate:    {Exact, func(p model.Policy) (model.Policy, bool) { return p, haproxyPeriodOK(p.PeriodS) }, nil, ""},
		model.SlidingCounter: {Nearest, counterAsHAProxy, haproxyPeriods, ""},
	}, nearestHAProxy, writeHAProxy},
	"envoy": {hashComment, map[model.Algorithm]form{
		model.FixedWindow: {Exact, epochWindow(envoyUnits), nil, ""},
		model.TokenBucket: {Exact, whenRate(envoyRateOK, same), nil, ""},
		model.GCRA:        {Equivalent, whenRate(envoyRateOK, bucketOf), nil, ""},
		model.Nginx:       {Equivalent, whenNodelay(whenRate(envoyRateOK, bucketOf)), nginxTruncates, ""},
	}, nearestEnvoy, writeEnvoy},
	"kong": {hashComment, map[model.Algorithm]form{
		model.FixedWindow: {Exact, epochWindow(kongUnits), nil, ""},
	}, nearestWindow(kongUnits, "Kong's rate-limiting plugin counts in calendar-aligned fixed windows (second, minute, hour, day, month, year)"), writeKong},
	"traefik": {hashComment, map[model.Algorithm]form{
		model.Traefik:     {Exact, whenRate(traefikRateOK, same), nil, ""},
		model.TokenBucket: {Nearest, whenRate(traefikRateOK, traefikOf), traefikReserve, ""},
		model.GCRA:        {Nearest, whenRate(traefikRateOK, traefikOf), traefikReserve, ""},
		model.Nginx:       {Nearest, whenNodelay(whenRate(traefikRateOK, traefikOf)), traefikReserve, ""},
	}, nearestTraefik, writeTraefik},
	"go": {slashComment, map[model.Algorithm]form{
		model.TokenBucket: {Exact, same, nil, ""},
		model.GCRA:        {Equivalent, bucketOf, nil, ""},
		model.Nginx:       {Equivalent, whenNodelay(bucketOf), nginxTruncates, ""},
	}, nearestGo, writeGo},
	"redis":      {slashComment, redisForms, nearestRedis, writeRedis},
	"aws-waf":    {hashComment, awsWAFForms, nearestAWSWAF, writeAWSWAF},
	"cloudflare": {hashComment, cloudflareForms, nearestCloudflare, writeCloudflare},
	"fastly":     {hashComment, fastlyForms, nearestFastly, writeFastly},
	"fail2ban":   {hashComment, fail2banForms, nearestFail2ban, writeFail2ban},
}

var nginxForms = map[model.Algorithm]form{
	model.Nginx:       {Exact, whenRate(nginxRateOK, same), nil, ""},
	model.TokenBucket: {Equivalent, whenRate(nginxRateOK, nodelayNginx), nginxTruncates, ""},
	model.GCRA:        {Equivalent, whenRate(nginxRateOK, nodelayNginx), nginxTruncates, ""},
}

var redisForms = map[model.Algorithm]form{
	model.FixedWindow:   {Exact, same, nil, "fixed_window.lua"},
	model.SlidingWindow: {Exact, same, nil, "sliding_log.lua (count_rejected 0)"},
	model.SlidingLog:    {Exact, same, nil, "sliding_log.lua (count_rejected 1)"},
	model.TokenBucket:   {Exact, same, nil, "token_bucket.lua"},
}

func same(p model.Policy) (model.Policy, bool) { return p, true }

// nodelayNginx is a bucket of capacity C as nginx: burst C−1, nodelay.
func nodelayNginx(p model.Policy) (model.Policy, bool) {
	return model.Policy{Algorithm: model.Nginx, Rate: p.Rate, Burst: p.Capacity - 1, Delay: p.Capacity - 1}, true
}

// traefikOf is the traefik policy Traefik's rateLimit runs when configured
// with p's rate and requests at once from idle (average/period, burst).
func traefikOf(p model.Policy) (model.Policy, bool) {
	rate, capacity := familyOf(p.Algorithm).rateCap(p)
	return model.Policy{Algorithm: model.Traefik, Rate: rate, Capacity: capacity}, true
}

// bucketOf is the token bucket that decides as p (gcra; nodelay nginx:
// capacity burst+1).
func bucketOf(p model.Policy) (model.Policy, bool) {
	rate, capacity := familyOf(p.Algorithm).rateCap(p)
	return model.Policy{Algorithm: model.TokenBucket, Rate: rate, Capacity: capacity}, true
}

func whenRate(ok func(float64) bool, as func(model.Policy) (model.Policy, bool)) func(model.Policy) (model.Policy, bool) {
	return func(p model.Policy) (model.Policy, bool) {
		if !ok(p.Rate) {
			return model.Policy{}, false
		}
		return as(p)
	}
}

// whenNodelay: an nginx policy without delays (delay >= burst) only.
func whenNodelay(as func(model.Policy) (model.Policy, bool)) func(model.Policy) (model.Policy, bool) {
	return func(p model.Policy) (model.Policy, bool) {
		if p.Delay < p.Burst {
			return model.Policy{}, false
		}
		return as(p)
	}
}

func epochWindow(units []unit) func(model.Policy) (model.Policy, bool) {
	return func(p model.Policy) (model.Policy, bool) {
		_, ok := unitOf(units, p.WindowS)
		return p, ok && p.PhaseS == 0
	}
}

// A family is what every target needs of an algorithm.
type family struct {
	// rateCap is the long-run rate (requests/s) and the requests admitted at
	// once from idle: the two numbers every family shares.
	rateCap func(p model.Policy) (rate float64, capacity int64)
	// divide is the policy each of n replicas with their own state enforces:
	// 1/n of the rate and of the requests admitted at once (at least 1).
	divide func(p model.Policy, n int) model.Policy
}

var families = map[model.Algorithm]family{
	model.HAProxyRate: {func(p model.Policy) (float64, int64) { return float64(p.Limit) / p.PeriodS, p.Limit }, divideLimit},
	model.TokenBucket: bucketFamily, model.GCRA: bucketFamily, model.Traefik: bucketFamily,
	model.Nginx: {func(p model.Policy) (float64, int64) { return p.Rate, p.Burst + 1 }, func(p model.Policy, n int) model.Policy {
		p.Rate /= float64(n)
		p.Burst = divideCount(p.Burst+1, n) - 1
		p.Delay = min(p.Delay, p.Burst)
		return p
	}},
	model.Concurrency: {func(p model.Policy) (float64, int64) { return float64(p.Limit) / p.ServiceS, p.Limit }, divideLimit},
	model.CloudflareRule: {func(p model.Policy) (float64, int64) {
		return float64(p.RequestsPerPeriod) / p.PeriodS, p.RequestsPerPeriod
	}, func(p model.Policy, n int) model.Policy {
		p.RequestsPerPeriod = divideCount(p.RequestsPerPeriod, n)
		return p
	}},
	model.FastlyERL: {func(p model.Policy) (float64, int64) { return p.Rate, int64(p.Rate) * int64(p.WindowS) }, func(p model.Policy, n int) model.Policy {
		p.Rate = max(10, math.Round(p.Rate/float64(n)))
		return p
	}},
}

var (
	bucketFamily = family{func(p model.Policy) (float64, int64) { return p.Rate, p.Capacity }, func(p model.Policy, n int) model.Policy {
		p.Rate /= float64(n)
		p.Capacity = divideCount(p.Capacity, n)
		return p
	}}
	// windowFamily: every algorithm that counts limit requests per window.
	windowFamily = family{func(p model.Policy) (float64, int64) { return float64(p.Limit) / float64(p.WindowS), p.Limit }, divideLimit}
)

func familyOf(a model.Algorithm) family {
	if f, ok := families[a]; ok {
		return f
	}
	return windowFamily
}

func divideLimit(p model.Policy, n int) model.Policy { p.Limit = divideCount(p.Limit, n); return p }

func divideCount(v int64, n int) int64 { return max(1, int64(math.Round(float64(v)/float64(n)))) }

// configurable returns the policy that target configures for p in its
// form for p's algorithm, the fit, and how the target decides otherwise
// (for Nearest); ok is false when target has no form for p.
func configurable(p model.Policy, t target) (q model.Policy, fit Fit, differs string, ok bool) {
	f, ok := t.forms[p.Algorithm]
	if !ok {
		return q, 0, "", false
	}
	if q, ok = f.as(p); !ok {
		return q, 0, "", false
	}
	if f.differs != nil {
		if differs = f.differs(q); differs != "" {
			return q, Nearest, differs, true
		}
	}
	return q, f.fit, "", true
}

// Expressible reports whether target has a form for p, and how it fits
// (a Nearest form configures p's parameters, but the target decides
// otherwise: Traefik).
func Expressible(p model.Policy, target string) (bool, Fit) {
	return expressible(limitOnly(p), target)
}

func expressible(p model.Policy, target string) (bool, Fit) {
	if !boxExpressible(p, target) {
		return false, Nearest
	}
	_, fit, _, ok := configurable(p, targets[target])
	return ok, fit
}

// Translate returns the policy that target configures for p: p itself
// (Exact), an equivalent policy of another algorithm (Equivalent), or the
// nearest policy target can express by rule (Nearest): the same long-run
// rate and the same requests at once from idle, in the target's algorithm
// and units; why says what the target lacks or how it decides otherwise.
// NearestIn (with a run) chooses by metrics instead.
func Translate(p model.Policy, target string) (q model.Policy, fit Fit, why string, err error) {
	t, ok := targets[target]
	if !ok {
		return q, 0, "", fmt.Errorf("unknown target %q (one of %s)", target, strings.Join(Targets, ", "))
	}
	p = limitOnly(p)
	if err := p.Validate(); err != nil {
		return q, 0, "", err
	}
	if p.BlockS > 0 && target == "fail2ban" {
		return translateFail2banBox(p) // the ban is the box: fail2ban.go
	}
	if p.BlockS > 0 {
		return translateBox(p, target) // penaltybox.go
	}
	if q, fit, differs, ok := configurable(p, t); ok {
		return q, fit, differs, nil
	}
	rate, capacity := familyOf(p.Algorithm).rateCap(p)
	q, why = t.nearest(p, rate, max(capacity, 1))
	if err := q.Validate(); err != nil {
		return q, 0, "", fmt.Errorf("%s: no expressible policy near %s: %w", target, p.Canonical(), err)
	}
	if _, _, differs, ok := configurable(q, t); ok && differs != "" { // the target's own difference too
		why += "; " + differs
	}
	return q, Nearest, why, nil
}

// envoyUnits are envoy ratelimit's units, seconds; kongUnits Kong's periods
// (month = 30 days, year = 365 days as Kong's counters expire; windows are
// calendar-aligned in Kong).
var (
	envoyUnits = []unit{{"SECOND", 1}, {"MINUTE", 60}, {"HOUR", 3600}, {"DAY", 86400}}
	kongUnits  = []unit{{"second", 1}, {"minute", 60}, {"hour", 3600}, {"day", 86400}}
)

type unit struct {
	name string
	s    int
}

func unitOf(units []unit, windowS int) (unit, bool) {
	for _, u := range units {
		if u.s == windowS {
			return u, true
		}
	}
	return unit{}, false
}

// nginxRate writes a rate as nginx does: whole requests per second or per
// minute; ok is false when neither is whole.
func nginxRate(r float64) (string, bool) {
	if r >= 1 && r == math.Trunc(r) {
		return fmt.Sprintf("%dr/s", int64(r)), true
	}
	m := r * 60
	if math.Abs(m-math.Round(m)) < 1e-9 && m >= 1 {
		return fmt.Sprintf("%dr/m", int64(math.Round(m))), true
	}
	return "", false
}

func nginxRateOK(r float64) bool { _, ok := nginxRate(r); return ok }

// traefikRate writes rate r as Traefik's whole average per whole-second
// period, exactly as Traefik computes the rate back (model.TraefikRate).
func traefikRate(r float64) (avg int64, periodS int, ok bool) {
	a, per, ok := model.TraefikRate(r)
	return a, int(per / time.Second), ok
}

func traefikRateOK(r float64) bool { _, _, ok := traefikRate(r); return ok }

// traefikNearestRate is the whole average per period nearest rate r that
// Traefik can write, for a rate it cannot: the first of a second, a minute,
// an hour and a day within 0.1% of r, else a day's (at least 1).
func traefikNearestRate(r float64) (avg int64, periodS int) {
	for _, per := range []int{1, 60, 3600, 86400} {
		a := math.Round(r * float64(per))
		if a >= 1 && math.Abs(a/float64(per)-r) <= 1e-3*r {
			return int64(a), per
		}
	}
	return max(1, int64(math.Round(r*86400))), 86400
}

// traefikMaxDelay is how long Traefik's rateLimit lets a request wait for
// its token: 1/(2·int(rate)) s, 0.5 s below 1 r/s (New in Traefik's
// pkg/middlewares/ratelimiter/rate_limiter.go).
func traefikMaxDelay(rate float64) time.Duration {
	if rate < 1 {
		return 500 * time.Millisecond
	}
	return time.Second / (time.Duration(rate) * 2)
}

// traefikTTL is how long Traefik's rateLimit keeps an idle key's bucket,
// whole s: 2 at 1 r/s or more, else 1 + int(1/rate).
func traefikTTL(rate float64) int64 {
	if rate >= 1 {
		return 2
	}
	return 1 + int64(1/rate)
}

// traefikReserve says how Traefik decides otherwise than the policy asked
// for, and which traefik policy to sweep (q, what it runs).
func traefikReserve(q model.Policy) string {
	d := traefikMaxDelay(q.Rate)
	return fmt.Sprintf("Traefik's rateLimit is not a plain token bucket: it reserves the next token (x/time/rate Reserve) and holds a request up to %v for it instead of rejecting it, "+
		"and drops a key's bucket after %d idle s (it comes back full): sweep %q to measure what Traefik admits and delays",
		d, traefikTTL(q.Rate), q.Canonical())
}

// nginxTruncates says how nginx decides otherwise than a token bucket of
// q's rate: below or between whole requests per second, nginx's refill of
// rate·ms/1000 whole milli-requests each millisecond-clock request drops
// the remainder (the model's nginx does too).
func nginxTruncates(q model.Policy) string {
	if q.Rate >= 1 && q.Rate == math.Trunc(q.Rate) {
		return ""
	}
	return fmt.Sprintf("nginx refills its bucket in whole milli-requests (rate·ms/1000, truncated): at %g r/s it gets up to 0.001 request less per request than the token bucket, so near the limit it rejects a few requests the token bucket admits", q.Rate)
}

func nearestNginx(p model.Policy, rate float64, capacity int64) (model.Policy, string) {
	why := "nginx limit_req is a leaky bucket (rate, burst): it has no window"
	if _, ok := nginxForms[p.Algorithm]; ok {
		why = fmt.Sprintf("nginx writes rates as whole r/s or r/m, not %g r/s", rate)
	}
	m := max(1, math.Round(rate*60)) / 60
	if rate >= 1 {
		if r := math.Round(rate); math.Abs(r-rate) < math.Abs(m-rate) || math.Abs(r-rate) < 1e-9 {
			m = r
		}
	}
	return model.Policy{Algorithm: model.Nginx, Rate: m, Burst: capacity - 1, Delay: capacity - 1}, why
}

// maxHAProxyPeriodS is HAProxy's longest frequency-counter period, s:
// 2^30 ms (it reads tick + period − now as a signed 32-bit int).
const maxHAProxyPeriodS = 1 << 30 / 1000

// haproxyPeriodOK reports whether HAProxy can count over a period of
// periodS seconds: whole milliseconds up to its longest period.
func haproxyPeriodOK(periodS float64) bool {
	return model.HAProxyRateConfig{PeriodS: periodS}.Validate() == nil
}

// counterAsHAProxy is sliding_counter as HAProxy counts it: gpc0_rate over
// admitted requests, a period as long as the window.
func counterAsHAProxy(p model.Policy) (model.Policy, bool) {
	q := model.Policy{Algorithm: model.HAProxyRate, PeriodS: float64(p.WindowS), Limit: p.Limit, Counts: model.HAProxyCountsAdmitted}
	return q, haproxyPeriodOK(q.PeriodS)
}

// haproxyPeriods says how HAProxy's counter differs from a sliding counter
// on the epoch.
func haproxyPeriods(model.Policy) string {
	return "HAProxy starts a key's periods at its first request (not on the epoch, as sliding_counter does in log replay) " +
		"and forgets the previous period after two idle ones: decisions near a period's end differ; sweep haproxy_rate to measure what HAProxy does"
}

func nearestHAProxy(p model.Policy, rate float64, capacity int64) (model.Policy, string) {
	why := "HAProxy's stick-table rates are frequency counters over a period, the previous period weighted (haproxy_rate)"
	w := float64(p.WindowS)
	if w == 0 {
		w = max(1, min(math.Round(float64(capacity)/rate), maxHAProxyPeriodS))
	}
	if w > maxHAProxyPeriodS {
		why = fmt.Sprintf("HAProxy's rate periods are at most %d s (~12.4 days)", maxHAProxyPeriodS)
		w = maxHAProxyPeriodS
	}
	return model.Policy{Algorithm: model.HAProxyRate, PeriodS: w, Limit: int64(math.Round(rate * w)), Counts: model.HAProxyCountsAdmitted}, why
}

// nearestWindow: the unit nearest the window (log scale), the limit scaled
// to it.
func nearestWindow(units []unit, why string) func(model.Policy, float64, int64) (model.Policy, string) {
	return func(p model.Policy, rate float64, capacity int64) (model.Policy, string) {
		w := p.WindowS
		if w == 0 {
			w = int(max(1, math.Round(float64(capacity)/rate)))
		}
		best := units[0]
		for _, u := range units {
			if math.Abs(math.Log(float64(u.s)/float64(w))) < math.Abs(math.Log(float64(best.s)/float64(w))) {
				best = u
			}
		}
		return model.Policy{Algorithm: model.FixedWindow, WindowS: best.s, Limit: max(1, int64(math.Round(rate*float64(best.s))))}, why
	}
}

const tokenBucketWhy = "golang.org/x/time/rate is a token bucket"

func nearestGo(p model.Policy, rate float64, capacity int64) (model.Policy, string) {
	return model.Policy{Algorithm: model.TokenBucket, Rate: rate, Capacity: capacity}, tokenBucketWhy
}

// nearestTraefik: Traefik's rateLimit at the same rate (whole requests/s
// when Traefik cannot write it) and burst; Translate adds what it does
// otherwise and the policy to sweep.
func nearestTraefik(p model.Policy, rate float64, capacity int64) (model.Policy, string) {
	why := "Traefik's rateLimit keeps a rate and a burst per key"
	if !traefikRateOK(rate) {
		avg, per := traefikNearestRate(rate)
		rate = float64(avg) / float64(per)
		why = "Traefik writes rates as a whole average per period of whole seconds"
	}
	q := model.Policy{Algorithm: model.Traefik, Rate: rate, Capacity: min(capacity, math.MaxInt32)}
	return q, fmt.Sprintf("%s: sweep %q to measure what Traefik admits and delays", why, q.Canonical())
}

func nearestRedis(p model.Policy, rate float64, capacity int64) (model.Policy, string) {
	why := "the project's Redis scripts keep fixed_window, sliding_window, sliding_log and token_bucket"
	if w := p.WindowS; w > 0 && p.Algorithm.Takes("limit") { // sliding_counter, fixed_window_anchored: the exact sliding window
		return model.Policy{Algorithm: model.SlidingWindow, WindowS: w, Limit: p.Limit}, why
	}
	return model.Policy{Algorithm: model.TokenBucket, Rate: rate, Capacity: capacity}, why
}
