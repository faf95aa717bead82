package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/sweep"
)

// init without a log: a commented spec that runs, the schema beside it, no
// silent overwrite.
func TestInitStarter(t *testing.T) {
	code, out, stderr := runCLI(t, "init")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// On standard output no schema file is written: the spec says how to
	// make one instead of naming a file that is not there.
	if strings.HasPrefix(out, "# yaml-language-server:") || !strings.Contains(out, "ratesweep schema > ratesweep.schema.json") || strings.Count(out, "#") < 15 {
		t.Errorf("the starter spec on stdout should tell how to get the schema and explain its fields:\n%s", out)
	}
	s, err := sweep.ReadSpec([]byte(out), "init.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "my-sweep" || len(s.Entries) != 3 || s.Scenario == nil {
		t.Errorf("starter spec: %+v", s)
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	if code, _, stderr := runCLI(t, "init", "--out", spec, "--name", "mine"); code != 0 {
		t.Fatalf("init --out: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ratesweep.schema.json")); err != nil {
		t.Errorf("no schema beside the spec: %v", err)
	}
	if b, _ := os.ReadFile(spec); !strings.HasPrefix(string(b), "# yaml-language-server: $schema=ratesweep.schema.json\n") {
		t.Errorf("init --out: the spec should name the schema written beside it:\n%s", b)
	}
	run := filepath.Join(dir, "run")
	if code, _, stderr := runCLI(t, "run", spec, "--out", run, "-q"); code != 0 {
		t.Fatalf("run of the starter spec: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(run, "manifest.json")); err != nil {
		t.Error(err)
	}
	if code, _, stderr := runCLI(t, "init", "--out", spec); code != exitUsage || !strings.Contains(stderr, "exists (--force replaces it)") {
		t.Errorf("init over an existing file: exit %d, %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "init", "--out", spec, "--force"); code != 0 {
		t.Errorf("init --force: exit %d", code)
	}
	if code, _, _ := runCLI(t, "init", "--name", "a/b"); code != exitUsage {
		t.Errorf("init --name a/b: exit %d", code)
	}
}

// init --from-log: the grid spans the keys' observed peaks per window (from
// the profile that inspect prints), and the spec replays the log.
func TestInitFromLog(t *testing.T) {
	log := "../../configs/examples/logs/antlr_org_20030902/access.log.gz"
	dir := t.TempDir()
	spec := filepath.Join(dir, "sub", "antlr.yaml") // init makes sub/
	code, out, stderr := runCLI(t, "init", "--from-log", log, "--out", spec)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "wrote "+spec) {
		t.Errorf("stdout: %q", out)
	}
	s, err := sweep.LoadSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(log)
	if got, _ := filepath.Abs(s.Traffic.Log); got != abs {
		t.Errorf("log resolves to %s, want %s", got, abs)
	}
	tr, err := ingest.Load(context.Background(), log, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := tr.Profile(1, initWindowS).LegitKeysW
	if q.N == 0 || q.Max <= q.P50 {
		t.Fatalf("profile: %+v", q)
	}
	for _, en := range s.Entries {
		for _, ax := range en.Axes {
			lo, hi := ax.Values[0], ax.Values[len(ax.Values)-1]
			switch ax.Param {
			case "limit":
				if lo != float64(q.P50) || hi < float64(q.Max) {
					t.Errorf("%s limits %g..%g do not span the keys' peaks p50 %d .. max %d", en.Algorithm, lo, hi, q.Max, q.P50)
				}
			case "window_s":
				if lo != initWindowS {
					t.Errorf("%s window %g", en.Algorithm, lo)
				}
			case "rate":
				if lo > float64(q.P50)/initWindowS*1.05 || hi < float64(q.P99)/initWindowS {
					t.Errorf("token rates %g..%g do not span p50 %d .. p99 %d per %d s", lo, hi, q.P50, q.P99, initWindowS)
				}
			}
		}
	}
	run := filepath.Join(dir, "run")
	if code, _, stderr := runCLI(t, "run", spec, "--out", run, "-q"); code != 0 {
		t.Fatalf("run of the generated spec: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "init", "--from-log", filepath.Join(dir, "missing.log")); code != exitUsage || !strings.Contains(stderr, "missing.log") {
		t.Errorf("missing log: exit %d, %s", code, stderr)
	}
}

// init --format names the log's format (as inspect's --format): the spec
// says it, a wrong one fails on the log's lines, and formats that need
// columns are refused with a pointer.
func TestInitFromLogFormat(t *testing.T) {
	log := "../../configs/examples/logs/antlr_org_20030902/access.log.gz"
	code, out, stderr := runCLI(t, "init", "--from-log", log, "--format", "combined")
	if code != 0 || !strings.Contains(out, "format: combined") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	if code, _, stderr := runCLI(t, "init", "--from-log", log, "--format", "w3c"); code != exitUsage || stderr == "" {
		t.Errorf("a wrong format: exit %d, %q", code, stderr)
	}
	for _, args := range [][]string{
		{"init", "--from-log", log, "--format", "csv"},
		{"init", "--from-log", log, "--format", "bogus"},
		{"init", "--format", "combined"},
	} {
		if code, _, stderr := runCLI(t, args...); code != exitUsage || !strings.Contains(stderr, "--format") {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
}
