package export

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// byKey is ip, global or hdr(NAME) for a resolved key (ip, global or
// header:NAME): each target's spelling of what the limit hangs on.
func byKey[T any](key string, ip, global T, hdr func(name string) T) T {
	switch {
	case key == "global":
		return global
	case strings.HasPrefix(key, "header:"):
		return hdr(strings.TrimPrefix(key, "header:"))
	}
	return ip
}

// perNode divides a policy over n replicas with their own state: each gets
// 1/n of the rate and of the requests admitted at once (at least 1).
func perNode(p model.Policy, n int) model.Policy {
	if n <= 1 {
		return p
	}
	return familyOf(p.Algorithm).divide(p, n)
}

// localNodes applies Options.Nodes for a target whose replicas keep their
// own counters, with the note that says what it costs.
func localNodes(r *Result, o Options, what string) model.Policy {
	p := r.Exported
	if o.Nodes <= 1 {
		return p
	}
	q := perNode(p, o.Nodes)
	r.Notes = append(r.Notes, fmt.Sprintf("%d replicas, each with its own %s: each enforces 1/%d of the limit (%s). "+
		"A client spread evenly over the replicas gets the whole limit; one pinned to a replica gets 1/%d of it. "+
		"Run the policy with nodes=%d in the sweep to measure the difference (docs/keys.md).",
		o.Nodes, what, o.Nodes, q.Canonical(), o.Nodes, o.Nodes))
	return q
}

func sharedNodes(r *Result, o Options, what string) {
	if o.Nodes > 1 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d replicas share one %s: the limit is not divided.", o.Nodes, what))
	}
}

// maxHAProxyS is HAProxy's longest timer and rate period, seconds
// (2^31−1 ms).
const maxHAProxyS = maxConfigInt / 1000

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// writeNginx: limit_req_zone + limit_req, rate as r/s or r/m, burst = C−1.
func writeNginx(r *Result, o Options) error {
	p := localNodes(r, o, "nginx shared-memory zone")
	rate, ok := nginxRate(p.Rate)
	if !ok { // after division over nodes: round to whole requests per minute
		m := max(1, math.Round(p.Rate*60))
		rate = fmt.Sprintf("%dr/m", int64(m))
		r.Notes = append(r.Notes, fmt.Sprintf("the per-replica rate %g r/s is rounded to %s", p.Rate, rate))
	}
	// global: a constant key, the same in every server block ($server_name
	// is empty without a server_name, and nginx does not limit an empty key).
	key := byKey(r.Key, "$binary_remote_addr", `"global"`, func(h string) string {
		return "$http_" + strings.ReplaceAll(strings.ToLower(h), "-", "_")
	})
	// A header key is logged too, for ratesweep shadow --key header:NAME.
	logKey := byKey(r.Key, "", "", func(string) string { return ` "` + key + `"` })
	shadowKey := byKey(r.Key, "", " --key global", func(string) string { return " --key " + r.Key })
	mode := "nodelay"
	switch {
	case p.Burst == 0:
		mode = ""
	case p.Delay < p.Burst && p.Delay > 0:
		mode = fmt.Sprintf("delay=%d", p.Delay)
	case p.Delay < p.Burst:
		mode = "" // nginx's default: every request beyond the first of a burst waits
	}
	r.Notes = append(r.Notes,
		fmt.Sprintf("rate %s; burst %d: %d requests at once from idle (burst+1), then one every %s", rate, p.Burst, p.Burst+1, interval(p.Rate)),
		"nginx truncates the rate to whole milli-requests/s and counts on a millisecond clock; rejected requests are not counted (as the model)",
		"requests with an empty key are not limited; behind a load balancer set the real client address with the realip module (set_real_ip_from, real_ip_header X-Forwarded-For)")
	if mode == "" && p.Burst > 0 {
		r.Notes = append(r.Notes, "without nodelay nginx delays the requests of a burst (shaping); the model's mean_delay_s and p99_delay_s columns measure that wait")
	}
	args := fmt.Sprintf("zone=%s", o.Zone)
	if p.Burst > 0 {
		args += fmt.Sprintf(" burst=%d", p.Burst)
	}
	if mode != "" {
		args += " " + mode
	}
	r.Config = fmt.Sprintf(`# http { } context, e.g. /etc/nginx/conf.d/%[1]s.conf
limit_req_zone %[2]s zone=%[1]s:10m rate=%[3]s;
limit_req_status 429;
# Shadow mode: log what the limit would do without rejecting anything
# (ratesweep shadow%[6]s reads $limit_req_status and $msec back; docs/deploy.md).
log_format %[1]s '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $limit_req_status $msec%[5]s';

# in the server { } or location { } to protect:
#   limit_req %[4]s;
#   access_log /var/log/nginx/%[1]s.log %[1]s;
#   limit_req_dry_run on;    # shadow mode first
`, o.Zone, key, rate, args, logKey, shadowKey)
	return nil
}

func interval(rate float64) string {
	s := 1 / rate
	if s < 1 {
		return fmt.Sprintf("%g ms", math.Round(s*1e6)/1e3)
	}
	return fmt.Sprintf("%g s", math.Round(s*1e3)/1e3)
}

// writeHAProxy: a stick table whose frequency counter decides as the
// model's haproxy_rate: http_req_rate counts every request (counts all),
// gpc0 incremented after the deny only the admitted ones (counts admitted).
func writeHAProxy(r *Result, o Options) error {
	p := localNodes(r, o, "stick table (tables are not summed across peers)")
	k := byKey(r.Key, [2]string{"src", "ip"}, [2]string{"str(all)", "string len 8"}, func(h string) [2]string {
		return [2]string{fmt.Sprintf("req.hdr(%s)", h), "string len 64"}
	})
	fetch, typ := k[0], k[1]
	if !haproxyPeriodOK(p.PeriodS) {
		return fmt.Errorf("haproxy: period_s %g is not a whole number of milliseconds up to HAProxy's longest rate period, %d s (~12.4 days)", p.PeriodS, maxHAProxyPeriodS)
	}
	periodMs := int64(math.Round(p.PeriodS * 1000))
	// Three periods: an entry must outlive two idle periods, after which
	// HAProxy reads it as new anyway.
	expireMs := 3 * periodMs
	if expireMs > maxHAProxyS*1000 {
		expireMs = maxHAProxyS * 1000
		r.Notes = append(r.Notes, fmt.Sprintf("expire is %d s, HAProxy's longest timer (~24.8 days), not three periods: a key idle that long is forgotten with its previous period's count, so its next requests may pass where the model would still count it", maxHAProxyS))
	}
	period, expire := haproxyTime(periodMs), haproxyTime(expireMs)
	r.Notes = append(r.Notes, "HAProxy 2.6's frequency counter (freq_ctr), as the model's haproxy_rate: a key's periods start at its first request, the previous period is weighted by its share still inside the last period, and it is forgotten after two idle periods (docs/haproxy-rate.md)")
	if p.Counts == model.HAProxyCountsAll {
		r.Notes = append(r.Notes, "http_req_rate counts every request, denied ones too: a client that keeps retrying over the limit stays locked out until it slows down")
		if p.BlockS > 0 {
			writeHAProxyBox(r, o, p, typ, fetch, fmt.Sprintf("stick-table type %s size 1m expire %s store http_req_rate(%s)", typ, expire, period), fmt.Sprintf("sc0_http_req_rate gt %d", p.Limit), "")
			return nil
		}
		r.Config = fmt.Sprintf(`# in the frontend (HAProxy 2.x)
    stick-table type %[1]s size 1m expire %[2]s store http_req_rate(%[3]s)
    http-request track-sc0 %[4]s
    # track-sc0 counts the request first: denied when the rate of the
    # last %[3]s, this request included, is over %[5]d
    http-request deny deny_status 429 if { sc0_http_req_rate gt %[5]d }
`, typ, expire, period, fetch, p.Limit)
		return nil
	}
	r.Notes = append(r.Notes, "only admitted requests increment gpc0 (the deny comes first): a client over the limit gets through again as soon as its admitted rate falls below it")
	if p.BlockS > 0 {
		writeHAProxyBox(r, o, p, typ, fetch, fmt.Sprintf("stick-table type %s size 1m expire %s store gpc0,gpc0_rate(%s)", typ, expire, period), fmt.Sprintf("sc0_gpc0_rate ge %d", p.Limit), "    http-request sc-inc-gpc0(0)\n")
		return nil
	}
	r.Config = fmt.Sprintf(`# in the frontend (HAProxy 2.x)
    stick-table type %[1]s size 1m expire %[2]s store gpc0,gpc0_rate(%[3]s)
    http-request track-sc0 %[4]s
    # admitted iff fewer than %[5]d requests were admitted in the rate of
    # the last %[3]s (the request itself not counted yet)
    http-request deny deny_status 429 if { sc0_gpc0_rate ge %[5]d }
    http-request sc-inc-gpc0(0)
`, typ, expire, period, fetch, p.Limit)
	return nil
}

// haproxyTime writes a duration of ms milliseconds as HAProxy reads it:
// whole seconds as "Ns", else "Nms".
func haproxyTime(ms int64) string {
	if ms%1000 == 0 {
		return fmt.Sprintf("%ds", ms/1000)
	}
	return fmt.Sprintf("%dms", ms)
}

// writeEnvoy writes a token bucket as envoy's local_ratelimit filter (one
// bucket per process: key global), anything else, and a token bucket on a
// per-client key, as envoyproxy/ratelimit's epoch-aligned fixed window.
func writeEnvoy(r *Result, o Options) error {
	if r.Exported.Algorithm == model.TokenBucket {
		return writeEnvoyBucket(r, o)
	}
	sharedNodes(r, o, "ratelimit service (Redis)")
	p := r.Exported
	u, _ := unitOf(envoyUnits, p.WindowS)
	k := byKey(r.Key, [2]string{"remote_address", "- remote_address: {}"},
		[2]string{"generic_key", "- generic_key: {descriptor_value: all}"}, func(h string) [2]string {
			return [2]string{"client_key", fmt.Sprintf("- request_headers: {header_name: %s, descriptor_key: client_key}", yamlScalar(h))}
		})
	key, action := k[0], k[1]
	r.Notes = append(r.Notes,
		fmt.Sprintf("a fixed window of one %s aligned to the epoch, as the model's fixed_window in log replay (phase_s 0)", strings.ToLower(u.name)),
		"envoy's ratelimit counts over-limit requests too; with one limit per request that changes nothing admitted",
		"shadow_mode: true on the descriptor (or SHADOW_MODE=true) counts without rejecting: the service's stats then say what it would have done")
	r.Config = fmt.Sprintf(`# envoyproxy/ratelimit service config (config/%[1]s.yaml)
domain: %[6]s
descriptors:
  - key: %[2]s
    rate_limit:
      unit: %[3]s
      requests_per_unit: %[4]d
    # shadow_mode: true

# envoy route (rate_limits on the virtual host or route, with the
# envoy.filters.http.ratelimit filter pointing at the service, domain %[1]s):
#   rate_limits:
#     - actions:
#         %[5]s
`, o.Zone, key, u.name, p.Limit, action, yamlScalar(o.Zone))
	return nil
}

func writeKong(r *Result, o Options) error {
	p := localNodes(r, o, "Kong node (policy local)")
	u, _ := unitOf(kongUnits, p.WindowS)
	k := byKey(r.Key, [2]string{"ip", ""}, [2]string{"service", ""}, func(h string) [2]string {
		return [2]string{"header", fmt.Sprintf("\n      header_name: %s", yamlScalar(h))}
	})
	limitBy, extra := k[0], k[1]
	r.Notes = append(r.Notes,
		fmt.Sprintf("a calendar-aligned fixed window of one %s (Kong's clock has whole seconds)", u.name),
		"policy local counts admitted requests only, incremented asynchronously: concurrent requests can pass a few over the limit; policy redis counts rejected requests too",
		"with several Kong nodes and policy local each node counts alone (--nodes divides the limit); policy redis shares one counter")
	r.Config = fmt.Sprintf(`# Kong declarative config (deck / kong.yml)
plugins:
  - name: rate-limiting
    config:
      %[1]s: %[2]d
      limit_by: %[3]s%[4]s
      policy: local
      error_code: 429
      fault_tolerant: true
`, u.name, p.Limit, limitBy, extra)
	return nil
}

func writeTraefik(r *Result, o Options) error {
	p := localNodes(r, o, "Traefik instance")
	avg, per, ok := traefikRate(p.Rate)
	if !ok {
		avg, per = traefikNearestRate(p.Rate)
		r.Notes = append(r.Notes, fmt.Sprintf("the per-replica rate %g r/s is rounded to %d per %d s", p.Rate, avg, per))
	}
	src := byKey(r.Key, "          ipStrategy:\n            depth: 0", "          requestHost: true",
		func(h string) string { return "          requestHeaderName: " + yamlScalar(h) })
	r.Notes = append(r.Notes,
		fmt.Sprintf("Traefik's rateLimit keeps a golang.org/x/time/rate bucket per key: %d per %d s (%s r/s) refill, burst %d at once from idle; a request whose token comes within %v waits for it, later ones get 429 and give the token back; a key idle for %d s (whole seconds) starts full again",
			avg, per, strconv.FormatFloat(p.Rate, 'g', 6, 64), p.Capacity, traefikMaxDelay(p.Rate), traefikTTL(p.Rate)),
		"each Traefik replica keeps its own buckets: three replicas admit three times the rate (--nodes divides it)",
		"behind another proxy, set ipStrategy.depth (or excludedIPs) so the key is the client, not the proxy")
	r.Config = fmt.Sprintf(`# Traefik dynamic configuration (file provider)
http:
  middlewares:
    %[1]s:
      rateLimit:
        average: %[2]d
        period: %[3]ds
        burst: %[4]d
        sourceCriterion:
%[5]s
`, yamlScalar(o.Zone), avg, per, p.Capacity, src)
	return nil
}

func writeGo(r *Result, o Options) error {
	p := localNodes(r, o, "process")
	keyExpr := byKey(r.Key, "host, _, _ := net.SplitHostPort(r.RemoteAddr)\n\t\tkey := host", `key := ""`,
		func(h string) string { return fmt.Sprintf("key := r.Header.Get(%q)", h) })
	r.Notes = append(r.Notes,
		fmt.Sprintf("rate.NewLimiter(%g, %d): a token bucket that starts full, %d at once then %g per second; Allow consumes a token only when it admits (the model's token_bucket, checked decision by decision in go test ./model -run Oracle)", p.Rate, p.Capacity, p.Capacity, p.Rate),
		"the map of limiters grows with the keys: evict idle ones in production")
	imports := byKey(r.Key, `"net"; "net/http"; "sync"; "golang.org/x/time/rate"`, `"net/http"; "sync"; "golang.org/x/time/rate"`,
		func(string) string { return `"net/http"; "sync"; "golang.org/x/time/rate"` })
	r.Config = fmt.Sprintf(`// import (%[5]s)

// limit admits a request when its key's token bucket has a token:
// %[1]s.
func limit(next http.Handler) http.Handler {
	var mu sync.Mutex
	buckets := map[string]*rate.Limiter{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		%[2]s
		mu.Lock()
		l, ok := buckets[key]
		if !ok {
			l = rate.NewLimiter(rate.Limit(%[3]s), %[4]d)
			buckets[key] = l
		}
		mu.Unlock()
		if !l.Allow() {
			http.Error(w, "rate limited", http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}
`, p.Canonical(), keyExpr, trimFloat(p.Rate), p.Capacity, imports)
	return nil
}

func writeRedis(r *Result, o Options) error {
	sharedNodes(r, o, "Redis")
	p := r.Exported
	ttl := "time.Duration(p.WindowS) * time.Second"
	if p.WindowS == 0 {
		// the time to refill from empty, whole seconds rounded up (an
		// integer constant: capacity/rate is rarely one)
		ttl = fmt.Sprintf("%d * time.Second", int64(min(math.Ceil(float64(p.Capacity)/p.Rate), maxConfigInt)))
	}
	r.Notes = append(r.Notes,
		fmt.Sprintf("the Lua script redisstate/%s decides atomically in Redis (make test-redis checks it against the model)", redisForms[p.Algorithm].detail),
		"pass times from one clock (e.g. Redis TIME or one NTP-synced host) so that replicas agree")
	r.Config = fmt.Sprintf(`// import ("time"; "github.com/ratesweep/ratesweep/model"; "github.com/ratesweep/ratesweep/redisstate")

p := %[1]s // %[2]s
c, err := redisstate.Dial("127.0.0.1:6379")
if err != nil { /* ... */ }
lim, err := redisstate.NewLimiter(c, p, %[3]q, %[4]s)
if err != nil { /* ... */ }
// times in µs since the Unix epoch: the scripts' doubles are exact below 2^53 µs
ok, err := lim.Allow(key, time.Now().UnixMicro()) // key: %[5]s
`, goLiteral(p), p.Canonical(), o.Zone, ttl, r.Key)
	return nil
}

// goLiteral writes p as a Go composite literal: the algorithm, then the
// parameters that apply (a window's limit even when 0).
func goLiteral(p model.Policy) string {
	s := "model.Policy{Algorithm: model." + goName(p.Algorithm)
	if p.WindowS > 0 {
		s += fmt.Sprintf(", WindowS: %d, Limit: %d", p.WindowS, p.Limit)
	}
	if p.Rate > 0 {
		s += ", Rate: " + trimFloat(p.Rate)
	}
	if p.Capacity > 0 {
		s += fmt.Sprintf(", Capacity: %d", p.Capacity)
	}
	if p.PhaseS > 0 {
		s += fmt.Sprintf(", PhaseS: %d", p.PhaseS)
	}
	return s + "}"
}

func goName(a model.Algorithm) string {
	parts := strings.Split(a.String(), "_")
	for i, s := range parts {
		parts[i] = strings.ToUpper(s[:1]) + s[1:]
	}
	return strings.Join(parts, "")
}
