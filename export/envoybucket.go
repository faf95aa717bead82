package export

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ratesweep/ratesweep/model"
)

// envoy's local_ratelimit HTTP filter
// (envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit) is a
// token bucket: max_tokens (uint32, also the tokens it starts with),
// tokens_per_fill (UInt32Value) added every fill_interval (a protobuf
// Duration, at least 50 ms: envoy refuses a shorter one). Releases since
// 2024 refill continuously at tokens_per_fill / fill_interval and admit a
// request holding at least one whole token: the model's token_bucket.
// The bucket is one per envoy process (local_rate_limit_per_downstream_connection
// false, which the export writes), shared by every client.

// minEnvoyFillMs is envoy's shortest fill_interval, ms.
const minEnvoyFillMs = 50

// maxEnvoyFillMs bounds the fill_interval the export searches, ms (1 day).
const maxEnvoyFillMs = 86_400_000

// envoyFill returns tokens_per_fill and fill_interval (ms) whose ratio is
// rate (requests/s) exactly: a whole number of tokens per a whole number of
// milliseconds, at least 50 ms; a rate that is whole per second as N per
// 1 s. ok is false when no such pair within a day and 2^31−1 tokens exists.
func envoyFill(rate float64) (tokens, ms int64, ok bool) {
	if !(rate > 0) || rate > maxConfigInt {
		return 0, 0, false
	}
	// The convergents p/q of rate/1000 (tokens per ms), smallest q first.
	p0, q0, p1, q1 := int64(0), int64(1), int64(1), int64(0)
	f := rate / 1000
	for range 64 {
		a := math.Floor(f)
		if a > maxConfigInt {
			break
		}
		p2, q2 := int64(a)*p1+p0, int64(a)*q1+q0
		if q2 > maxEnvoyFillMs || p2 > maxConfigInt {
			break
		}
		p0, q0, p1, q1 = p1, q1, p2, q2
		if p2 > 0 && float64(p2)*1000/float64(q2) == rate {
			k := int64(1)
			if 1000%q2 == 0 {
				k = 1000 / q2
			} else if q2 < minEnvoyFillMs {
				k = (minEnvoyFillMs + q2 - 1) / q2
			}
			if p2*k > maxConfigInt || q2*k > maxEnvoyFillMs {
				return 0, 0, false
			}
			return p2 * k, q2 * k, true
		}
		if f == a {
			break
		}
		f = 1 / (f - a)
	}
	return 0, 0, false
}

func envoyRateOK(r float64) bool { _, _, ok := envoyFill(r); return ok }

// nearestEnvoyRate is the rate nearest r that envoy's token bucket
// expresses: whole tokens per second, or one token per whole number of
// milliseconds below 1 request/s.
func nearestEnvoyRate(r float64) float64 {
	if r >= 1 {
		return math.Round(r)
	}
	return 1000 / math.Min(maxEnvoyFillMs, math.Max(minEnvoyFillMs, math.Round(1000/r)))
}

// nearestEnvoy: a token bucket at the rate envoy can write for the bucket
// algorithms (their rate rounded); envoyproxy/ratelimit's epoch-aligned
// fixed window for the others.
func nearestEnvoy(p model.Policy, rate float64, capacity int64) (model.Policy, string) {
	switch p.Algorithm {
	case model.TokenBucket, model.GCRA, model.Nginx, model.Traefik:
		why := "envoy's local_ratelimit is a token bucket that rejects at once (no delay, no idle expiry)"
		if !envoyRateOK(rate) {
			rate = nearestEnvoyRate(rate)
			why = fmt.Sprintf("envoy's local_ratelimit refills whole tokens (tokens_per_fill) every fill_interval of 50 ms to a day: the rate is written as %s r/s",
				strconv.FormatFloat(rate, 'g', 8, 64))
		}
		return model.Policy{Algorithm: model.TokenBucket, Rate: rate, Capacity: capacity}, why
	}
	return nearestWindow(envoyUnits, "envoy's ratelimit service counts in fixed windows aligned to the epoch (SECOND, MINUTE, HOUR, DAY)")(p, rate, capacity)
}

// envoyDuration writes ms milliseconds as a protobuf Duration in YAML:
// seconds with three decimals (0.100s); the YAML quotes it.
func envoyDuration(ms int64) string {
	return fmt.Sprintf("%d.%03ds", ms/1000, ms%1000)
}

// writeEnvoyBucket writes the local_ratelimit filter for a token bucket.
// The bucket is per envoy process: key global only (writeEnvoy falls back
// to the ratelimit service otherwise).
func writeEnvoyBucket(r *Result, o Options) error {
	p := localNodes(r, o, "envoy process (local_ratelimit)")
	tokens, ms, ok := envoyFill(p.Rate)
	if !ok { // a rate divided over nodes
		rounded := nearestEnvoyRate(p.Rate)
		if tokens, ms, ok = envoyFill(rounded); !ok {
			return fmt.Errorf("envoy: the rate %g r/s is not a whole number of tokens per 50 ms to a day", p.Rate)
		}
		r.Notes = append(r.Notes, fmt.Sprintf("the per-process rate %s r/s is rounded to %s r/s", strconv.FormatFloat(p.Rate, 'g', 8, 64), strconv.FormatFloat(rounded, 'g', 8, 64)))
		p.Rate = rounded
	}
	if p.Capacity > maxConfigInt {
		return fmt.Errorf("envoy: capacity %d is over max_tokens' limit %d", p.Capacity, int64(maxConfigInt))
	}
	r.Notes = append(r.Notes,
		fmt.Sprintf("envoy's local_ratelimit token bucket: it starts full with max_tokens %d, refills %d tokens per %s (%s r/s), and admits a request holding one whole token; the model's token_bucket", p.Capacity, tokens, envoyDuration(ms), strconv.FormatFloat(p.Rate, 'g', 8, 64)),
		"continuous refill is envoy's since 2024; older releases add tokens_per_fill at once every fill_interval, which admits in bursts",
		"one bucket per envoy process, shared by every client (local_rate_limit_per_downstream_connection: false; true would give each downstream connection its own)",
		"filter_enforced at 0% counts without rejecting (the local_rate_limit stats say what it would have done)")
	r.Config = fmt.Sprintf(`# envoy HTTP filter (http_filters of the HTTP connection manager, before envoy.filters.http.router)
name: envoy.filters.http.local_ratelimit
typed_config:
  "@type": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
  stat_prefix: %[1]s
  token_bucket:
    max_tokens: %[2]d
    tokens_per_fill: %[3]d
    fill_interval: "%[4]s"
  filter_enabled:
    runtime_key: %[5]s
    default_value:
      numerator: 100
      denominator: HUNDRED
  filter_enforced:
    runtime_key: %[6]s
    default_value:
      numerator: 100
      denominator: HUNDRED
  local_rate_limit_per_downstream_connection: false
`, yamlScalar(o.Zone), p.Capacity, tokens, envoyDuration(ms), yamlScalar(o.Zone+"_enabled"), yamlScalar(o.Zone+"_enforced"))
	return nil
}

// onKey reports whether target writes p's form on key: envoy writes a
// token bucket (local_ratelimit, one bucket per process) on key global
// only.
func onKey(p model.Policy, target, key string) bool {
	if onKeyAll(target, key) {
		return true
	}
	q, _, _, ok := configurable(limitOnly(p), targets[target])
	return !ok || q.Algorithm != model.TokenBucket
}

// onKeyAll reports whether target writes every policy it configures on
// key (onKey is then true whatever the policy).
func onKeyAll(target, key string) bool { return target != "envoy" || key == "global" }

// offKeyWhy says why envoy does not write a token bucket on key.
func offKeyWhy(key string) string {
	return "envoy's local_ratelimit keeps one token bucket per process, not one per " + key + " (--key global exports it)"
}
