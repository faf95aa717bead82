package examples

import (
	"fmt"
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

// workflow is the GitHub Actions example: its env and its steps.
type workflow struct {
	On   map[string]any    `yaml:"on"`
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Steps []struct {
			Name  string `yaml:"name"`
			Uses  string `yaml:"uses"`
			Run   string `yaml:"run"`
			Shell string `yaml:"shell"`
			If    string `yaml:"if"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func readWorkflow(t *testing.T) workflow {
	t.Helper()
	data, err := os.ReadFile("github-actions/ratesweep-check.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	return wf
}

// The GitHub Actions example is for a user's repository: it installs a
// released ratesweep with go install (cached), never builds this one, and
// posts check --format markdown as the job summary without losing its exit
// code.
func TestGitHubActionsWorkflowShape(t *testing.T) {
	wf := readWorkflow(t)
	if _, ok := wf.On["pull_request"]; !ok {
		t.Errorf("the workflow does not run on pull requests: %v", wf.On)
	}
	var uses, runs []string
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			uses = append(uses, st.Uses)
			runs = append(runs, st.Run)
			if strings.Contains(st.Run, "| tee") && st.Shell != "bash" {
				t.Errorf("%q needs shell: bash (pipefail) to keep the check's exit code", st.Run)
			}
		}
	}
	all := strings.Join(uses, "\n") + "\n" + strings.Join(runs, "\n")
	for _, want := range []string{"actions/checkout@", "actions/setup-go@", "actions/cache@",
		"go install \"github.com/ratesweep/ratesweep/cmd/ratesweep@$RATESWEEP_VERSION\"",
		"check --baseline \"$RATESWEEP_BASELINE\" out/ci --format markdown | tee -a \"$GITHUB_STEP_SUMMARY\""} {
		if !strings.Contains(all, want) {
			t.Errorf("the workflow has no %q", want)
		}
	}
	for _, bad := range []string{"make ", "bin/ratesweep", "configs/"} {
		if strings.Contains(all, bad) {
			t.Errorf("the workflow uses %q, which only a clone of ratesweep has", bad)
		}
	}
}

// The workflow works in a repository that is not ratesweep: a scratch
// directory gets a spec from ratesweep init and a baseline from the README's
// commands; then the workflow's own run steps (all but the install, which
// needs the network: the binary under test is on PATH instead) run under
// bash as Actions runs them. They pass on the unchanged spec, post the
// summary, and fail once the spec's grid moves.
func TestGitHubActionsInScratchRepo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ratesweep")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "ratesweep"), "../cmd/ratesweep").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	repo := t.TempDir()
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	sh := func(script string, extra ...string) (string, error) {
		c := exec.Command(bash, "-eo", "pipefail", "-c", script)
		c.Dir, c.Env = repo, append(env, extra...)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := sh("ratesweep init --out ratesweep.yaml --quiet"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	baseline := readmeBlock(t, "## Continuous integration")
	for _, c := range baseline {
		if strings.Contains(c, "check --update") || strings.Contains(c, "ratesweep run") {
			if out, err := sh(strings.ReplaceAll(c, "access.yaml", "ratesweep.yaml")); err != nil {
				t.Fatalf("%s: %v\n%s", c, err, out)
			}
		}
	}
	wf := readWorkflow(t)
	vars := []string{"GITHUB_STEP_SUMMARY=" + filepath.Join(repo, "summary.md")}
	for k, v := range wf.Env {
		vars = append(vars, k+"="+v)
	}
	steps := func() error {
		for _, job := range wf.Jobs {
			for _, st := range job.Steps {
				if st.Run == "" || st.If != "" || strings.Contains(st.Run, "go install") {
					continue
				}
				if out, err := sh(st.Run, vars...); err != nil {
					return fmt.Errorf("step %q: %v\n%s", st.Name, err, out)
				}
			}
		}
		return nil
	}
	if err := steps(); err != nil {
		t.Fatalf("unchanged spec: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "summary.md")); len(b) == 0 {
		t.Error("no job summary written")
	}
	spec, _ := os.ReadFile(filepath.Join(repo, "ratesweep.yaml"))
	moved := regexp.MustCompile(`segments: \[\[0, (\d+), (\d+)\]\]`).ReplaceAllString(string(spec), "segments: [[0, $1, 90]]")
	if moved == string(spec) {
		t.Fatalf("cannot change the starter spec's traffic:\n%s", spec)
	}
	os.WriteFile(filepath.Join(repo, "ratesweep.yaml"), []byte(moved), 0o644)
	if err := steps(); err == nil {
		t.Error("the workflow passed after the spec's traffic changed")
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
	readme, _ := os.ReadFile("../docs/clusters.md")
	const cmd = "docker build --build-arg COMMIT=$(git rev-parse HEAD) -f examples/k8s/Dockerfile -t ratesweep ."
	if !strings.Contains(string(df), cmd) || !strings.Contains(string(readme), cmd) {
		t.Errorf("docs/clusters.md and examples/k8s/Dockerfile should both give: %s", cmd)
	}
}
