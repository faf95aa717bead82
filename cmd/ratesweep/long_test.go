//go:build long

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A build from a clone (make build) names its commit in --version and in the
// version every file records; a clean clone is not "dirty".
func TestVersionNamesCommitOfClone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary in a fresh clone")
	}
	for _, tool := range []string{"git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	root, _ := filepath.Abs("../..")
	if out, err := exec.Command("git", "-C", root, "rev-parse", "--git-dir").CombinedOutput(); err != nil {
		t.Skipf("not a git checkout: %s", out)
	}
	clone := filepath.Join(t.TempDir(), "ratesweep")
	if out, err := exec.Command("git", "clone", "--quiet", "--no-hardlinks", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "-C", clone, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(head))
	build := exec.Command("make", "--no-print-directory", "build")
	build.Dir = clone
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build in the clone: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(clone, "bin", "ratesweep"), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	want := regexp.MustCompile(`(?m)^ratesweep \S+\+` + commit[:12] + `\ncommit +` + commit + `\n`)
	if !want.Match(out) {
		t.Errorf("--version of a clean clone at %s:\n%s", commit, out)
	}
	// The files of a run record that version.
	runDir := filepath.Join(t.TempDir(), "run")
	if out, err := exec.Command(filepath.Join(clone, "bin", "ratesweep"), "run", filepath.Join(clone, "configs", "lesson-sweep.yaml"),
		"--out", runDir, "-q").CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	var m struct {
		Version string `json:"version"`
	}
	if b, err := os.ReadFile(filepath.Join(runDir, "manifest.json")); err != nil || json.Unmarshal(b, &m) != nil || !strings.HasSuffix(m.Version, "+"+commit[:12]) {
		t.Errorf("manifest.json of the clone's run records version %q, want ...+%s (%v)", m.Version, commit[:12], err)
	}
	// The same text from the version command.
	out2, _ := exec.Command(filepath.Join(clone, "bin", "ratesweep"), "version").CombinedOutput()
	if string(out2) != string(out) {
		t.Errorf("version and --version differ:\n%s\n%s", out2, out)
	}
}
