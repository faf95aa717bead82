package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's example of a spec's errors is what ratesweep prints for such
// a spec ("..." in the README stands for any text).
func TestREADMEErrorExample(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "with the name meant for a misspelt field or algorithm:\n\n```text\n")
	if !ok {
		t.Fatal("README.md: the error example is gone")
	}
	block, _, _ := strings.Cut(after, "```")
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(`name: demo
seeds: 1
replicates: 1
scenario: {name: s, duration_s: 60, clients: [{name: a, class: legit, segments: [[0, 60, 4]]}]}
sweep:
  - algorithm: sliding_windw
    window_s: [60]
  - algorithm: sliding_window
    window_s: [60]
    limit: [10, -1]
`), 0o644)
	code, _, stderr := runCLI(t, "run", spec, "--dry-run", "--set", "seed=abc")
	if code != exitUsage {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := strings.ReplaceAll(stderr, spec, "spec.yaml")
	var pattern strings.Builder // the README's lines, in its order
	for _, want := range strings.Split(strings.TrimSpace(block), "\n") {
		pattern.WriteString("^" + strings.ReplaceAll(regexp.QuoteMeta(want), `\.\.\.`, ".*") + "\n")
	}
	if !regexp.MustCompile("(?m)" + pattern.String()).MatchString(got) {
		t.Errorf("README shows:\n%s\nratesweep prints:\n%s", block, got)
	}
}
