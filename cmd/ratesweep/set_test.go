package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// --set overrides fields of every type, the run records the effective values
// in spec.yaml, and they decode exactly as if the file said them.
func TestRunSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runCLI(t, "run", "../../configs/lesson-sweep.yaml", "--out", dir, "--quiet",
		"--set", "name=lesson-set",
		"--set", "seed=7",
		"--set", "sweep[1].limit={from: 500, to: 700, step: 100}",
		"--set", "sweep[2].capacity=[300, 900]",
		"--set", "scenario.arrivals=poisson",
		"--set", "scenario.clients[0].segments[0]=[0, 120, 30]",
		"--set", "sweep[3]={algorithm: gcra, rate: 5, capacity: [10, 20]}")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rec, err := os.ReadFile(filepath.Join(dir, "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`name: "lesson-set"`, "seed: 7", "limit: {from: 500, to: 700, step: 100}",
		"capacity: [300, 900]", "arrivals: poisson", "segments: [[0, 120, 30]", "algorithm: gcra"} {
		if !strings.Contains(string(rec), want) {
			t.Errorf("spec.yaml lacks %q:\n%s", want, rec)
		}
	}
	// The recorded spec is the identity: loading it gives the same spec.
	got, err := sweep.LoadSpec(filepath.Join(dir, "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got.YAML()) != string(rec) {
		t.Errorf("spec.yaml does not round-trip:\n%s\n---\n%s", got.YAML(), rec)
	}
	if got.Seed != 7 || got.Points() != 1+3+2+2 || got.Scenario.Clients[0].Segments[0].Rate != 30 {
		t.Errorf("overrides not applied: seed %d, %d points, %+v", got.Seed, got.Points(), got.Scenario.Clients[0].Segments)
	}
}

// Bad overrides are bad input (exit 2), all reported at once, each naming
// its --set: wrong types, unknown fields (with a suggestion), indexes out of
// range, a path through a scalar, no "=".
func TestRunSetErrors(t *testing.T) {
	code, _, stderr := runCLI(t, "run", "../../configs/lesson-sweep.yaml", "--dry-run",
		"--set", "seed=abc",
		"--set", "replicates=[1, 2]",
		"--set", "sweep[0].limt=5",
		"--set", "sweep[9].limit=1",
		"--set", "seed.x=1",
		"--set", "colour=red",
		"--set", "sweep[1].window_s=-60",
		"--set", "noequals")
	if code != exitUsage {
		t.Fatalf("exit %d, want 2: %s", code, stderr)
	}
	for _, want := range []string{
		`ratesweep: --set seed=abc: seed: expected a number, got "abc"`,
		`ratesweep: --set replicates=[1, 2]: replicates: expected a number, got a list`,
		`ratesweep: --set sweep[0].limt=5: sweep[0].limt: unknown field; did you mean "limit"?`,
		`ratesweep: --set sweep[9].limit=1: sweep has 3 entries, no [9] (the next one, [3], appends)`,
		`ratesweep: --set seed.x=1: seed is not a mapping`,
		`ratesweep: --set colour=red: colour: unknown field`,
		`ratesweep: --set sweep[1].window_s=-60: sweep[1].window_s: must be > 0`,
		`ratesweep: --set noequals: expected PATH=VALUE`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// "-" reads the spec from standard input; relative names in it are taken
// from the working directory.
func TestRunSpecFromStdin(t *testing.T) {
	spec := "name: piped\nscenario: ../../configs/lesson.yaml\nsweep:\n  - {algorithm: token_bucket, rate: 10, capacity: [200, 400]}\n"
	var out, errb bytes.Buffer
	e := &env{ctx: context.Background(), stdout: &out, stderr: &errb, stdin: strings.NewReader(spec),
		getenv: func(string) string { return "" }}
	if code := run(e, []string{"run", "-", "--dry-run", "--set", "sweep[0].capacity=[1, 2, 3]"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "spec        piped") || !strings.Contains(out.String(), "token_bucket: 3 points") {
		t.Errorf("dry run of the piped spec:\n%s", out.String())
	}
	e.stdin, errb = strings.NewReader("name: piped\nsweep: 1\n"), bytes.Buffer{}
	e.stderr = &errb
	if code := run(e, []string{"run", "-", "--dry-run"}); code != exitUsage || !strings.Contains(errb.String(), "<stdin>:2: sweep: expected a list") {
		t.Errorf("bad piped spec: exit %d, %s", code, errb.String())
	}
}

// An interrupted run with --set names its overrides in the resume command
// (without them the spec differs and resume refuses), and that command works.
func TestResumeHintKeepsSets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "../../configs/lesson-sweep.yaml", "--out", dir, "-q", "--set", "seed=3", "--set", "sweep[1].limit=[100, 200]"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	e := &env{ctx: ctx, stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	if code := run(e, args); code != 130 {
		t.Fatalf("exit %d, want 130: %s", code, errb.String())
	}
	_, hint, ok := strings.Cut(errb.String(), "resume with: ratesweep ")
	if !ok || !strings.Contains(hint, `--set seed=3 --set 'sweep[1].limit=[100, 200]' --resume`) {
		t.Fatalf("resume hint: %s", errb.String())
	}
	// The hint's words, unquoted as a shell would.
	words := strings.Fields(strings.ReplaceAll(strings.TrimSpace(hint), "'sweep[1].limit=[100, 200]'", "SET"))
	for i, w := range words {
		if w == "SET" {
			words[i] = "sweep[1].limit=[100, 200]"
		}
		if u, err := strconv.Unquote(w); err == nil {
			words[i] = u
		}
	}
	if code, _, stderr := runCLI(t, words...); code != 0 {
		t.Fatalf("the hinted resume %v: exit %d: %s", words, code, stderr)
	}
}
