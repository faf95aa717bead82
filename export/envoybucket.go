package export

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// envoy's local_ratelimit HTTP filter
// (envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit) is a
// token bucket: max_tokens (uint32, also the tokens it starts with),
// tokens_per_fill (UInt32Value) added every fill_interval (a protobuf
// Duration, at least 50 ms: envoy refuses a shorter one). Releases since
// 2024 refill continuously at tokens_per_fill / fill_interval and admit a
// request holding at least one whole token: the model's token_bucket
// (AtomicTokenBucketImpl, folly's design: the state is a time, as a double
// of seconds since boot; TestEnvoyAtomicBucketEqualsModel replays it). Its
// doubles round either way at an instant where the bucket holds a whole
// number of tokens, e.g. the full bucket just after start.
// The bucket is one per envoy process (local_rate_limit_per_downstream_connection
// false, which the export writes), shared by every client; on a per-client
// key, a descriptor entry with an empty value gives each value its own
// bucket (dynamic descriptors, dynamic_descriptor.cc), created full on the
// value's first request and kept in an LRU of max_dynamic_descriptors.

// envoyDynamicDescriptors is the max_dynamic_descriptors the export writes:
// the live keys envoy keeps a bucket for (envoy's default is 20).
const envoyDynamicDescriptors = 100_000

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

// writeEnvoyBucket writes the local_ratelimit filter for a token bucket:
// one bucket per envoy process on key global, else one per value of the
// key (a dynamic descriptor).
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
	bucket := fmt.Sprintf("max_tokens: %d\n    tokens_per_fill: %d\n    fill_interval: %q", p.Capacity, tokens, envoyDuration(ms))
	r.Notes = append(r.Notes,
		fmt.Sprintf("envoy's local_ratelimit token bucket: it starts full with max_tokens %d, refills %d tokens per %s (%s r/s), and admits a request holding one whole token; the model's token_bucket", p.Capacity, tokens, envoyDuration(ms), strconv.FormatFloat(p.Rate, 'g', 8, 64)),
		"continuous refill is envoy's since 2024; older releases add tokens_per_fill at once every fill_interval, which admits in bursts")
	perKey, route := "", ""
	if r.Key == "global" {
		r.Notes = append(r.Notes, "one bucket per envoy process, shared by every client (local_rate_limit_per_downstream_connection: false; true would give each downstream connection its own)")
	} else {
		k := byKey(r.Key, [2]string{"remote_address", "- remote_address: {}"}, [2]string{}, func(h string) [2]string {
			return [2]string{"client_key", fmt.Sprintf("- request_headers: {header_name: %s, descriptor_key: client_key}", yamlScalar(h))}
		})
		r.Notes = append(r.Notes,
			fmt.Sprintf("one bucket per %s: the descriptor entry's empty value makes a bucket for each value (dynamic descriptors; releases with max_dynamic_descriptors), created full on its first request", r.Key),
			fmt.Sprintf("envoy keeps the buckets of the %d values seen most recently: beyond that many live keys, a key comes back with a full bucket and is admitted more than the model says (raise max_dynamic_descriptors)", envoyDynamicDescriptors),
			"always_consume_default_token_bucket: false, so a request spends its key's bucket alone")
		if strings.HasPrefix(r.Key, "header:") {
			r.Notes = append(r.Notes, "a request without the header has no descriptor and spends the filter's token_bucket, shared by all such requests")
		}
		perKey = fmt.Sprintf(`
  descriptors:
    - entries:
        - key: %s
          value: ""
      token_bucket:
        %s
  always_consume_default_token_bucket: false
  max_dynamic_descriptors: %d`, k[0], strings.ReplaceAll(bucket, "\n    ", "\n        "), envoyDynamicDescriptors)
		route = fmt.Sprintf(`
# envoy route (rate_limits on the virtual host or route; the filter builds
# each request's descriptor from them):
#   rate_limits:
#     - actions:
#         %s
`, k[1])
	}
	r.Notes = append(r.Notes, "filter_enforced at 0% counts without rejecting (the local_rate_limit stats say what it would have done)")
	r.Config = fmt.Sprintf(`# envoy HTTP filter (http_filters of the HTTP connection manager, before envoy.filters.http.router)
name: envoy.filters.http.local_ratelimit
typed_config:
  "@type": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
  stat_prefix: %[1]s
  token_bucket:
    %[2]s%[5]s
  filter_enabled:
    runtime_key: %[3]s
    default_value:
      numerator: 100
      denominator: HUNDRED
  filter_enforced:
    runtime_key: %[4]s
    default_value:
      numerator: 100
      denominator: HUNDRED
  local_rate_limit_per_downstream_connection: false
%[6]s`, yamlScalar(o.Zone), bucket, yamlScalar(o.Zone+"_enabled"), yamlScalar(o.Zone+"_enforced"), perKey, route)
	return nil
}
