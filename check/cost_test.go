package check

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// costRun runs a token_bucket sweep over a scenario whose reports and
// scraper clients cost cost units a request (1: no costs).
func costRun(t *testing.T, cost string) string {
	t.Helper()
	spec, err := sweep.ParseSpec([]byte(`name: cost
scenario:
  name: s
  duration_s: 120
  arrivals: uniform
  clients:
    - {name: app, class: legit, segments: [[0, 120, 2]]}
    - {name: reports, class: legit, segments: [[0, 60, 1]], cost: `+cost+`}
    - {name: scraper, class: abusive, stage: none, segments: [[10, 120, 4]], cost: `+cost+`}
sweep:
  - {algorithm: token_bucket, rate: 4, capacity: [40, 80]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// check compares the cost totals of runs whose requests carry costs; a
// cost total without a tolerance of its own takes its request twin's.
func TestCheckCostColumns(t *testing.T) {
	base := costRun(t, "3")
	run := costRun(t, "4") // the same requests, costing one unit more
	res, err := Compare(context.Background(), base, base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range sweep.CostColumns() {
		if !slices.Contains(res.Metrics, m) {
			t.Errorf("%s not compared (compared: %v)", m, res.Metrics)
		}
	}
	if res.Failed() {
		t.Errorf("a run differs from itself: %+v", res.Changes)
	}
	res, err = Compare(context.Background(), base, run, Options{AllowScenarioChange: true})
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, c := range res.Changes {
		changed = append(changed, c.Metric)
	}
	if !slices.Contains(changed, "offered_legit_cost") || slices.Contains(changed, "offered_legit") {
		t.Errorf("changed metrics %v: want offered_legit_cost and not offered_legit", changed)
	}
	res, err = Compare(context.Background(), base, run, Options{AllowScenarioChange: true, Tolerances: map[string]Tolerance{"offered_legit": {Rel: 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Changes {
		if c.Metric == "offered_legit_cost" {
			t.Errorf("offered_legit_cost moved %v → %v beyond offered_legit's tolerance of 50%%", c.Baseline, c.Run)
		}
	}
	// A baseline without costs against a run with them: the totals are new.
	plain := costRun(t, "1")
	res, err = Compare(context.Background(), plain, base, Options{AllowScenarioChange: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "false_cut_cost is new in the run") {
		t.Errorf("warnings %q, metrics %v", res.Warnings, res.Metrics)
	}
}
