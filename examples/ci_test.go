package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// readmeBlock returns the commands of the first ```sh block after heading.
func readmeBlock(t *testing.T, heading string) []string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatalf("README.md %s: no ```sh block", heading)
	}
	block, _, _ = strings.Cut(block, "```")
	var cmds []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// The GitHub Actions example runs exactly the README's CI commands, and
// they are the Makefile's check (what this repository's own CI runs).
func TestGitHubActionsWorkflowIsTheREADMEs(t *testing.T) {
	data, err := os.ReadFile("github-actions/ratesweep-check.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			Steps []struct {
				Uses  string `yaml:"uses"`
				Run   string `yaml:"run"`
				Shell string `yaml:"shell"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	if _, ok := wf.On["pull_request"]; !ok {
		t.Errorf("the workflow does not run on pull requests: %v", wf.On)
	}
	var cmds []string
	checkout := false
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			checkout = checkout || strings.HasPrefix(st.Uses, "actions/checkout@")
			for _, l := range strings.Split(strings.TrimSpace(st.Run), "\n") {
				if l != "" {
					cmds = append(cmds, l)
				}
				if strings.Contains(l, "| tee") && st.Shell != "bash" {
					t.Errorf("%q needs shell: bash (pipefail) to keep the check's exit code", l)
				}
			}
		}
	}
	if !checkout {
		t.Error("the workflow does not check out the repository")
	}
	readme := readmeBlock(t, "## Continuous integration")
	if strings.Join(cmds, "\n") != strings.Join(readme, "\n") {
		t.Errorf("workflow commands:\n  %s\nREADME's:\n  %s", strings.Join(cmds, "\n  "), strings.Join(readme, "\n  "))
	}
	var summary bool
	for _, c := range cmds {
		summary = summary || strings.Contains(c, "check --baseline") && strings.Contains(c, "--format markdown") && strings.Contains(c, `"$GITHUB_STEP_SUMMARY"`)
	}
	if !summary {
		t.Error("no step posts check --format markdown as the job summary")
	}
	// The same sweep and check as `make check`.
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, target, _ := strings.Cut(string(mk), "\ncheck: build\n")
	target, _, _ = strings.Cut(target, "\n\n")
	out := regexp.MustCompile(`(?m)^CHECK_OUT \?= (\S+)`).FindStringSubmatch(string(mk))
	if out == nil {
		t.Fatal("Makefile: no CHECK_OUT")
	}
	for _, l := range strings.Split(strings.TrimSpace(target), "\n") {
		l = strings.NewReplacer("./$(BIN)", "bin/ratesweep", "$(CHECK_OUT)", out[1]).Replace(strings.TrimSpace(l))
		found := false
		for _, c := range cmds {
			found = found || strings.HasPrefix(c, l)
		}
		if !found {
			t.Errorf("make check runs %q; the workflow does not", l)
		}
	}
}

// dockerIgnored reports whether .dockerignore patterns exclude path (slash
// separated, relative to the context): Docker's rules, the last matching
// pattern decides, "!" re-includes, a matching directory excludes its files.
func dockerIgnored(patterns []string, path string) bool {
	ignored := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/")
		re := regexp.MustCompile("^" + strings.NewReplacer(`\*\*/`, "(.*/)?", `\*\*`, ".*", `\*`, "[^/]*", `\?`, "[^/]").Replace(regexp.QuoteMeta(p)) + "(/.*)?$")
		if re.MatchString(path) {
			ignored = !neg
		}
	}
	return ignored
}

// .dockerignore keeps run outputs, node_modules, binaries and git history
// out of the image's build context, and keeps every file the build needs.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	for _, p := range []string{"out/default/points/part-000000.parquet", "out/.gitkeep", "scripts/duckdb/node_modules/x/index.js",
		"node_modules/a.js", ".git/HEAD", "bin/ratesweep", "ratesweep", "cmd/ratesweep/ratesweep.test", "cpu.prof"} {
		if !dockerIgnored(patterns, p) {
			t.Errorf("%s is sent to the docker build", p)
		}
	}
	// Everything `go build ./cmd/ratesweep` reads: the module files and the
	// Go and embedded files of every package of this module it imports.
	out, err := exec.Command("go", "list", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{.Dir}}|{{join .GoFiles ","}}|{{join .EmbedFiles ","}}{{end}}{{end}}`, "../cmd/ratesweep").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, _ := filepath.Abs("..")
	need := []string{"go.mod", "go.sum", "examples/k8s/Dockerfile"}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(l, "|")
		if len(parts) != 3 {
			continue
		}
		rel, _ := filepath.Rel(root, parts[0])
		for _, f := range strings.Split(parts[1]+","+parts[2], ",") {
			if f != "" {
				need = append(need, filepath.ToSlash(filepath.Join(rel, f)))
			}
		}
	}
	if len(need) < 30 {
		t.Fatalf("only %d files found for the build: %v", len(need), need)
	}
	for _, f := range need {
		if dockerIgnored(patterns, f) {
			t.Errorf("%s is needed by go build but .dockerignore excludes it", f)
		}
	}
}

// The documented docker build is the Dockerfile's own.
func TestDockerBuildDocumented(t *testing.T) {
	df, _ := os.ReadFile("k8s/Dockerfile")
	readme, _ := os.ReadFile("../README.md")
	const cmd = "docker build --build-arg COMMIT=$(git rev-parse HEAD) -f examples/k8s/Dockerfile -t ratesweep ."
	if !strings.Contains(string(df), cmd) || !strings.Contains(string(readme), cmd) {
		t.Errorf("README.md and examples/k8s/Dockerfile should both give: %s", cmd)
	}
}
