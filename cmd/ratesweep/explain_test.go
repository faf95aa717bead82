package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// explain on a small run: the table and the summary, --vs, and the refusals
// (exit 2, naming why).
func TestExplainCommand(t *testing.T) {
	scenario, err := filepath.Abs("../../configs/lesson.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte("name: explain\nscenario: "+scenario+"\nsweep:\n"+
		"  - algorithm: fixed_window\n    window_s: 60\n    limit: 600\n"+
		"  - algorithm: token_bucket\n    rate: 10\n    capacity: 900\n"+
		"  - algorithm: concurrency\n    limit: 5\n    service_s: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if code, _, stderr := runCLI(t, "run", spec, "--out", run, "-q"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	code, out, stderr := runCLI(t, "explain", run, "fixed_window window_s=60 limit=600", "--vs", "token_bucket rate=10 capacity=900")
	if code != 0 {
		t.Fatalf("explain: exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"## Under `fixed_window window_s=60 limit=600`, not under `token_bucket rate=10 capacity=900`",
		"| field app, shift start | legit | 1720 | 360 cut | 0 | 0 | 0 | 360 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"explain.parquet", "explain.md"} {
		if _, err := os.Stat(filepath.Join(run, "explain", f)); err != nil {
			t.Error(err)
		}
	}
	for _, c := range []struct{ policy, why string }{
		{"concurrency limit=5 service_s=1", "algorithm concurrency is not supported"},
		{"fixed_window window_s=60 limit=601", "is not a policy of"},
		{"fixed_window window_s=60", "explain:"},
	} {
		code, _, stderr := runCLI(t, "explain", run, c.policy, "-q")
		if code != exitUsage || !strings.Contains(stderr, c.why) {
			t.Errorf("%s: exit %d, stderr %q, want 2 and %q", c.policy, code, stderr, c.why)
		}
	}
}

// A run that replays a log is refused: its requests are not a scenario's.
func TestExplainRefusesLogRun(t *testing.T) {
	dir := t.TempDir()
	var log strings.Builder
	for i := range 20 {
		fmt.Fprintf(&log, "10.0.0.%d - - [02/Sep/2003:10:00:%02d +0000] \"GET / HTTP/1.0\" 200 100\n", i%3, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "access.log"), []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte("name: log\ntraffic:\n  log: access.log\n  format: clf\n  key: ip\nsweep:\n"+
		"  - algorithm: fixed_window\n    window_s: 10\n    limit: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if code, _, stderr := runCLI(t, "run", spec, "--out", run, "-q"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	code, _, stderr := runCLI(t, "explain", run, "fixed_window window_s=10 limit=5")
	if code != exitUsage || !strings.Contains(stderr, "runs that replay a log are not supported") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
