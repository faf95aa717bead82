package main

import (
	"strings"
	"testing"
)

const lessonBaseline = "../../configs/baselines/lesson"

func TestRecommendCLI(t *testing.T) {
	code, out, errOut := runCLI(t, "recommend", lessonBaseline, "--max-false-cut", "1%")
	if code != 0 || !strings.Contains(out, "best overall: token_bucket rate=2 capacity=1100") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
	// Nothing meets 0 false cuts and at most 10% missed: exit 1 naming the nearest miss.
	code, out, errOut = runCLI(t, "recommend", lessonBaseline, "--max-false-cut", "0", "--max-missed", "10%")
	if code != 1 || !strings.Contains(out, "nearest miss") || !strings.Contains(errOut, "nearest miss: ") {
		t.Errorf("infeasible: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"recommend", lessonBaseline},
		{"recommend", "--max-false-cut", "1%"},
		{"recommend", lessonBaseline, "--max-false-cut", "lots"},
		{"recommend", lessonBaseline, "--max-false-cut", "1%", "--max-missed", "1", "--min-caught", "2"},
		{"recommend", lessonBaseline, "--max-false-cut", "1%", "--format", "xml"},
		{"recommend", "/nonexistent", "--max-false-cut", "1%"},
		{"recommend", lessonBaseline, "--max-false-cut", "1%", "--cliff", "-3"},
		{"recommend", lessonBaseline, "--max-false-cut", "1%", "--cliff", "0"},
	} {
		if code, _, errOut := runCLI(t, args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}

func TestExportCLI(t *testing.T) {
	code, out, errOut := runCLI(t, "export", "--to", "nginx", "--run", lessonBaseline, "sliding_window", "window_s=60", "limit=600")
	if code != 0 || !strings.Contains(out, "limit_req_zone") || !strings.Contains(out, "the translation costs") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"export", "sliding_window window_s=60 limit=600"},
		{"export", "--to", "caddy", "sliding_window window_s=60 limit=600"},
		{"export", "--to", "nginx", "sliding_window window_s=60"},
		{"export", "--to", "nginx"},
		{"export", "--to", "nginx", "--nodes", "0", "nginx rate=1 burst=1"},
		{"export", "--to", "nginx", "--run", "/nonexistent", "nginx rate=1 burst=1"},
	} {
		if code, _, errOut := runCLI(t, args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}

// check joins points on the policy label, enumerated parameters included:
// points that differ only in key, lb or state are distinct points.
func TestCheckJoinsOnEnumeratedParams(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := runCLI(t, "run", "../../configs/nodes-sweep.yaml", "--out", dir, "--quiet"); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	code, out, errOut := runCLI(t, "check", "--baseline", dir, dir)
	if code != 0 || !strings.Contains(out, "40 points compared") || strings.Contains(out+errOut, "same parameters") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}
