package export

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// The managed rules' targets (docs/managed-rules.md): AWS WAF and
// Cloudflare take JSON, written by encoding/json from the typed documents
// below (which escapes every string), Fastly takes VCL. Every number is
// checked against the product's documented values by the model's
// Validate of the exported policy before it is written.

var awsWAFForms = map[model.Algorithm]form{
	model.AWSWAFRate: {Exact, validOnly, nil, ""},
}

var cloudflareForms = map[model.Algorithm]form{
	model.CloudflareRule: {Exact, validOnly, nil, ""},
	model.SlidingCounter: {Nearest, counterAsCloudflare, cloudflareUnrounded, ""},
}

var fastlyForms = map[model.Algorithm]form{
	model.FastlyERL: {Exact, validOnly, nil, ""},
}

// validOnly is p itself when p is valid (within the product's values).
func validOnly(p model.Policy) (model.Policy, bool) { return p, p.Validate() == nil }

// counterAsCloudflare is sliding_counter as a Cloudflare rule that
// throttles and counts admitted requests, when its window is a Cloudflare
// period.
func counterAsCloudflare(p model.Policy) (model.Policy, bool) {
	q := model.Policy{Algorithm: model.CloudflareRule, PeriodS: float64(p.WindowS), RequestsPerPeriod: p.Limit, Counts: model.HAProxyCountsAdmitted}
	return q, q.Validate() == nil
}

// cloudflareUnrounded says how Cloudflare decides otherwise than
// sliding_counter.
func cloudflareUnrounded(model.Policy) string {
	return "Cloudflare's estimate keeps the fraction of the weighted previous period that sliding_counter rounds down: " +
		"near the limit it blocks requests sliding_counter admits; sweep cloudflare_rule to measure it"
}

// nearestLog is the value of vals nearest x on a log scale (the first of a
// tie).
func nearestLog(vals []int, x float64) int {
	best := vals[0]
	for _, v := range vals {
		if math.Abs(math.Log(float64(v)/x)) < math.Abs(math.Log(float64(best)/x)) {
			best = v
		}
	}
	return best
}

// windowOf is p's window, or for a policy without one the time to admit
// capacity at rate, s.
func windowOf(p model.Policy, rate float64, capacity int64) float64 {
	if p.WindowS > 0 {
		return float64(p.WindowS)
	}
	return max(1, float64(capacity)/rate)
}

func nearestAWSWAF(p model.Policy, rate float64, capacity int64) (model.Policy, string) {
	why := "AWS WAF's rate-based rules count a key's requests over 60, 120, 300 or 600 s, checked every 10 s, and block while the count stays over the limit (aws_waf_rate)"
	w := nearestLog(model.AWSWindows, windowOf(p, rate, capacity))
	limit := int64(math.Round(rate * float64(w)))
	switch {
	case limit < 10:
		limit, why = 10, why+"; its lowest limit is 10"
	case limit > 2_000_000_000:
		limit, why = 2_000_000_000, why+"; its highest limit is 2,000,000,000"
	}
	return model.Policy{Algorithm: model.AWSWAFRate, WindowS: w, Limit: limit}, why
}

func nearestCloudflare(p model.Policy, rate float64, capacity int64) (model.Policy, string) {
	why := "Cloudflare's rate limiting rules estimate a key's requests over a period of 10 s to 1 h, the previous period weighted (cloudflare_rule)"
	period := nearestLog(model.CloudflarePeriods, windowOf(p, rate, capacity))
	n := min(max(1, int64(math.Round(rate*float64(period)))), 1_000_000_000)
	return model.Policy{Algorithm: model.CloudflareRule, PeriodS: float64(period), RequestsPerPeriod: n, Counts: model.HAProxyCountsAdmitted}, why
}

func nearestFastly(p model.Policy, rate float64, capacity int64) (model.Policy, string) {
	why := "Fastly's Edge Rate Limiting checks a whole number of requests per second (10 to 70,000,000) over 1, 10 or 60 s and penalizes a key over it for at least a minute (fastly_erl)"
	w := nearestLog(model.FastlyWindows, windowOf(p, rate, capacity))
	r := min(max(10, math.Round(rate)), 70_000_000)
	return model.Policy{Algorithm: model.FastlyERL, WindowS: w, Rate: r, PenaltyBoxS: 60}, why
}

// writeAWSWAF: a WAFv2 Rule with a RateBasedStatement.
func writeAWSWAF(r *Result, o Options) error {
	p := r.Exported
	if err := p.Validate(); err != nil {
		return fmt.Errorf("aws-waf: %s: %w", p.Canonical(), err)
	}
	sharedNodes(r, o, "AWS WAF web ACL")
	stmt := awsRateBased{Limit: p.Limit, EvaluationWindowSec: p.WindowS, AggregateKeyType: "IP"}
	switch {
	case r.Key == "global":
		stmt.AggregateKeyType = "CONSTANT" // AWS requires a scope-down statement with it: every request
		stmt.ScopeDownStatement = &awsStatement{SizeConstraintStatement: &awsSizeConstraint{
			FieldToMatch: map[string]struct{}{"UriPath": {}}, ComparisonOperator: "GE", Size: 0, TextTransformations: awsNoTransform}}
	case strings.HasPrefix(r.Key, "header:"):
		stmt.AggregateKeyType = "CUSTOM_KEYS"
		stmt.CustomKeys = []awsCustomKey{{Header: &awsHeaderKey{Name: strings.TrimPrefix(r.Key, "header:"), TextTransformations: awsNoTransform}}}
	}
	lag := fmt.Sprintf("its default lag_s, %d s", model.DefaultAWSLagS)
	if p.LagS > 0 {
		lag = fmt.Sprintf("lag_s %g", p.LagS)
	}
	r.Notes = append(r.Notes,
		fmt.Sprintf("blocks a key while its requests in the last %d s, counted at a check about every 10 s, exceed %d; blocked requests count too (aws_waf_rate)", p.WindowS, p.Limit),
		fmt.Sprintf("AWS acts on a check after a delay it says is usually below 30 s: the model assumed %s; AWS's own rate estimate weights recent requests more, which the model does not", lag),
		"add the rule to a web ACL's Rules (aws wafv2 update-web-acl), with a Priority of its own")
	rule := awsRule{Name: o.Zone, Priority: 0, Statement: awsStatement{RateBasedStatement: &stmt},
		Action:           awsAction{Block: awsBlock{CustomResponse: awsResponse{ResponseCode: 429}}},
		VisibilityConfig: awsVisibility{SampledRequestsEnabled: true, CloudWatchMetricsEnabled: true, MetricName: o.Zone}}
	return writeJSON(r, rule)
}

// The WAFv2 Rule document (AWS WAF API reference: Rule, Statement,
// RateBasedStatement, RuleAction, VisibilityConfig).
type (
	awsRule struct {
		Name             string
		Priority         int
		Statement        awsStatement
		Action           awsAction
		VisibilityConfig awsVisibility
	}
	awsStatement struct {
		RateBasedStatement      *awsRateBased      `json:",omitempty"`
		SizeConstraintStatement *awsSizeConstraint `json:",omitempty"`
	}
	awsRateBased struct {
		Limit               int64
		EvaluationWindowSec int
		AggregateKeyType    string
		CustomKeys          []awsCustomKey `json:",omitempty"`
		ScopeDownStatement  *awsStatement  `json:",omitempty"`
	}
	awsCustomKey struct {
		Header *awsHeaderKey `json:",omitempty"`
	}
	awsHeaderKey struct {
		Name                string
		TextTransformations []awsTransform
	}
	awsSizeConstraint struct {
		FieldToMatch        map[string]struct{}
		ComparisonOperator  string
		Size                int
		TextTransformations []awsTransform
	}
	awsTransform struct {
		Priority int
		Type     string
	}
	awsAction     struct{ Block awsBlock }
	awsBlock      struct{ CustomResponse awsResponse }
	awsResponse   struct{ ResponseCode int }
	awsVisibility struct {
		SampledRequestsEnabled   bool
		CloudWatchMetricsEnabled bool
		MetricName               string
	}
)

var awsNoTransform = []awsTransform{{Priority: 0, Type: "NONE"}}

// writeCloudflare: the body of a PUT to a zone's http_ratelimit phase
// entry point (Rulesets API), one rate limiting rule.
func writeCloudflare(r *Result, o Options) error {
	p := r.Exported
	if err := p.Validate(); err != nil {
		return fmt.Errorf("cloudflare: %s: %w", p.Canonical(), err)
	}
	sharedNodes(r, o, "Cloudflare zone")
	if pl, ok := planNamed(o.Plan); ok && r.Fit == Nearest && r.Asked.Algorithm != model.CloudflareRule {
		if q, why := fitPlan(p, pl); why != "" { // a translation: the nearest within the plan
			r.Exported, p = q, q
			r.Why += "; " + why
		}
	}
	var counting string
	if r.Asked.CountIf != "" {
		if p.Counts != model.HAProxyCountsAdmitted {
			return fmt.Errorf("cloudflare: %s with count_if: Cloudflare counts a request by the origin's response, and a request it blocks never gets one; sweep cloudflare_rule with counts=admitted", p.Canonical())
		}
		var err error
		if counting, err = cloudflareCounting(r.Asked.CountIf); err != nil {
			return fmt.Errorf("cloudflare: count_if: %w", err)
		}
	}
	plan, chosen, err := cloudflarePlanFor(o.Plan, p, r.Key == "ip", counting != "")
	if err != nil {
		return err
	}
	if chosen {
		r.Notes = append(r.Notes, fmt.Sprintf("plan: %s, the smallest Cloudflare plan that accepts this rule (the default; --plan names yours and refuses what it cannot hold)", plan.name))
	} else {
		r.Notes = append(r.Notes, fmt.Sprintf("plan: %s (--plan)", plan.name))
	}
	chars := byKey(r.Key, []string{"cf.colo.id", "ip.src"}, []string{"cf.colo.id"}, func(h string) []string {
		return []string{"cf.colo.id", fmt.Sprintf("http.request.headers[%q]", strings.ToLower(h))}
	})
	counted := "Cloudflare does not document whether requests it blocks are counted: the model assumed they are (counts=all)"
	switch {
	case counting != "":
		counted = "counts only the requests whose response from the origin has status " + r.Asked.CountIf + " (count_if; counting_expression, Business or above); requests the rule blocks get Cloudflare's response and are not counted (counts=admitted)"
	case p.Counts == model.HAProxyCountsAdmitted:
		counted = "Cloudflare does not document whether requests it blocks are counted: the model assumed they are not (counts=admitted)"
	}
	mode := fmt.Sprintf("over %d requests in %g s (the previous period weighted), the key is blocked for %d s", p.RequestsPerPeriod, p.PeriodS, p.MitigationTimeoutS)
	if p.MitigationTimeoutS == 0 {
		mode = fmt.Sprintf("requests over %d in %g s (the previous period weighted) are blocked, the others pass: the throttle behaviour, on Enterprise plans", p.RequestsPerPeriod, p.PeriodS)
	}
	r.Notes = append(r.Notes, mode, counted,
		"counters are per data centre (cf.colo.id): a client whose requests reach several data centres gets the limit at each",
		"PUT it to /zones/ZONE_ID/rulesets/phases/http_ratelimit/entrypoint (it replaces the phase's rules), or add the rule to the existing ruleset; narrow expression to the paths to protect")
	rule := cfRule{Description: "ratesweep " + p.Canonical(), Expression: "true", Action: "block",
		Ratelimit: cfRatelimit{Characteristics: chars, Period: int(p.PeriodS), RequestsPerPeriod: p.RequestsPerPeriod,
			MitigationTimeout: p.MitigationTimeoutS, CountingExpression: counting}, Enabled: true}
	return writeJSON(r, cfRuleset{Rules: []cfRule{rule}})
}

// The Rulesets API documents (Cloudflare API: rulesets, rule, ratelimit).
type (
	cfRuleset struct {
		Rules []cfRule `json:"rules"`
	}
	cfRule struct {
		Description string      `json:"description"`
		Expression  string      `json:"expression"`
		Action      string      `json:"action"`
		Ratelimit   cfRatelimit `json:"ratelimit"`
		Enabled     bool        `json:"enabled"`
	}
	cfRatelimit struct {
		Characteristics   []string `json:"characteristics"`
		Period            int      `json:"period"`
		RequestsPerPeriod int64    `json:"requests_per_period"`
		MitigationTimeout int      `json:"mitigation_timeout"`
		// CountingExpression selects the requests counted; empty (left
		// out): those the rule's expression matches. Free and Pro accept
		// none.
		CountingExpression string `json:"counting_expression,omitempty"`
	}
)

// writeJSON sets r.Config to doc, indented.
func writeJSON(r *Result, doc any) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	r.Config = string(b) + "\n"
	return nil
}

// writeFastly: a rate counter, a penalty box and ratelimit.check_rate in
// vcl_recv.
func writeFastly(r *Result, o Options) error {
	p := r.Exported
	if err := p.Validate(); err != nil {
		return fmt.Errorf("fastly: %s: %w", p.Canonical(), err)
	}
	sharedNodes(r, o, "Fastly service")
	name := strings.ReplaceAll(o.Zone, "-", "_") // VCL identifiers: letters, digits, '_'
	// A header's value has any length, and check_rate returns false
	// (never limits) for an entry over 256 bytes: the entry is the value's
	// SHA-256 in hex (64 characters). client.ip and "all" are short.
	entry := byKey(r.Key, "client.ip", `"all"`, func(h string) string { return "digest.hash_sha256(req.http." + h + ")" })
	under := "the model counted exactly (undercount_pct 0): sweep undercount_pct=10 to see the worst case"
	if p.UndercountPct > 0 {
		under = fmt.Sprintf("the model took %g%% off every count (undercount_pct)", p.UndercountPct)
	}
	r.Notes = append(r.Notes,
		fmt.Sprintf("a key over %g requests per second averaged over its last %d s is penalized for %d min: every request refused (fastly_erl)", p.Rate, p.WindowS, p.PenaltyBoxS/60),
		fmt.Sprintf("Fastly \"may under count by up to 10%%\": a key may then send up to %s requests per second averaged over %d s (limit/0.9) before it is penalized, and be penalized later than the model says; %s",
			trimFloat(math.Floor(p.Rate/0.9*10)/10), p.WindowS, under),
		"counters are per POP: a client whose requests reach several POPs gets the limit at each")
	if strings.HasPrefix(r.Key, "header:") {
		r.Notes = append(r.Notes,
			"the entry is the header's SHA-256 (64 hex characters): check_rate never limits an entry over 256 bytes, so a raw header value that long would never be limited; two values share a count only if their SHA-256 collide",
			"requests without the header share one entry (the hash of the empty string)")
	}
	r.Config = fmt.Sprintf(`# declarations (an init snippet, or the top of the custom VCL)
ratecounter rc_%[1]s { }
penaltybox pb_%[1]s { }

# in vcl_recv (a recv snippet)
# Fastly may under count by up to 10%%: a key is penalized only over about
# %[6]s requests per second (the limit %[4]d / 0.9), not %[4]d.
if (ratelimit.check_rate(%[2]s, rc_%[1]s, 1, %[3]d, %[4]d, pb_%[1]s, %[5]dm)) {
  error 429 "Too Many Requests";
}
`, name, entry, p.WindowS, int64(p.Rate), p.PenaltyBoxS/60, trimFloat(math.Floor(p.Rate/0.9*10)/10))
	return nil
}
