package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/internal/runfs"
	"github.com/ratesweep/ratesweep/sweep"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// The adversarial tests (make test-adversarial): what ratesweep deletes,
// locks and writes stays inside the run directory the user named.

// TestAdversarialHelper is not a test: run as a second process by the tests
// below (RATESWEEP_ADV_HELPER=hold DIR: hold DIR's lock until stdin closes;
// =cli ARGS as JSON: be the ratesweep command).
func TestAdversarialHelper(t *testing.T) {
	mode, arg, ok := strings.Cut(os.Getenv("RATESWEEP_ADV_HELPER"), " ")
	if !ok {
		t.Skip("helper process only")
	}
	switch mode {
	case "hold":
		l, err := runfs.Acquire(arg, false)
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		bufio.NewReader(os.Stdin).ReadString('\n')
		l.Release()
		os.Exit(0)
	case "cli":
		var args []string
		json.Unmarshal([]byte(arg), &args)
		e := &env{ctx: context.Background(), stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
		os.Exit(run(e, args))
	}
}

func helperCmd(t *testing.T, mode, arg string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAdversarialHelper$")
	cmd.Env = append(os.Environ(), "RATESWEEP_ADV_HELPER="+mode+" "+arg)
	return cmd
}

// holdLock starts a second process holding dir's lock; the func ends it.
func holdLock(t *testing.T, dir string) func() {
	t.Helper()
	cmd := helperCmd(t, "hold", dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "locked\n" {
		t.Fatalf("lock holder: %q", line)
	}
	return func() { stdin.Close(); cmd.Wait() }
}

// snapshot is every entry below dir with its type and content hash, but
// not the entries skip names (relative paths).
func snapshot(t *testing.T, dir string, skip ...string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		for _, s := range skip {
			if rel == s {
				return fs.SkipDir
			}
		}
		b.WriteString(rel + " " + d.Type().String())
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			h := sha256.Sum256(data)
			b.WriteString(" " + hex.EncodeToString(h[:8]))
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			b.WriteString(" -> " + target)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

const smallGrid = `sweep:
  - algorithm: sliding_window
    window_s: [60]
    limit: [200, 600, 1000]
`

// A project directory: run --force refuses it, names what is not
// ratesweep's, and every file survives.
func TestAdversarialForceProjectDir(t *testing.T) {
	root := t.TempDir()
	project := filepath.Join(root, "project")
	files := map[string]string{
		"spec.yaml":            "name: q3\nscenario: " + lessonScenario(t) + "\n" + smallGrid,
		"report/q3.md":         "# Q3 figures\n",
		"points/mydata.csv":    "a,b\n1,2\n",
		"manifest-backup.json": `{"parts": []}`,
		"notes.txt":            "mine",
	}
	for rel, data := range files {
		os.MkdirAll(filepath.Join(project, filepath.Dir(rel)), 0o755)
		writeFile(t, filepath.Join(project, filepath.Dir(rel)), filepath.Base(rel), data)
	}
	before := snapshot(t, root)
	spec := filepath.Join(project, "spec.yaml")
	code, _, stderr := runCLI(t, "run", spec, "--out", project, "--force", "--quiet")
	if code != 2 {
		t.Fatalf("run --force into a project directory: exit %d, want 2: %s", code, stderr)
	}
	for _, name := range []string{"q3.md", "mydata.csv", "manifest-backup.json", "notes.txt"} {
		if !strings.Contains(stderr, name) {
			t.Errorf("stderr does not name %s: %s", name, stderr)
		}
	}
	if after := snapshot(t, root); after != before {
		t.Errorf("the project directory changed:\n%s\nwant\n%s", after, before)
	}
}

// While another process holds a run directory, every writer fails at once
// with exit 2 and leaves the directory as it was.
func TestAdversarialSecondWriter(t *testing.T) {
	run := sweepRun(t, "locked", lessonScenario(t), "", smallGrid)
	spec := filepath.Join(filepath.Dir(run), "spec.yaml")
	other := writeFile(t, t.TempDir(), "other.yaml", "name: other\nscenario: "+lessonScenario(t)+"\n"+smallGrid)
	base := sweepRun(t, "locked", lessonScenario(t), "", smallGrid)
	stop := holdLock(t, run)
	defer stop()
	before := snapshot(t, filepath.Dir(run))
	for _, args := range [][]string{
		{"run", spec, "--out", run, "--quiet"},
		{"run", other, "--out", run, "--force", "--quiet"},
		{"run", spec, "--out", run, "--resume", "--quiet"},
		{"merge", run, "--quiet"},
		{"report", run, "--quiet"},
		{"check", "--update", "--baseline", run, base},
		{"check", "--update", "--baseline", base, run},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "in use by another ratesweep process") {
			t.Errorf("%v while locked: exit %d, %s", args, code, stderr)
		}
	}
	if after := snapshot(t, filepath.Dir(run)); after != before {
		t.Errorf("the locked run changed:\n%s\nwant\n%s", after, before)
	}
	stop()
	if code, _, stderr := runCLI(t, "report", run, "--quiet"); code != 0 {
		t.Errorf("report once the lock is free: exit %d, %s", code, stderr)
	}
}

// Two ratesweep processes: a second run --force into a live run's
// directory is refused, and the first completes with every file its
// manifest lists.
func TestAdversarialLiveRun(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, dir, "spec.yaml", "name: live\nscenario: "+lessonScenario(t)+"\nreplicates: 3\nsweep:\n  - algorithm: sliding_window\n    window_s: [30, 60]\n    limit: {from: 100, to: 3000, step: 1}\n")
	other := writeFile(t, dir, "other.yaml", "name: other\nscenario: "+lessonScenario(t)+"\n"+smallGrid)
	out := filepath.Join(dir, "run")
	args, _ := json.Marshal([]string{"run", spec, "--out", out, "--workers", "1", "--quiet"})
	first := helperCmd(t, "cli", string(args))
	var stderr strings.Builder
	first.Stderr = &stderr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	// The first run holds the lock once the lock file names its pid (it
	// writes it after taking the lock; the file alone may exist before).
	lock := filepath.Join(out, runfs.LockName)
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(lock); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(first.Process.Pid) {
			break
		}
		if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
			break // it finished first: no overlap to test (logged below)
		}
		if time.Since(start) > time.Minute {
			first.Process.Kill()
			t.Fatal("the first run never took its lock")
		}
	}
	code, _, msg := runCLI(t, "run", other, "--out", out, "--force", "--quiet")
	_, err := os.Lstat(lock)
	live := err == nil // the first still ran when the second finished
	if err := first.Wait(); err != nil {
		t.Fatalf("the first run: %v: %s", err, stderr.String())
	}
	if live && (code != 2 || !strings.Contains(msg, "in use")) {
		t.Errorf("second run --force into a live run: exit %d, %s", code, msg)
	}
	if !live {
		t.Log("the first run finished before the second tried: no overlap to test")
	}
	var m sweep.Manifest
	if data, err := os.ReadFile(filepath.Join(out, "manifest.json")); err != nil || json.Unmarshal(data, &m) != nil || len(m.Parts) == 0 {
		t.Fatalf("the first run's manifest: %v", err)
	}
	for _, p := range m.Parts {
		for _, f := range []string{filepath.Join(out, "points", p.Points.Name), filepath.Join(out, "clients", p.Clients.Name)} {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("the first run's manifest lists a missing file: %v", err)
			}
		}
	}
	if _, err := os.Lstat(lock); err == nil {
		t.Error("the lock file outlived the run")
	}
}

// report never writes through a link: a report/ that points elsewhere is
// refused, and a link in report/ is replaced, its target untouched.
func TestAdversarialReportLinks(t *testing.T) {
	run := sweepRun(t, "links", lessonScenario(t), "", smallGrid)
	elsewhere := t.TempDir()
	writeFile(t, elsewhere, "index.html", "precious")
	before := snapshot(t, elsewhere)
	if err := os.Symlink(elsewhere, filepath.Join(run, "report")); err != nil {
		t.Skip(err)
	}
	code, _, stderr := runCLI(t, "report", run, "--quiet")
	if code != 2 || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("report through a report/ link: exit %d, %s", code, stderr)
	}
	os.Remove(filepath.Join(run, "report"))
	os.Mkdir(filepath.Join(run, "report"), 0o755)
	os.Symlink(filepath.Join(elsewhere, "index.html"), filepath.Join(run, "report", "index.html"))
	os.Symlink(filepath.Join(elsewhere, "index.html"), filepath.Join(run, "report", "report.md"))
	if code, _, stderr := runCLI(t, "report", run, "--quiet"); code != 0 {
		t.Fatalf("report: exit %d, %s", code, stderr)
	}
	if after := snapshot(t, elsewhere); after != before {
		t.Errorf("report wrote through a link:\n%s\nwant\n%s", after, before)
	}
	for _, name := range []string{"index.html", "report.md"} {
		if st, err := os.Lstat(filepath.Join(run, "report", name)); err != nil || !st.Mode().IsRegular() {
			t.Errorf("report/%s: %v, want a regular file", name, err)
		}
	}
}

// injectionSpec names a spec, its scenario and clients with hostile
// injections: a backtick before markup, an image with onerror, a script,
// terminal escapes and a right-to-left override.
const injectionSpec = `name: "q3` + "`" + `<h1>owned <img src=x onerror=alert(1)> \u202Eevil"
scenario:
  name: "scn ` + "`" + `<h1>x"
  duration_s: 60
  clients:
    - name: "Mozilla/5.0 ` + "`" + `<img src=x onerror=alert(1)>` + "`" + ` \e]0;t\a \u202Egnp.exe"
      class: legit
      segments: [[0, 60, 5]]
    - name: "bot <script>alert(1)</script> \e[2J"
      class: abusive
      stage: code
      segments: [[10, 40, 30]]
sweep:
  - algorithm: fixed_window
    window_s: [10]
    limit: {from: 10, to: 200, step: 10}
`

// No output carries the injected markup or a raw control or bidi character:
// stdout, report.md, index.html, the SVG figures, frontier.csv.
func TestAdversarialOutputsEscaped(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, dir, "spec.yaml", injectionSpec)
	out := filepath.Join(dir, "run \u202Eevil") // printed by run and report
	code, stdout, stderr := runCLI(t, "run", spec, "--out", out)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	outputs := map[string]string{"run stdout": stdout}
	if code, stdout, stderr = runCLI(t, "report", out); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	outputs["report stdout"] = stdout
	for _, args := range [][]string{{"tables", spec}, {"recommend", out}, {"recommend", out, "--format", "markdown"}, {"check", "--baseline", out, out, "--format", "markdown"}} {
		_, stdout, _ := runCLI(t, args...)
		outputs[strings.Join(args[:1], " ")+" "+strings.Join(args[2:], " ")] = stdout
	}
	files, _ := filepath.Glob(filepath.Join(out, "report", "*"))
	for _, f := range files {
		if filepath.Ext(f) == ".png" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		outputs[filepath.Base(f)] = string(data)
	}
	if _, ok := outputs["index.html"]; !ok {
		t.Fatalf("no index.html among %v", files)
	}
	for name, s := range outputs {
		if i := strings.IndexAny(s, "\x1b\x07\u202E"); i >= 0 {
			t.Errorf("%s: raw control or bidi character at %d: %q", name, i, s[max(0, i-40):min(len(s), i+40)])
		}
		if name == "tables " || strings.HasSuffix(name, "stdout") || name == "recommend " {
			continue // plain text for a terminal: markup is inert there
		}
		if strings.HasSuffix(name, "markdown") || strings.HasSuffix(name, ".md") {
			var html bytes.Buffer // as GitHub renders it
			if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert([]byte(s), &html); err != nil {
				t.Fatal(err)
			}
			s = html.String()
		}
		for _, bad := range []string{"<img src=x", "<h1>owned", "<h1>x", "<script>alert"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s carries %q", name, bad)
			}
		}
	}
}

// A file a spec names that is no scenario (a credential, /etc/shadow, a
// Parquet file) is refused without quoting it; so is such a file as the spec.
func TestAdversarialForeignFilesNotEchoed(t *testing.T) {
	dir := t.TempDir()
	foreign := map[string]string{
		"git-credentials": "https://user:ghp_SECRETTOKEN0123456789@github.com\n",
		"shadow":          "root:$6$SECRETHASH:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n",
		"config.yaml":     "password: SECRETVALUE\nuser: admin\n",
		"list.yaml":       "- SECRETITEM\n",
		"binary.bin":      "PAR1\x15\x04\x15\x80\x01SECRETBYTES\x00\x00",
	}
	for name, body := range foreign {
		path := writeFile(t, dir, name, body)
		spec := writeFile(t, dir, name+".spec.yaml", "name: x\nscenario: "+path+"\n"+smallGrid)
		for _, args := range [][]string{{"run", spec, "--dry-run"}, {"run", path, "--dry-run"}, {"tables", path}} {
			code, _, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, "binary or foreign file?") || strings.Contains(stderr, "SECRET") || strings.Contains(stderr, "daemon") {
				t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
			}
		}
	}
}

// Negative counts are bad usage (exit 2), never a silent default.
func TestAdversarialNegativeCounts(t *testing.T) {
	spec := writeFile(t, t.TempDir(), "spec.yaml", "name: x\nscenario: "+lessonScenario(t)+"\n"+smallGrid)
	for _, args := range [][]string{
		{"run", spec, "--dry-run", "--max-points", "-5"},
		{"run", spec, "--dry-run", "--max-points", "0"},
		{"run", spec, "--dry-run", "--workers", "-1"},
		{"run", spec, "--dry-run", "--shards", "-2"},
		{"report", "--curves", "-1"},
		{"report", "--knees", "-1"},
		{"check", "--baseline", "a", "b", "--max-rows", "-1"},
		{"merge", "x", "--shards", "-1"},
		{"recommend", "x", "--max-false-cut", "1%", "--cliff", "-1"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "--") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming the flag", args, code, stderr)
		}
	}
}

// An error quoting a name escapes its control and bidi characters too.
func TestAdversarialErrorsEscaped(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no\x1b]0;title\x07such \u202Efile.yaml")
	code, _, stderr := runCLI(t, "run", missing, "--dry-run")
	if code != 2 || strings.ContainsAny(stderr, "\x1b\x07\u202E") || !strings.Contains(stderr, `\x1b]0;title\x07`) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// run --force again over a run with its report (what `make run` does twice)
// succeeds: every file report writes is one run --force knows as its own,
// the every-algorithm trade-off plot included.
func TestForceAfterReport(t *testing.T) {
	out := sweepRun(t, "again", lessonScenario(t), "", checkGrid+`  - algorithm: gcra
    rate: [5, 10]
    capacity: [200, 900]
`)
	if code, _, stderr := runCLI(t, "report", out, "--quiet"); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	names, err := os.ReadDir(filepath.Join(out, "report"))
	if err != nil {
		t.Fatal(err)
	}
	all := false
	for _, n := range names {
		all = all || strings.HasPrefix(n.Name(), "tradeoff-all.")
		ok := false
		for _, g := range sweep.ReportGlobs {
			if m, _ := filepath.Match(g, n.Name()); m {
				ok = true
			}
		}
		if !ok {
			t.Errorf("report wrote %s, which sweep.ReportGlobs does not name", n.Name())
		}
	}
	if !all {
		t.Errorf("no tradeoff-all plot in %v", names)
	}
	spec := filepath.Join(filepath.Dir(out), "spec.yaml")
	if code, _, stderr := runCLI(t, "run", spec, "--out", out, "--force", "--quiet"); code != 0 {
		t.Errorf("run --force over a reported run: exit %d: %s", code, stderr)
	}
}
