package sweep

import (
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// haproxy_rate through a sweep: its parameters on a grid (counts as a
// named axis), its label back from the Parquet columns, and what counting
// denied requests does to a flood.
func TestSweepHAProxyRate(t *testing.T) {
	const spec = `name: haproxy
scenario:
  name: a reader and a flood
  duration_s: 120
  clients:
    - name: steady reader
      class: legit
      segments: [[0, 120, 2]]
    - name: flood
      class: abusive
      stage: code
      segments: [[30, 90, 20]]
sweep:
  - algorithm: haproxy_rate
    period_s: [1, 10]
    limit: [5, 30, 300]
    counts: [all, admitted]
`
	_, rows, _ := runSpecText(t, spec, "haproxy.yaml")
	if len(rows) != 12 {
		t.Fatalf("%d rows, want 12", len(rows))
	}
	missed := map[string]int64{}
	for _, r := range rows {
		p, err := model.ParseLabel(r.Key())
		if err != nil || p.Algorithm != model.HAProxyRate {
			t.Fatalf("policy %q: %v", r.Key(), err)
		}
		missed[r.Key()] = r.Missed
		if p.Limit == 300 && (r.Missed != r.OfferedAbusive || r.FalseCut != 0) {
			t.Errorf("%s: missed %d of %d, false cut %d: a limit above every rate cuts nothing", r.Key(), r.Missed, r.OfferedAbusive, r.FalseCut)
		}
	}
	// Counting denied requests locks a flood out: fewer of it get through.
	for _, k := range [][2]string{
		{"haproxy_rate limit=5 period_s=1 counts=all", "haproxy_rate limit=5 period_s=1 counts=admitted"},
		{"haproxy_rate limit=30 period_s=10 counts=all", "haproxy_rate limit=30 period_s=10 counts=admitted"},
	} {
		a, okA := missed[k[0]]
		b, okB := missed[k[1]]
		if !okA || !okB || a >= b {
			t.Errorf("missed: %s %d (%v), %s %d (%v): counting denied requests should let fewer through", k[0], a, okA, k[1], b, okB)
		}
	}
	t.Log(missed)
}
