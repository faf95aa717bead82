package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
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

// fence is one fenced code block of a Markdown file.
type fence struct {
	lang, text string
	line       int
}

var fenceOpen = regexp.MustCompile("^\\s*```(\\w*)\\s*$")

// fences returns the fenced code blocks of text, indented ones included.
func fences(text string) []fence {
	var out []fence
	var cur *fence
	var body []string
	for i, l := range strings.Split(text, "\n") {
		switch {
		case cur == nil:
			if m := fenceOpen.FindStringSubmatch(l); m != nil {
				cur, body = &fence{lang: m[1], line: i + 1}, nil
			}
		case strings.TrimSpace(l) == "```":
			cur.text = strings.Join(body, "\n")
			out = append(out, *cur)
			cur = nil
		default:
			body = append(body, strings.TrimSpace(l))
		}
	}
	return out
}

// Every code block of the README runs: its sh blocks line by line under
// bash in a scratch directory holding an access log, with the ratesweep
// under test on PATH (make targets must exist in the Makefile; go install
// must name this module's command; the release archive's lines run when
// RATESWEEP_DIST_DIR holds `make dist`'s output); SQL under the duckdb CLI
// and Python under python3 when they and their libraries are installed
// (else the Python is compiled); the text block is TestREADMEErrorExample's.
func TestREADMECodeBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ratesweep and runs the README's sweeps")
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "ratesweep"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	log, err := os.ReadFile("../../configs/examples/logs/elastic_apache_logs/apache_logs.gz")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "access.log.gz"), log, 0o644)
	release, _, _ := strings.Cut(sweep.Version, "+")
	archive := "ratesweep-" + release + "-linux-amd64.tar.gz"
	distDir := os.Getenv("RATESWEEP_DIST_DIR")
	if distDir != "" {
		for _, f := range []string{archive, "SHA256SUMS"} {
			if data, err := os.ReadFile(filepath.Join(distDir, f)); err == nil {
				os.WriteFile(filepath.Join(dir, f), data, 0o644)
			}
		}
	}
	sh := func(line string) (string, error) {
		c := exec.Command("bash", "-eo", "pipefail", "-c", line)
		c.Dir = dir
		c.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := c.CombinedOutput()
		return string(out), err
	}
	ran := 0
	for _, f := range fences(string(b)) {
		switch f.lang {
		case "sh":
			for _, line := range strings.Split(f.text, "\n") {
				line = strings.TrimSpace(line)
				cmd, _, _ := strings.Cut(line, " #")
				fields := strings.Fields(cmd)
				switch {
				case len(fields) == 0 || strings.HasPrefix(line, "#"):
				case fields[0] == "make":
					if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(fields[1]) + `:`).Match(mk) {
						t.Errorf("README.md:%d: make %s: no such target in the Makefile", f.line, fields[1])
					}
				case fields[0] == "go" && fields[1] == "install":
					if want := "github.com/ratesweep/ratesweep/cmd/ratesweep@latest"; fields[2] != want {
						t.Errorf("README.md:%d: go install %s, want %s", f.line, fields[2], want)
					}
				case strings.Contains(cmd, "SHA256SUMS") || strings.Contains(cmd, "-linux-amd64"):
					if !strings.Contains(cmd, "ratesweep-"+release+"-linux-amd64") && !strings.Contains(cmd, "SHA256SUMS") {
						t.Errorf("README.md:%d: %q does not name the release archive %s", f.line, cmd, archive)
					}
					if distDir == "" {
						continue
					}
					fallthrough
				default:
					out, err := sh(cmd)
					if err != nil && !(fields[0] == "ratesweep" && fields[1] == "check" && !strings.Contains(cmd, "--update")) {
						t.Errorf("README.md:%d: %s: %v\n%s", f.line, cmd, err, out)
					}
					ran++
				}
			}
		case "sql":
			duckdb, err := exec.LookPath("duckdb")
			if err != nil {
				t.Logf("README.md:%d: SQL not run: no duckdb CLI", f.line)
				continue
			}
			c := exec.Command(duckdb, "-c", f.text)
			c.Dir = dir
			if out, err := c.CombinedOutput(); err != nil {
				t.Errorf("README.md:%d: duckdb: %v\n%s", f.line, err, out)
			}
		case "python":
			py := filepath.Join(dir, "readme.py")
			os.WriteFile(py, []byte(f.text+"\n"), 0o644)
			args := []string{"-m", "py_compile", py}
			if exec.Command("python3", "-c", "import pyarrow, pandas, polars").Run() == nil {
				args = []string{py}
			} else {
				t.Logf("README.md:%d: Python compiled, not run: pyarrow, pandas or polars missing", f.line)
			}
			c := exec.Command("python3", args...)
			c.Dir = dir
			if out, err := c.CombinedOutput(); err != nil {
				t.Errorf("README.md:%d: python3: %v\n%s", f.line, err, out)
			}
		}
	}
	if ran < 8 {
		t.Errorf("only %d README commands ran", ran)
	}
}
