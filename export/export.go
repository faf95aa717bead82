// Package export writes a ratesweep policy in the native configuration of
// a proxy or library (nginx, HAProxy, envoy's ratelimit service, Kong,
// Traefik, golang.org/x/time/rate, the project's Redis scripts, AWS WAF,
// Cloudflare, Fastly, fail2ban), with the key, the window/rate/burst mapping and its
// caveats written out. Where a
// target cannot express the policy it says so and exports the nearest
// policy it can express (Translate; with a run, NearestIn picks it by the
// run's own metrics). docs/deploy.md documents every mapping.
package export

import (
	"fmt"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// Targets lists the export targets.
var Targets = []string{"nginx", "haproxy", "envoy", "kong", "traefik", "go", "redis", "aws-waf", "cloudflare", "fastly", "fail2ban"}

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
	// Plan is the Cloudflare plan the rule must fit (free, pro, business,
	// enterprise, enterprise-arl); empty: the smallest plan that holds it.
	// Cloudflare only.
	Plan string
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
	// Nearest: anything else. The target cannot express the policy (the
	// config implements another policy, named in Result.Exported, whose
	// metrics differ), or it configures the policy's parameters but decides
	// otherwise (Traefik delays instead of rejecting); Result.Why says which.
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

// jsonTargets configure with a JSON document, which has no comments.
var jsonTargets = map[string]bool{"aws-waf": true, "cloudflare": true}

// CommentsInline reports whether target's configuration can carry Write's
// header as comments. Where it cannot (a JSON document), the command prints
// the header apart (on stderr), so that what it prints on stdout is the
// document alone, ready to send.
func CommentsInline(target string) bool { return !jsonTargets[target] }

// Export writes policy p for target. An inexpressible policy is
// translated by Translate; use NearestIn with a run to choose by metrics.
func Export(p model.Policy, target string, o Options) (*Result, error) {
	if p.Stack != nil {
		return exportStack(p, target, o)
	}
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
	if o.Plan != "" && target != "cloudflare" {
		return nil, fmt.Errorf("--plan: only for --to cloudflare, not %s", target)
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
	if err := checkWeighed(target, asked); err != nil {
		return nil, err
	}
	if err := t.write(r, o); err != nil {
		return nil, err
	}
	weighCosts(r)
	return r, nil
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
