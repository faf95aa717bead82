package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A costed sweep end to end on the command line: the report shows the cost
// columns, check compares them, recommend --max-false-cut-cost chooses by
// them and exits 1 naming the nearest miss in cost units, and a bad bound
// is a usage error.
func TestCostCLI(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "cost.yaml")
	os.WriteFile(spec, []byte(`name: cost
scenario:
  name: s
  duration_s: 300
  arrivals: uniform
  clients:
    - {name: app, class: legit, segments: [[0, 300, 2]]}
    - {name: reports, class: legit, segments: [[0, 300, 1]], cost: 6}
    - {name: scraper, class: abusive, stage: none, segments: [[0, 300, 8]], cost: 3}
sweep:
  - {algorithm: token_bucket, rate: [4, 5], capacity: {from: 6, to: 40, step: 2}}
`), 0o644)
	run := filepath.Join(dir, "run")
	if code, _, errOut := runCLI(t, "run", spec, "--out", run, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "report", run); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(run, "report", "report.md"))
	if err != nil || !strings.Contains(string(md), "false cut cost") {
		t.Errorf("report.md has no cost column (%v)", err)
	}
	if code, out, errOut := runCLI(t, "check", "--baseline", run, run, "--format", "json", "--tol-rel", "false_cut_cost=1%"); code != 0 || !strings.Contains(out, `"false_cut_cost"`) {
		t.Errorf("check: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runCLI(t, "recommend", run, "--max-false-cut-cost", "100%")
	if code != 0 || !strings.Contains(out, "false cut cost <= 100%") {
		t.Errorf("recommend --max-false-cut-cost 100%%: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "recommend", run, "--max-false-cut-cost", "1")
	if code != 1 || !strings.Contains(out+errOut, "false cut cost <= 1 cost units (at ") {
		t.Errorf("recommend --max-false-cut-cost 1: exit %d, want 1 with the nearest miss\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "recommend", run, "--max-false-cut-cost", "lots"); code != 2 || !strings.Contains(errOut, "--max-false-cut-cost") {
		t.Errorf("recommend --max-false-cut-cost lots: exit %d, want 2 naming the flag: %s", code, errOut)
	}
}
