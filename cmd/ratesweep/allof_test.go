package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

const stackCLISpec = `name: stacked
scenario:
  name: integrators
  duration_s: 300
  clients:
    - {name: integrator A, class: legit, org: acme, segments: [[0, 300, 1]]}
    - {name: integrator B, class: legit, org: acme, segments: [[0, 300, 1]]}
    - {name: integrator C, class: legit, org: beta, segments: [[0, 300, 2]]}
    - {name: scraper, class: abusive, stage: none, org: beta, segments: [[60, 120, 10]]}
sweep:
  - all_of:
      - {algorithm: sliding_window, window_s: 60, limit: [30, 60, 90, 120, 150]}
      - {algorithm: sliding_window, window_s: 60, limit: [100, 150, 200, 300], key: org}
    rejected_counts: [all, none]
  - algorithm: sliding_window
    window_s: 60
    limit: [30, 60, 90, 120, 150]
`

// runStackCLI runs spec (with its rejected_counts axis replaced by rc when
// rc is not "") and returns the run directory.
func runStackCLI(t *testing.T, spec string) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "stack.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	if code, _, errOut := runCLI(t, "run", file, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	return out
}

// report, recommend and check on a run of stacked limits: labels name
// every component, the heat maps span two component axes, recommend picks
// the policy the points say is best, and check joins stacked points on
// their labels.
func TestStackReportRecommendCheck(t *testing.T) {
	run := runStackCLI(t, stackCLISpec)
	rows, err := sweep.ReadPoints(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	// The independent answer: the least missed among points cutting at most
	// 1% of legitimate requests (then the fewest false cuts).
	best := rows[0]
	for _, r := range rows[1:] {
		if r.LegitCutPct <= 1 && (best.LegitCutPct > 1 || r.MissedPct < best.MissedPct ||
			(r.MissedPct == best.MissedPct && r.LegitCutPct < best.LegitCutPct)) {
			best = r
		}
	}
	if !strings.HasPrefix(best.Key(), "all_of ") {
		t.Fatalf("best point %s: the stack should beat a single limit here", best.Key())
	}

	code, out, errOut := runCLI(t, "recommend", run, "--max-false-cut", "1%")
	if code != 0 {
		t.Fatalf("recommend: exit %d: %s", code, errOut)
	}
	chosen, _, _ := strings.Cut(strings.SplitAfter(out, "best overall: ")[1], "\n")
	var got *sweep.PointRow
	for i := range rows {
		if rows[i].Key() == chosen {
			got = &rows[i]
		}
	}
	if got == nil || got.MissedPct != best.MissedPct || got.LegitCutPct > 1 {
		t.Errorf("recommend chose %q; the points' best is %s (missed %.2f%%)", chosen, best.Key(), best.MissedPct)
	}

	if code, _, errOut := runCLI(t, "report", run); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(run, "report", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"over all_of\\[0\\].limit × all_of\\[1\\].limit, rejected_counts all",
		"over all_of\\[0\\].limit × all_of\\[1\\].limit, rejected_counts none",
		"| all_of | rejected_counts=",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, f := range []string{"heatmap-1-all_of-rejected_counts_all.png", "heatmap-2-all_of-rejected_counts_none.svg"} {
		if _, err := os.Stat(filepath.Join(run, "report", f)); err != nil {
			t.Error(err)
		}
	}

	// check: the same sweep again is identical; a sweep with only none
	// and another org limit shares the none points with the same labels.
	again := runStackCLI(t, stackCLISpec)
	if code, out, errOut := runCLI(t, "check", "--baseline", run, again); code != 0 || !strings.Contains(out, "45 identical") {
		t.Errorf("check of the same sweep: exit %d\n%s\n%s", code, out, errOut)
	}
	other := strings.NewReplacer("rejected_counts: [all, none]", "rejected_counts: [none]", "[100, 150, 200, 300]", "[100, 150, 200, 250]").Replace(stackCLISpec)
	code, out, errOut = runCLI(t, "check", "--baseline", run, runStackCLI(t, other))
	if code != 1 || !strings.Contains(out, "20 identical, 0 changed; 25 removed, 5 added") ||
		!strings.Contains(out, "all_of rejected_counts=all [sliding_window window_s=60 limit=30] [sliding_window window_s=60 limit=100 key=org]") {
		t.Errorf("check of another sweep: exit %d\n%s\n%s", code, out, errOut)
	}
}
