package sweep

import (
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// The managed rules through a sweep: their parameters on a grid, labels
// back from the Parquet columns, and a flood cut by each.
func TestSweepManagedRules(t *testing.T) {
	const spec = `name: managed
scenario:
  name: a reader and a flood
  duration_s: 900
  clients:
    - name: steady reader
      class: legit
      segments: [[0, 900, 1]]
    - name: flood
      class: abusive
      stage: code
      segments: [[100, 400, 50]]
sweep:
  - algorithm: aws_waf_rate
    window_s: [60, 300]
    limit: [100, 1000000]
    lag_s: [5, 20]
  - algorithm: cloudflare_rule
    period_s: [10, 60]
    requests_per_period: [100]
    mitigation_timeout_s: [0, 600]
    counts: [all, admitted]
  - algorithm: fastly_erl
    window_s: [1, 10]
    rate: [20]
    penalty_box_s: [60]
    undercount_pct: [0, 10]
`
	_, rows, _ := runSpecText(t, spec, "managed.yaml")
	if len(rows) != 8+8+4 {
		t.Fatalf("%d rows, want 20", len(rows))
	}
	for _, r := range rows {
		p, err := model.ParseLabel(r.Key())
		if err != nil {
			t.Fatalf("policy %q: %v", r.Key(), err)
		}
		high := p.Algorithm == model.AWSWAFRate && p.Limit == 1000000
		switch {
		case high && (r.Missed != r.OfferedAbusive || r.FalseCut != 0):
			t.Errorf("%s: missed %d of %d, false cut %d: a limit above every rate cuts nothing", r.Key(), r.Missed, r.OfferedAbusive, r.FalseCut)
		case !high && r.Missed*2 > r.OfferedAbusive:
			t.Errorf("%s: missed %d of %d: the flood runs at 50/s against a limit near 2/s", r.Key(), r.Missed, r.OfferedAbusive)
		}
	}
}

// A managed rule's parameter outside the vendor's values is an error naming
// the file and the parameter.
func TestSpecManagedRulesBadValues(t *testing.T) {
	const head = "name: bad\nscenario: {name: s, duration_s: 10, clients: [{name: c, class: legit, segments: [[0, 10, 1]]}]}\nsweep:\n"
	for _, c := range []struct{ entry, want string }{
		{"  - {algorithm: aws_waf_rate, window_s: 30, limit: 100}", "window_s"},
		{"  - {algorithm: aws_waf_rate, window_s: 60, limit: 5}", "limit"},
		{"  - {algorithm: cloudflare_rule, period_s: 30, requests_per_period: 5, mitigation_timeout_s: 0, counts: all}", "period_s"},
		{"  - {algorithm: cloudflare_rule, period_s: 60, requests_per_period: 5, mitigation_timeout_s: 45, counts: all}", "mitigation_timeout_s"},
		{"  - {algorithm: cloudflare_rule, period_s: 60, requests_per_period: 5, mitigation_timeout_s: 0}", "counts"},
		{"  - {algorithm: fastly_erl, window_s: 5, rate: 100, penalty_box_s: 60}", "window_s"},
		{"  - {algorithm: fastly_erl, window_s: 10, rate: 100, penalty_box_s: 90}", "penalty_box_s"},
	} {
		_, err := ReadSpec([]byte(head+c.entry+"\n"), "bad.yaml", ".")
		if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming bad.yaml and %s", c.entry, err, c.want)
		}
	}
}
