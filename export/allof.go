package export

import (
	"fmt"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// Stacked limits (all_of) export to nginx as several limit_req zones on one
// location, one per component, each on its component's key.
//
// How nginx counts a request one zone rejects (ngx_http_limit_req_module.c,
// ngx_http_limit_req_handler and ngx_http_limit_req_account): the zones are
// looked up in order; every zone but the last is looked at without
// accounting (its node is locked, its excess left as it was); the first
// zone that rejects ends the lookup, unlocks the zones before it without
// accounting, and the zones after it are never looked at; only when every
// zone passes are the earlier zones accounted. So a request is counted by
// every zone or by none: rejected_counts none, exactly. A stack with
// rejected_counts all is exported as the same zones with none (nearest),
// and with a run that has both, the cost is measured.

// Kong's rate-limiting plugin takes several periods at once (second,
// minute, hour, day on one plugin, one key): its access handler reads every
// period's usage, answers 429 when any period is at its limit before
// incrementing anything, and increments every period only for a request it
// lets through (kong/plugins/rate-limiting/handler.lua): rejected_counts
// none, with fixed windows aligned to the calendar.

// A stackTarget writes stacked limits for one target.
type stackTarget struct {
	write func(r *Result, comps []model.Policy, o Options) error
	// rc is how the target counts a request one of its limits rejects, and
	// counts says it in words.
	rc     model.RejectedCounts
	counts string
}

// stackTargets are the targets that write stacked limits.
var stackTargets = map[string]stackTarget{
	"nginx":   {writeNginxStack, model.RejectedCountedByNone, "nginx counts a request in every zone or in none (a zone that rejects it ends the lookup, and the zones before it are not charged), so a request one component rejects does not count against the others"},
	"kong":    {writeKongStack, model.RejectedCountedByNone, "Kong answers 429 when any period is at its limit and increments every period only for the requests it lets through, so a request one component rejects does not count against the others"},
	"haproxy": {writeHAProxyStack, model.RejectedCountedByNone, ""}, // by the components' counts: haproxyCounts
	"envoy":   {writeEnvoyStack, model.RejectedCountedByAll, "envoy's ratelimit service increments every descriptor's counter for every request, over the limit or not by default (its setting STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT changes that), so a request one component rejects still counts against the others"},
}

// exportStack exports an all_of policy: each component translated as the
// target translates it alone, rejected_counts as the target counts.
func exportStack(p model.Policy, target string, o Options) (*Result, error) {
	st, ok := stackTargets[target]
	if !ok {
		return nil, fmt.Errorf("%s cannot express stacked limits (all_of) yet; export each component on its own, or --to nginx or kong", target)
	}
	if o.Key != "" {
		return nil, fmt.Errorf("--key: a stacked policy's components carry their own keys (all_of[i].key)")
	}
	if o.Zone == "" {
		o.Zone = "ratesweep"
	}
	if err := checkZone(o.Zone); err != nil {
		return nil, err
	}
	if o.Nodes < 1 {
		o.Nodes = 1
	}
	q := model.Policy{Algorithm: model.AllOf, Stack: &model.Stack{RejectedCounts: st.rc}}
	fit := Exact
	var whys, keys []string
	for i, c := range p.Stack.Components {
		cq, cfit, why, err := Translate(c, target)
		if err != nil {
			return nil, fmt.Errorf("all_of[%d]: %w", i, err)
		}
		if err := checkInts(target, cq); err != nil {
			return nil, fmt.Errorf("all_of[%d]: %w", i, err)
		}
		cq.Key = c.Key
		q.Stack.Components = append(q.Stack.Components, cq)
		fit = max(fit, cfit)
		if why != "" {
			whys = append(whys, fmt.Sprintf("all_of[%d]: %s", i, why))
		}
		keys = append(keys, stackKey(c.Key))
	}
	if target == "haproxy" {
		var why string
		fit, why = haproxyCounts(p.Stack.RejectedCounts, q.Stack, fit)
		if why != "" {
			whys = append(whys, why)
		}
	} else if p.Stack.RejectedCounts != st.rc {
		fit = Nearest
		whys = append(whys, "rejected_counts: "+st.counts)
	}
	r := &Result{Target: target, Asked: p, Exported: q, Fit: fit, Why: strings.Join(whys, "; "), Key: strings.Join(keys, ", ")}
	if err := st.write(r, q.Stack.Components, o); err != nil {
		return nil, err
	}
	return r, nil
}

// stackKey is the key a component hangs on, as the exported config reads
// it: the client address, a header naming the account or organisation, or
// one key for everyone.
func stackKey(k model.Key) string {
	switch k {
	case model.KeyAccount:
		return "header:X-Account"
	case model.KeyOrg:
		return "header:X-Org"
	case model.KeyGlobal:
		return "global"
	}
	return "ip"
}

// writeNginxStack writes one limit_req_zone per component and one limit_req
// per zone on the same location.
func writeNginxStack(r *Result, comps []model.Policy, o Options) error {
	var zones, reqs []string
	for i, c := range comps {
		p := perNode(limitOnly(c), o.Nodes)
		rate, ok := nginxRate(p.Rate)
		if !ok {
			rate = fmt.Sprintf("%dr/m", int64(max(1, p.Rate*60+0.5)))
			r.Notes = append(r.Notes, fmt.Sprintf("all_of[%d]: the per-replica rate %g r/s is rounded to %s", i, p.Rate, rate))
		}
		key := byKey(stackKey(c.Key), "$binary_remote_addr", `"global"`, func(h string) string {
			return "$http_" + strings.ReplaceAll(strings.ToLower(h), "-", "_")
		})
		zone := fmt.Sprintf("%s_%d", o.Zone, i)
		zones = append(zones, fmt.Sprintf("limit_req_zone %s zone=%s:10m rate=%s;", key, zone, rate))
		args := "zone=" + zone
		if p.Burst > 0 {
			args += fmt.Sprintf(" burst=%d", p.Burst)
			switch {
			case p.Delay >= p.Burst:
				args += " nodelay"
			case p.Delay > 0:
				args += fmt.Sprintf(" delay=%d", p.Delay)
			}
		}
		reqs = append(reqs, fmt.Sprintf("#   limit_req %s;", args))
		r.Notes = append(r.Notes, fmt.Sprintf("all_of[%d] (zone %s, key %s): rate %s, burst %d: %d requests at once from idle, then one every %s",
			i, zone, stackKey(c.Key), rate, p.Burst, p.Burst+1, interval(p.Rate)))
	}
	if o.Nodes > 1 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d replicas, each with its own zones: each enforces 1/%d of every limit", o.Nodes, o.Nodes))
	}
	r.Notes = append(r.Notes,
		"nginx looks the zones up in order and charges a request to all of them only when every zone admits it (rejected_counts none); the first zone that rejects answers 429")
	if strings.Contains(r.Key, "header:") {
		r.Notes = append(r.Notes, "a zone does not limit requests whose key is empty: a request without the header skips that zone's limit (set it at the edge)")
	}
	r.Config = fmt.Sprintf(`# http { } context, e.g. /etc/nginx/conf.d/%[1]s.conf
%[2]s
limit_req_status 429;

# in the server { } or location { } to protect, every zone together:
%[3]s
#   limit_req_dry_run on;    # shadow mode first
`, o.Zone, strings.Join(zones, "\n"), strings.Join(reqs, "\n"))
	return nil
}

// writeKongStack writes one rate-limiting plugin with one field per
// component: the components must be fixed windows of distinct Kong periods
// on one key.
func writeKongStack(r *Result, comps []model.Policy, o Options) error {
	key := comps[0].Key
	var fields []string
	seen := map[string]int{}
	for i, c := range comps {
		p := perNode(limitOnly(c), o.Nodes)
		u, ok := unitOf(kongUnits, p.WindowS)
		switch {
		case c.Algorithm != model.FixedWindow || !ok:
			return fmt.Errorf("kong: all_of[%d] is %s: one rate-limiting plugin takes fixed windows of a second, minute, hour or day only", i, c.Canonical())
		case c.Key != key:
			return fmt.Errorf("kong: all_of[%d] hangs on %s, all_of[0] on %s: one plugin has one limit_by", i, c.Key, key)
		}
		if j, dup := seen[u.name]; dup {
			return fmt.Errorf("kong: all_of[%d] and all_of[%d] are both per %s: one plugin has one limit per period", j, i, u.name)
		}
		seen[u.name] = i
		fields = append(fields, fmt.Sprintf("      %s: %d", u.name, p.Limit))
	}
	k := byKey(stackKey(key), [2]string{"ip", ""}, [2]string{"service", ""}, func(h string) [2]string {
		return [2]string{"header", fmt.Sprintf("\n      header_name: %s", yamlScalar(h))}
	})
	r.Notes = append(r.Notes,
		"calendar-aligned fixed windows, one per period, on one key (Kong's clock has whole seconds)",
		"Kong answers 429 when any period is at its limit and counts a request in every period only when it lets it through (rejected_counts none)",
		"policy local counts admitted requests only, incremented asynchronously: concurrent requests can pass a few over the limit")
	if o.Nodes > 1 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d Kong nodes with policy local: each enforces 1/%d of every period's limit", o.Nodes, o.Nodes))
	}
	r.Config = fmt.Sprintf(`# Kong declarative config (deck / kong.yml)
plugins:
  - name: rate-limiting
    config:
%[1]s
      limit_by: %[2]s%[3]s
      policy: local
      error_code: 429
      fault_tolerant: true
`, strings.Join(fields, "\n"), k[0], k[1])
	return nil
}

// envoy's ratelimit service (src/redis/fixed_cache_impl.go, DoLimit)
// increments the counter of every descriptor of a request by its hits,
// whether or not another descriptor is over its limit (by default; a key
// already over its limit in the local cache is skipped, which changes no
// decision of a fixed window): rejected_counts all. Its counters also count
// a descriptor's own over-limit requests, which changes nothing a fixed
// window admits.

// writeEnvoyStack writes one descriptor per component, each under a
// generic_key naming the component (so two components on one key, per
// second and per hour, are distinct descriptors), and one rate_limits
// entry per component on the route.
func writeEnvoyStack(r *Result, comps []model.Policy, o Options) error {
	var descs, actions []string
	for i, c := range comps {
		u, ok := unitOf(envoyUnits, c.WindowS)
		if c.Algorithm != model.FixedWindow || !ok {
			return fmt.Errorf("envoy: all_of[%d] is %s: descriptors limit fixed windows of a second, minute, hour or day only", i, c.Canonical())
		}
		name := fmt.Sprintf("%s_%d", o.Zone, i)
		k := byKey(stackKey(c.Key), [2]string{"remote_address", "- remote_address: {}"}, [2]string{"", ""}, func(h string) [2]string {
			dk := strings.ToLower(strings.TrimPrefix(h, "X-"))
			return [2]string{dk, fmt.Sprintf("- request_headers: {header_name: %s, descriptor_key: %s}", yamlScalar(h), yamlScalar(dk))}
		})
		limit := fmt.Sprintf("rate_limit:\n      unit: %s\n      requests_per_unit: %d", u.name, c.Limit)
		if k[0] == "" { // global: the generic_key alone
			descs = append(descs, fmt.Sprintf("  - key: generic_key\n    value: %s\n    %s", yamlScalar(name), limit))
		} else {
			descs = append(descs, fmt.Sprintf("  - key: generic_key\n    value: %s\n    descriptors:\n      - key: %s\n        %s",
				yamlScalar(name), yamlScalar(k[0]), strings.ReplaceAll(limit, "\n      ", "\n          ")))
		}
		a := fmt.Sprintf("#     - actions:\n#         - generic_key: {descriptor_value: %s}", yamlScalar(name))
		if k[1] != "" {
			a += "\n#         " + k[1]
		}
		actions = append(actions, a)
		r.Notes = append(r.Notes, fmt.Sprintf("all_of[%d] (descriptor %s, key %s): %d per %s, a fixed window aligned to the epoch",
			i, name, stackKey(c.Key), c.Limit, strings.ToLower(u.name)))
	}
	sharedNodes(r, o, "ratelimit service (Redis)")
	r.Notes = append(r.Notes, "the service counts a request in every descriptor, rejected or not (rejected_counts all), and answers OVER_LIMIT when any descriptor is over its limit")
	r.Config = fmt.Sprintf(`# envoyproxy/ratelimit service config (config/%[1]s.yaml)
domain: %[4]s
descriptors:
%[2]s

# envoy route (rate_limits on the virtual host or route, with the
# envoy.filters.http.ratelimit filter pointing at the service, domain %[1]s),
# one entry per component:
#   rate_limits:
%[3]s
`, o.Zone, strings.Join(descs, "\n"), strings.Join(actions, "\n"), yamlScalar(o.Zone))
	return nil
}

// HAProxy tracks each component in a stick table of its own (track-scN):
// http_req_rate counts every request when it is tracked, before any deny
// (counts all: every component counts every request, rejected_counts all),
// and gpc0 is incremented by sc-inc-gpc0 after the deny rule, for admitted
// requests only (counts admitted: rejected_counts none). So a stack whose
// components all count as its rejected_counts says is exact.

// maxHAProxyStack is the stick counters HAProxy tracks at once by default
// (tune.stick-counters).
const maxHAProxyStack = 3

// haproxyCounts sets the exported components' counts to what rc needs and
// says what the export cannot keep: a haproxy_rate component asked with the
// other counts.
func haproxyCounts(rc model.RejectedCounts, q *model.Stack, fit Fit) (Fit, string) {
	want := model.HAProxyCountsAdmitted
	if rc == model.RejectedCountedByAll {
		want = model.HAProxyCountsAll
	}
	var bad []string
	for i := range q.Components {
		c := &q.Components[i]
		if c.Counts != want {
			bad = append(bad, fmt.Sprintf("all_of[%d]", i))
			c.Counts = want
		}
	}
	q.RejectedCounts = rc
	if len(bad) == 0 {
		return fit, ""
	}
	return Nearest, fmt.Sprintf("rejected_counts %s: HAProxy counts a request in every table when each tracks http_req_rate (counts all) and only admitted requests when each increments gpc0 after the deny (counts admitted), so %s count %s", rc, strings.Join(bad, ", "), want)
}

// writeHAProxyStack writes one stick table per component (a backend
// section each) and one deny over every counter.
func writeHAProxyStack(r *Result, comps []model.Policy, o Options) error {
	if len(comps) > maxHAProxyStack {
		return fmt.Errorf("haproxy: %d components; HAProxy tracks %d stick counters at once by default (tune.stick-counters)", len(comps), maxHAProxyStack)
	}
	var tables, tracks, conds, incs []string
	for i, c := range comps {
		p := perNode(limitOnly(c), o.Nodes)
		if !haproxyPeriodOK(p.PeriodS) {
			return fmt.Errorf("haproxy: all_of[%d]: period_s %g is not a whole number of milliseconds up to %d s", i, p.PeriodS, maxHAProxyPeriodS)
		}
		k := byKey(stackKey(c.Key), [2]string{"src", "ip"}, [2]string{"str(all)", "string len 8"}, func(h string) [2]string {
			return [2]string{fmt.Sprintf("req.hdr(%s)", h), "string len 64"}
		})
		periodMs := int64(p.PeriodS * 1000)
		period, expire := haproxyTime(periodMs), haproxyTime(min(3*periodMs, maxHAProxyS*1000))
		table := fmt.Sprintf("%s_%d", o.Zone, i)
		store := fmt.Sprintf("http_req_rate(%s)", period)
		cond := fmt.Sprintf("{ sc%d_http_req_rate gt %d }", i, p.Limit)
		if p.Counts == model.HAProxyCountsAdmitted {
			store = fmt.Sprintf("gpc0,gpc0_rate(%s)", period)
			cond = fmt.Sprintf("{ sc%d_gpc0_rate ge %d }", i, p.Limit)
			incs = append(incs, fmt.Sprintf("    http-request sc-inc-gpc0(%d)", i))
		}
		tables = append(tables, fmt.Sprintf("backend %s\n    stick-table type %s size 1m expire %s store %s", table, k[1], expire, store))
		tracks = append(tracks, fmt.Sprintf("    http-request track-sc%d %s table %s", i, k[0], table))
		conds = append(conds, cond)
		r.Notes = append(r.Notes, fmt.Sprintf("all_of[%d] (table %s, key %s): %d per %s, counts %s", i, table, stackKey(c.Key), p.Limit, period, p.Counts))
	}
	if o.Nodes > 1 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d HAProxy instances, each with its own tables: each enforces 1/%d of every limit", o.Nodes, o.Nodes))
	}
	r.Notes = append(r.Notes, "a request is denied when any counter is over its limit; the frequency counters are HAProxy 2.6's (docs/haproxy-rate.md)")
	r.Config = fmt.Sprintf(`# stick tables, one per component (HAProxy 2.x: a backend section each)
%[1]s

# in the frontend
%[2]s
    http-request deny deny_status 429 if %[3]s
%[4]s`, strings.Join(tables, "\n"), strings.Join(tracks, "\n"), strings.Join(conds, " || "), strings.Join(incs, "\n"))
	if len(incs) > 0 {
		r.Config += "\n"
	}
	return nil
}
