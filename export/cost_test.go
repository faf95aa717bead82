package export

import (
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// count_if is refused by every target but fail2ban (whose filter matches
// the statuses), naming it; costs are spent by
// envoy (hits_addend on the route's rate_limits, nearest: its service
// counts a rejected request's cost too) and go (AllowN), and refused by
// the targets that count requests.
func TestExportCostAndCountIf(t *testing.T) {
	window := model.Policy{Algorithm: model.FixedWindow, WindowS: 60, Limit: 100}
	bucket := model.Policy{Algorithm: model.TokenBucket, Rate: 2, Capacity: 20}
	for _, target := range Targets {
		p := bucket
		if target == "envoy" || target == "kong" {
			p = window
		}
		if _, err := Export(p, target, Options{}); err != nil {
			t.Fatalf("%s: the bare policy does not export: %v", target, err)
		}
		c := p
		c.CountIf = "401,403"
		if target == "fail2ban" { // its filter matches the statuses
			if r, err := Export(c, target, Options{}); err != nil || !strings.Contains(r.Config, `failregex = ^\s*<HOST> (?:401|403)\s`) {
				t.Errorf("fail2ban: count_if: %v\n%v", err, r)
			}
		} else if target == "cloudflare" { // its counting expression matches the statuses
			if r, err := Export(c, target, Options{}); err != nil || !strings.Contains(r.Config, `"counting_expression": "http.response.code in {401 403}"`) {
				t.Errorf("cloudflare: count_if: %v\n%v", err, r)
			}
		} else if _, err := Export(c, target, Options{}); err == nil || !strings.Contains(err.Error(), "count_if 401,403") {
			t.Errorf("%s: count_if exported, or refused without naming it: %v", target, err)
		}
		c = p
		c.Costed = true
		r, err := Export(c, target, Options{})
		switch target {
		case "envoy":
			if err != nil || !strings.Contains(r.Config, "hits_addend:") || r.Fit != Nearest || r.Why == "" {
				t.Errorf("envoy: %v, fit %v, config:\n%v", err, r.Fit, r.Config)
			}
		case "go":
			if err != nil || !strings.Contains(r.Config, "l.AllowN(time.Now(), cost(r))") || r.Fit != Exact {
				t.Errorf("go: %v, config:\n%v", err, r.Config)
			}
		default:
			if err == nil || !strings.Contains(err.Error(), "cannot spend a request's cost") {
				t.Errorf("%s: costed policy exported or refused unclearly: %v", target, err)
			}
		}
	}
}
