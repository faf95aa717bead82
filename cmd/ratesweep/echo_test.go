package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The printed resume command is one shell word per argument: pasted into sh
// it runs nothing of what a path contains.
func TestShellQuote(t *testing.T) {
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	for _, s := range []string{
		"out/default", "configs/bench.yaml", "$(touch " + pwned + ")", "`touch " + pwned + "`",
		"out; touch " + pwned, "it's here", "a b\tc\nd", "", "--out", "*", "~",
	} {
		cmd := exec.Command("sh", "-c", `printf '%s' `+shellQuote(s))
		got, err := cmd.Output()
		if err != nil || string(got) != s {
			t.Errorf("%q: sh read %q (%v)", s, got, err)
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("a quoted argument ran a command")
	}
}

// An error repeats at most an excerpt of the input: a scenario path that
// names another file does not print the file.
func TestErrorsEchoExcerpts(t *testing.T) {
	dir := t.TempDir()
	secret := writeFile(t, dir, "secret.txt", "root:x:0:0:root:/root:/bin/bash\n"+strings.Repeat("daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n", 40))
	spec := writeFile(t, dir, "spec.yaml", "name: x\nscenario: "+secret+"\nsweep: [{algorithm: fixed_window, window_s: 60, limit: 10}]\n")
	code, _, stderr := runCLI(t, "run", spec, "--dry-run")
	if code != 2 || strings.Contains(stderr, "daemon") || strings.Contains(stderr, "root:") || len(stderr) > 400 || !strings.Contains(stderr, "foreign file?") {
		t.Errorf("exit %d, stderr (%d bytes) %q", code, len(stderr), stderr)
	}
}

// Control characters in client names (or log keys) reach stdout escaped.
func TestStdoutEscapesControlCharacters(t *testing.T) {
	var b bytes.Buffer
	w := escapeWriter{&b}
	w.Write([]byte("client \x1b]0;pwned\x07 \x1b[2J \u009b31m ok\tcol\nnext \xff ü\n"))
	want := `client \x1b]0;pwned\x07 \x1b[2J \u009b31m ok` + "\tcol\nnext " + `\xff` + " ü\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
	dir := t.TempDir()
	scn := writeFile(t, dir, "s.yaml", "name: \"evil \\e]0;title\\a\"\nduration_s: 60\nclients:\n  - name: \"evil \\e[2J\"\n    class: legit\n    segments: [[0, 60, 1]]\n")
	code, stdout, stderr := runCLI(t, "tables", scn)
	if strings.ContainsAny(stdout, "\x1b\x07") || (code == 0 && !strings.Contains(stdout, `\x1b`)) {
		t.Errorf("tables: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// A regular file as --out is bad usage naming the flag.
func TestOutIsAFile(t *testing.T) {
	f := writeFile(t, t.TempDir(), "file", "x")
	code, _, stderr := runCLI(t, "run", "../../configs/lesson-sweep.yaml", "--out", f)
	if code != 2 || !strings.Contains(stderr, "--out "+f+" is a file") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// inspect shows log keys with their control characters escaped.
func TestInspectEscapesKeys(t *testing.T) {
	log := writeFile(t, t.TempDir(), "access.log",
		"evil\x1b]0;title\x07 - - [01/Jul/1995:00:00:01 -0400] \"GET / HTTP/1.0\" 200 100\n"+
			"good - - [01/Jul/1995:00:00:02 -0400] \"GET / HTTP/1.0\" 200 100\n")
	code, stdout, stderr := runCLI(t, "inspect", log)
	if code != 0 || strings.ContainsAny(stdout, "\x1b\x07") || !strings.Contains(stdout, `evil\x1b]0;title\x07`) {
		t.Errorf("exit %d\nstdout %q\nstderr %s", code, stdout, stderr)
	}
}

// Notes on stderr quote input (here a file name) with its control
// characters escaped, as stdout does.
func TestStderrEscapesInput(t *testing.T) {
	dir := t.TempDir()
	log := writeFile(t, dir, "access.log", "a - - [01/Jul/1995:00:00:01 -0400] \"GET / HTTP/1.0\" 200 100\n")
	out := filepath.Join(dir, "s\x1b]0;title\x07.yaml")
	code, _, stderr := runCLI(t, "inspect", log, "--scenario-out", out)
	if code != 0 || strings.ContainsAny(stderr, "\x1b\x07") || !strings.Contains(stderr, `s\x1b]0;title\x07.yaml`) {
		t.Errorf("inspect: exit %d\nstderr %q", code, stderr)
	}
}

// A JSON export prints the document alone on stdout (JSON has no comments):
// the header and notes go to stderr.
func TestExportJSONAloneOnStdout(t *testing.T) {
	for _, c := range [][]string{
		{"aws-waf", "aws_waf_rate window_s=60 limit=100"},
		{"cloudflare", "cloudflare_rule period_s=60 requests_per_period=100 mitigation_timeout_s=600 counts=all"},
		{"aws-waf", "token_bucket rate=2 capacity=10"},
	} {
		code, stdout, stderr := runCLI(t, "export", "--to", c[0], c[1])
		var doc map[string]any
		if code != 0 || json.Unmarshal([]byte(stdout), &doc) != nil || len(doc) == 0 || !strings.Contains(stderr, "ratesweep export --to "+c[0]) {
			t.Errorf("export --to %s %q: exit %d\nstdout %q\nstderr %q", c[0], c[1], code, stdout, stderr)
		}
	}
}
