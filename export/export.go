// Package export writes a ratesweep policy in the native configuration of
// a proxy or library (nginx, HAProxy, envoy's ratelimit service, Kong,
// Traefik, golang.org/x/time/rate, the project's Redis scripts), with the
// key, the window/rate/burst mapping and its caveats written out. Where a
// target cannot express the policy it says so and exports the nearest
// policy it can express (Translate; with a run, NearestIn picks it by the
// run's own metrics). docs/deploy.md documents every mapping.
package export

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// Targets lists the export targets.
var Targets = []string{"nginx", "haproxy", "envoy", "kong", "traefik", "go", "redis"}

// Options tune an export.
type Options struct {
	// Key is what the limit hangs on: "ip" (the client address), "header:NAME"
	// (e.g. an account header) or "global" (one limit for everyone). Empty:
	// from the policy's key parameter (client and address: ip; account and
	// both: header:X-Account; global: global).
	Key string
	// Nodes is the number of replicas that each enforce the limit with their
	// own state; targets whose state is local get 1/Nodes of the limit each
	// (0 and 1: one replica).
	Nodes int
	// Zone names the limiter (nginx zone, HAProxy table, envoy domain,
	// Redis key prefix); default "ratesweep".
	Zone string
}

// Fit says how exactly a target implements a policy.
type Fit uint8

const (
	// Exact: the target's algorithm is the model's, decision by decision
	// (up to its clock granularity).
	Exact Fit = iota
	// Equivalent: another algorithm of the model that decides the same
	// requests (token_bucket rate r capacity C = nginx burst C−1 nodelay).
	Equivalent
	// Nearest: the target cannot express the policy; the config implements
	// another policy, named in Result.Exported, whose metrics differ.
	Nearest
)

func (f Fit) String() string { return [...]string{"exact", "equivalent", "nearest"}[f] }

// Result is one export.
type Result struct {
	Target   string
	Asked    model.Policy // the policy asked for
	Exported model.Policy // the policy the configuration implements
	Fit      Fit
	Why      string   // when Fit is Nearest: what the target cannot express
	Key      string   // the key used (Options.Key resolved)
	Notes    []string // the mapping, caveats, the division over nodes
	Config   string   // the configuration (or code), ready to paste
}

// Export writes policy p for target. An inexpressible policy is
// translated by Translate; use NearestIn with a run to choose by metrics.
func Export(p model.Policy, target string, o Options) (*Result, error) {
	q, fit, why, err := Translate(p, target)
	if err != nil {
		return nil, err
	}
	return Render(p, q, fit, why, target, o)
}

// Render writes the configuration of exported (which target can express)
// for asked.
func Render(asked, exported model.Policy, fit Fit, why, target string, o Options) (*Result, error) {
	if o.Zone == "" {
		o.Zone = "ratesweep"
	}
	if err := checkZone(o.Zone); err != nil {
		return nil, err
	}
	if o.Nodes < 1 {
		o.Nodes = 1
	}
	key, err := resolveKey(asked, o.Key)
	if err != nil {
		return nil, err
	}
	r := &Result{Target: target, Asked: asked, Exported: exported, Fit: fit, Why: why, Key: key}
	t, ok := targets[target]
	if !ok {
		return nil, fmt.Errorf("unknown target %q (one of %s)", target, strings.Join(Targets, ", "))
	}
	if fit != Nearest {
		if ok, _ := expressible(exported, target); !ok {
			return nil, fmt.Errorf("%s cannot express %s", target, exported.Canonical())
		}
	}
	if err := checkInts(target, exported); err != nil {
		return nil, err
	}
	if err := t.write(r, o); err != nil {
		return nil, err
	}
	return r, nil
}

// A target is one proxy or library: the comment syntax of its
// configuration and its writer.
type target struct {
	comment func(string) string // hashComment or slashComment
	write   func(r *Result, o Options) error
}

var targets = map[string]target{
	"nginx": {hashComment, writeNginx}, "haproxy": {hashComment, writeHAProxy},
	"envoy": {hashComment, writeEnvoy}, "kong": {hashComment, writeKong},
	"traefik": {hashComment, writeTraefik}, "go": {slashComment, writeGo}, "redis": {slashComment, writeRedis},
}

func resolveKey(p model.Policy, k string) (string, error) {
	if k == "" {
		switch p.Key {
		case model.KeyAccount, model.KeyBoth:
			return "header:X-Account", nil
		case model.KeyGlobal:
			return "global", nil
		}
		return "ip", nil
	}
	if k == "ip" || k == "global" {
		return k, nil
	}
	if h, ok := strings.CutPrefix(k, "header:"); ok {
		if err := checkHeader(h); err != nil {
			return "", err
		}
		return k, nil
	}
	return "", fmt.Errorf("--key: %s is not ip, global or header:NAME", quoteShort(k))
}

// limitOnly strips the distribution parameters, which no config expresses
// (nodes are Options.Nodes; the key is Options.Key).
func limitOnly(p model.Policy) model.Policy {
	p.Key, p.Nodes, p.LB, p.State, p.SyncMs = 0, 0, 0, 0, 0
	return p
}

// Expressible reports whether target implements p exactly or equivalently,
// and how.
func Expressible(p model.Policy, target string) (bool, Fit) { return expressible(limitOnly(p), target) }

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

// traefikRate writes rate r as Traefik's integer average per period: the
// shortest whole period (s, up to an hour) in which r·period is whole.
func traefikRate(r float64) (avg int64, periodS int, ok bool) {
	for _, per := range []int{1, 2, 4, 5, 10, 20, 30, 60, 120, 300, 600, 3600} {
		a := r * float64(per)
		if math.Abs(a-math.Round(a)) < 1e-9 && a >= 1 {
			return int64(math.Round(a)), per, true
		}
	}
	return 0, 0, false
}

func expressible(p model.Policy, target string) (bool, Fit) {
	switch target {
	case "nginx":
		_, ok := nginxRate(p.Rate)
		switch p.Algorithm {
		case model.Nginx:
			return ok, Exact
		case model.TokenBucket, model.GCRA:
			return ok, Equivalent
		}
	case "haproxy":
		return p.Algorithm == model.SlidingCounter && p.WindowS <= maxHAProxyS, Exact
	case "envoy":
		_, ok := unitOf(envoyUnits, p.WindowS)
		return ok && p.Algorithm == model.FixedWindow && p.PhaseS == 0, Exact
	case "kong":
		_, ok := unitOf(kongUnits, p.WindowS)
		return ok && p.Algorithm == model.FixedWindow && p.PhaseS == 0, Exact
	case "traefik", "go":
		if target == "traefik" {
			if _, _, ok := traefikRate(p.Rate); !ok {
				return false, Exact
			}
		}
		switch p.Algorithm {
		case model.TokenBucket:
			return true, Exact
		case model.GCRA:
			return true, Equivalent
		case model.Nginx:
			return p.Delay >= p.Burst, Equivalent
		}
	case "redis":
		return slices.Contains([]model.Algorithm{model.FixedWindow, model.SlidingWindow, model.SlidingLog, model.TokenBucket}, p.Algorithm), Exact
	}
	return false, Exact
}

// rateAndCapacity is a policy's long-run rate (requests/s) and the requests
// it admits at once from idle: the two numbers every family shares.
func rateAndCapacity(p model.Policy) (rate float64, capacity int64) {
	switch p.Algorithm {
	case model.TokenBucket, model.GCRA:
		return p.Rate, p.Capacity
	case model.Nginx:
		return p.Rate, p.Burst + 1
	case model.Concurrency:
		return float64(p.Limit) / p.ServiceS, p.Limit
	}
	return float64(p.Limit) / float64(p.WindowS), p.Limit
}

// Translate returns the policy that target configures for p: p itself
// (Exact), an equivalent policy of another algorithm (Equivalent), or
// the nearest policy target can express by rule (Nearest): the same
// long-run rate and the same requests at once from idle, in the target's
// algorithm and units; why says what the target lacks. Nearest (with a
// run) chooses by metrics instead (NearestIn).
func Translate(p model.Policy, target string) (q model.Policy, fit Fit, why string, err error) {
	if _, ok := targets[target]; !ok {
		return q, 0, "", fmt.Errorf("unknown target %q (one of %s)", target, strings.Join(Targets, ", "))
	}
	p = limitOnly(p)
	if err := p.Validate(); err != nil {
		return q, 0, "", err
	}
	if ok, fit := expressible(p, target); ok {
		switch {
		case target == "nginx" && fit == Equivalent: // capacity C = burst+1, nodelay
			return model.Policy{Algorithm: model.Nginx, Rate: p.Rate, Burst: p.Capacity - 1, Delay: p.Capacity - 1}, fit, "", nil
		case fit == Equivalent && p.Algorithm == model.Nginx: // go, traefik: nodelay nginx is a token bucket
			return model.Policy{Algorithm: model.TokenBucket, Rate: p.Rate, Capacity: p.Burst + 1}, fit, "", nil
		case fit == Equivalent && p.Algorithm == model.GCRA:
			return model.Policy{Algorithm: model.TokenBucket, Rate: p.Rate, Capacity: p.Capacity}, fit, "", nil
		}
		return p, fit, "", nil
	}
	rate, capacity := rateAndCapacity(p)
	capacity = max(capacity, 1)
	switch target {
	case "nginx":
		why = "nginx limit_req is a leaky bucket (rate, burst): it has no window"
		if p.Algorithm == model.Nginx || p.Algorithm == model.TokenBucket || p.Algorithm == model.GCRA {
			why = fmt.Sprintf("nginx writes rates as whole r/s or r/m, not %g r/s", rate)
		}
		m := max(1, math.Round(rate*60)) / 60
		if rate >= 1 {
			if r := math.Round(rate); math.Abs(r-rate) < math.Abs(m-rate) || math.Abs(r-rate) < 1e-9 {
				m = r
			}
		}
		q = model.Policy{Algorithm: model.Nginx, Rate: m, Burst: capacity - 1, Delay: capacity - 1}
	case "haproxy":
		why = "HAProxy's stick-table rates are sliding counters (previous period weighted)"
		w := p.WindowS
		if w == 0 {
			w = int(max(1, min(math.Round(float64(capacity)/rate), maxHAProxyS)))
		}
		if w > maxHAProxyS {
			why = fmt.Sprintf("HAProxy's periods are at most %d s (~24.8 days)", maxHAProxyS)
			w = maxHAProxyS
		}
		q = model.Policy{Algorithm: model.SlidingCounter, WindowS: w, Limit: int64(math.Round(rate * float64(w)))}
	case "envoy", "kong":
		units := envoyUnits
		why = "envoy's ratelimit service counts in fixed windows aligned to the epoch (SECOND, MINUTE, HOUR, DAY)"
		if target == "kong" {
			units = kongUnits
			why = "Kong's rate-limiting plugin counts in calendar-aligned fixed windows (second, minute, hour, day, month, year)"
		}
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
		q = model.Policy{Algorithm: model.FixedWindow, WindowS: best.s, Limit: max(1, int64(math.Round(rate*float64(best.s))))}
	case "traefik", "go":
		why = "golang.org/x/time/rate (Traefik's rateLimit middleware too) is a token bucket"
		if target == "traefik" {
			if _, _, ok := traefikRate(rate); !ok {
				rate = math.Max(1, math.Round(rate))
				why = "Traefik writes rates as a whole average per period"
			}
		}
		q = model.Policy{Algorithm: model.TokenBucket, Rate: rate, Capacity: capacity}
	case "redis":
		why = "the project's Redis scripts keep fixed_window, sliding_window, sliding_log and token_bucket"
		if w := p.WindowS; w > 0 { // sliding_counter, fixed_window_anchored: the exact sliding window
			q = model.Policy{Algorithm: model.SlidingWindow, WindowS: w, Limit: p.Limit}
		} else {
			q = model.Policy{Algorithm: model.TokenBucket, Rate: rate, Capacity: capacity}
		}
	}
	if err := q.Validate(); err != nil {
		return q, 0, "", fmt.Errorf("%s: no expressible policy near %s: %w", target, p.Canonical(), err)
	}
	return q, Nearest, why, nil
}
