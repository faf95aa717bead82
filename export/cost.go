package export

import (
	"fmt"
	"strings"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// Request costs and count_if in exports (docs/costs.md). Most targets count
// a request when they decide, before its response exists, so a count_if
// policy is refused with the reason; fail2ban (its failregex) and
// Cloudflare (its counting expression) count by the response. Costs:
// envoy sends them to its ratelimit service as hits_addend, and the go
// target spends them with x/time/rate's AllowN; the other targets count
// requests and refuse a Costed policy.

// costTargets are the targets that can spend a request's cost.
var costTargets = map[string]bool{"envoy": true, "go": true}

// checkWeighed refuses a policy whose count_if or costs target cannot
// express.
func checkWeighed(target string, p model.Policy) error {
	if p.CountIf != "" && target != "fail2ban" && target != "cloudflare" { // fail2ban's filter and Cloudflare's counting expression match the statuses
		return fmt.Errorf("%s cannot count only some responses (count_if %s): it counts a request when it decides, before the response; export the policy without count_if and count failures in the application (docs/costs.md)", target, p.CountIf)
	}
	if p.Costed && !costTargets[target] {
		return fmt.Errorf("%s counts requests and cannot spend a request's cost (the run's requests carry costs); envoy (hits_addend) and go (AllowN) can (docs/costs.md)", target)
	}
	return nil
}

// weighCosts adds the request cost to a Costed policy's configuration.
func weighCosts(r *Result) {
	if !r.Asked.Costed {
		return
	}
	switch r.Target {
	case "envoy":
		r.Config = strings.Replace(r.Config, "#   rate_limits:\n#     - actions:\n",
			"#   rate_limits:\n#     - hits_addend: {format: \"%REQ(x-request-cost)%\"}  # the request's cost; {number: 10} on a route whose requests all cost 10\n#       actions:\n", 1)
		r.Notes = append(r.Notes, "hits_addend adds a request's cost to the counter (envoy route rate_limits; x-request-cost stands for wherever the cost is known: a header set upstream, or {number: N} per route)")
		if r.Fit != Nearest {
			r.Fit = Nearest
			r.Why = "envoy's ratelimit service adds hits_addend to the counter even when the request is over the limit, so a rejected costly request uses up the window; the model spends a cost only when it is admitted"
		}
	case "go":
		r.Config = strings.Replace(r.Config, "if !l.Allow() {", "if !l.AllowN(time.Now(), cost(r)) { // cost(r): the request's cost in units", 1)
		r.Config = strings.Replace(r.Config, `"golang.org/x/time/rate"`, `"time"; "golang.org/x/time/rate"`, 1)
		r.Notes = append(r.Notes, "AllowN(t, cost) takes the request's cost in tokens all or nothing, as the model's token_bucket over traffic with costs (go test ./model -run OracleCost)")
	}
}

// runWeighing returns, by point id, the count_if and costs of a run's
// policies (from its spec; none when the spec does not read).
func runWeighing(specYAML string) func(pointID int64) model.Policy {
	s, err := sweep.ParseSpec([]byte(specYAML), nil)
	if specYAML == "" || err != nil {
		return func(int64) model.Policy { return model.Policy{} }
	}
	g := sweep.NewGrid(s)
	return func(id int64) model.Policy {
		if id < 0 || id >= g.Points() {
			return model.Policy{}
		}
		return g.Policy(id)
	}
}
