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

// stackTargets are the targets that write stacked limits.
var stackTargets = map[string]func(r *Result, comps []model.Policy, o Options) error{
	"nginx": writeNginxStack,
}

// exportStack exports an all_of policy: each component translated as the
// target translates it alone, rejected_counts as the target counts.
func exportStack(p model.Policy, target string, o Options) (*Result, error) {
	write, ok := stackTargets[target]
	if !ok {
		return nil, fmt.Errorf("%s cannot express stacked limits (all_of) yet; export each component on its own, or --to nginx", target)
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
	q := model.Policy{Algorithm: model.AllOf, Stack: &model.Stack{RejectedCounts: model.RejectedCountedByNone}}
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
	if p.Stack.RejectedCounts != model.RejectedCountedByNone {
		fit = Nearest
		whys = append(whys, "rejected_counts: "+target+" counts a request in every zone or in none (a zone that rejects it ends the lookup, and the zones before it are not charged), so a request one component rejects does not count against the others")
	}
	r := &Result{Target: target, Asked: p, Exported: q, Fit: fit, Why: strings.Join(whys, "; "), Key: strings.Join(keys, ", ")}
	if err := write(r, q.Stack.Components, o); err != nil {
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
