package export

import (
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// TestCloudflarePlans lists each plan's documented limits (Cloudflare's
// rate limiting rules, availability by plan), over the model's periods and
// timeouts.
func TestCloudflarePlans(t *testing.T) {
	want := []struct {
		name            string
		maxPeriodS      int  // longest counting period, s
		maxTimeoutS     int  // longest mitigation timeout, s
		onlyS           int  // Free: the one period and timeout, s
		throttle        bool // mitigation_timeout 0
		characteristics bool // beyond the IP
		counting        bool // a custom counting expression
		rules           int
	}{
		{"free", 10, 10, 10, false, false, false, 1},
		{"pro", 60, 3600, 0, false, false, false, 2},
		{"business", 600, 86400, 0, false, false, true, 5},
		{"enterprise", 65535, 86400, 0, true, false, true, 100},
		{"enterprise-arl", 65535, 86400, 0, true, true, true, 100},
	}
	if got := CloudflarePlans(); len(got) != len(want) {
		t.Fatalf("plans %v", got)
	}
	for i, w := range want {
		pl := cloudflarePlans[i]
		var periods, timeouts []int
		for _, s := range model.CloudflarePeriods {
			if s <= w.maxPeriodS && (w.onlyS == 0 || s == w.onlyS) {
				periods = append(periods, s)
			}
		}
		for _, s := range model.CloudflareTimeouts {
			if s <= w.maxTimeoutS && (w.onlyS == 0 || s == w.onlyS) && (s > 0 || w.throttle) {
				timeouts = append(timeouts, s)
			}
		}
		if pl.name != w.name || !slices.Equal(pl.periods, periods) || !slices.Equal(pl.timeouts, timeouts) ||
			pl.characteristics != w.characteristics || pl.countingExpression != w.counting || pl.rules != w.rules {
			t.Errorf("plan %d: %+v, want %s periods %v timeouts %v %+v", i, pl, w.name, periods, timeouts, w)
		}
	}
}

// --plan: what the plan accepts is written, the smallest plan by default
// (said in the notes); what it cannot hold is refused naming the limit.
func TestCloudflarePlanFlag(t *testing.T) {
	cases := []struct {
		label, key, plan string
		err              string // "" when exported
		note             string
	}{
		{"cloudflare_rule period_s=10 counts=all requests_per_period=5 mitigation_timeout_s=10", "ip", "", "", "plan: free, the smallest"},
		{"cloudflare_rule period_s=10 counts=all requests_per_period=5 mitigation_timeout_s=10", "ip", "free", "", "plan: free (--plan)"},
		{"cloudflare_rule period_s=60 counts=all requests_per_period=100 mitigation_timeout_s=600", "ip", "free", "period 60 s: the free plan accepts 10 s", ""},
		{"cloudflare_rule period_s=10 counts=all requests_per_period=5 mitigation_timeout_s=60", "ip", "free", "mitigation_timeout 60 s: the free plan accepts 10 s", ""},
		{"cloudflare_rule period_s=60 counts=all requests_per_period=100 mitigation_timeout_s=600", "ip", "pro", "", "plan: pro (--plan)"},
		{"cloudflare_rule period_s=120 counts=all requests_per_period=100 mitigation_timeout_s=600", "ip", "pro", "period 120 s: the pro plan accepts 10, 60 s", ""},
		{"cloudflare_rule period_s=60 counts=all requests_per_period=100 mitigation_timeout_s=86400", "ip", "pro", "mitigation_timeout 86400 s", ""},
		{"cloudflare_rule period_s=3600 counts=all requests_per_period=100 mitigation_timeout_s=600", "ip", "business", "period 3600 s", ""},
		{"cloudflare_rule period_s=10 counts=admitted requests_per_period=5 mitigation_timeout_s=0", "ip", "business", "mitigation_timeout 0 (throttle", ""},
		{"cloudflare_rule period_s=10 counts=admitted requests_per_period=5 mitigation_timeout_s=0", "ip", "", "", "plan: enterprise, the smallest"},
		{"cloudflare_rule period_s=10 counts=all requests_per_period=5 mitigation_timeout_s=10", "header:X-Api-Key", "enterprise", "characteristics: the enterprise plan counts by the IP only", ""},
		{"cloudflare_rule period_s=10 counts=all requests_per_period=5 mitigation_timeout_s=10", "global", "pro", "characteristics", ""},
		{"cloudflare_rule period_s=10 counts=all requests_per_period=5 mitigation_timeout_s=10", "header:X-Api-Key", "", "", "plan: enterprise-arl, the smallest"},
		{"cloudflare_rule period_s=10 counts=all requests_per_period=5 mitigation_timeout_s=10", "ip", "gold", "--plan: ", ""},
	}
	for _, c := range cases {
		p, err := model.ParseLabel(c.label)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Export(p, "cloudflare", Options{Key: c.key, Plan: c.plan})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s --key %s --plan %s: %v, want an error with %q", c.label, c.key, c.plan, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s --key %s --plan %s: %v", c.label, c.key, c.plan, err)
			continue
		}
		if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, c.note) }) {
			t.Errorf("%s --plan %s: notes %q, want %q", c.label, c.plan, r.Notes, c.note)
		}
		if strings.Contains(r.Config, "counting_expression") {
			t.Errorf("%s: a counting expression without count_if:\n%s", c.label, r.Config)
		}
	}
	// A translated policy is fitted into the plan: its period and timeout.
	p, _ := model.ParseLabel("token_bucket rate=10 capacity=900")
	for plan, want := range map[string]string{
		"free":       "cloudflare_rule period_s=10 counts=admitted requests_per_period=100 mitigation_timeout_s=10",
		"pro":        "cloudflare_rule period_s=60 counts=admitted requests_per_period=600 mitigation_timeout_s=10",
		"business":   "cloudflare_rule period_s=120 counts=admitted requests_per_period=1200 mitigation_timeout_s=10",
		"enterprise": "cloudflare_rule period_s=120 counts=admitted requests_per_period=1200 mitigation_timeout_s=0",
	} {
		r, err := Export(p, "cloudflare", Options{Plan: plan})
		if err != nil || r.Fit != Nearest || r.Exported.Canonical() != want {
			t.Errorf("--plan %s: %v, %s, want %s", plan, err, r.Exported.Canonical(), want)
		}
		if err == nil && plan != "enterprise" && !strings.Contains(r.Why, "the "+plan+" plan has no throttle") {
			t.Errorf("--plan %s: why %q", plan, r.Why)
		}
	}
	if _, err := Export(p, "nginx", Options{Plan: "pro"}); err == nil || !strings.Contains(err.Error(), "--plan") {
		t.Errorf("--plan with nginx: %v", err)
	}
}

// count_if becomes a counting expression on the origin's response status,
// which Business and above accept; a rule that counts the requests it
// blocks cannot count by their response.
func TestCloudflareCountIf(t *testing.T) {
	policy := func(label, countIf string) model.Policy {
		p, err := model.ParseLabel(label)
		if err != nil {
			t.Fatal(err)
		}
		p.CountIf = countIf
		return p
	}
	const admitted = "cloudflare_rule period_s=60 counts=admitted requests_per_period=5 mitigation_timeout_s=600"
	fiveXX, _ := model.CountIfOf(nil, 500, 599)
	for _, c := range []struct {
		p          model.Policy
		plan, want string // want: the counting expression, or the error's text
		ok         bool
	}{
		{policy(admitted, "401,403"), "", `"counting_expression": "http.response.code in {401 403}"`, true},
		{policy(admitted, "401,403"), "business", `"counting_expression": "http.response.code in {401 403}"`, true},
		{policy(admitted, fiveXX), "", `"counting_expression": "http.response.code in {500..599}"`, true},
		{policy("fixed_window window_s=60 limit=5", "401"), "", `"counting_expression": "http.response.code in {401}"`, true},
		{policy(admitted, "401,403"), "pro", "counting by the response needs business or above", false},
		{policy("cloudflare_rule period_s=60 counts=all requests_per_period=5 mitigation_timeout_s=600", "401"), "", "counts=admitted", false},
	} {
		r, err := Export(c.p, "cloudflare", Options{Key: "ip", Plan: c.plan})
		switch {
		case !c.ok && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s --plan %q: %v, want an error with %q", c.p.Canonical(), c.plan, err, c.want)
		case c.ok && err != nil:
			t.Errorf("%s --plan %q: %v", c.p.Canonical(), c.plan, err)
		case c.ok && !strings.Contains(r.Config, c.want):
			t.Errorf("%s --plan %q: want %s in\n%s", c.p.Canonical(), c.plan, c.want, r.Config)
		case c.ok && c.plan == "" && c.p.Algorithm == model.CloudflareRule && !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "plan: business") }):
			t.Errorf("%s: notes %q, want the business plan", c.p.Canonical(), r.Notes)
		}
	}
}
