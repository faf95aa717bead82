package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// runCLI runs one command line in-process and returns exit code, stdout, stderr.
func runCLI(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{ctx: context.Background(), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := run(e, args)
	return code, out.String(), errb.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test ./cmd/ratesweep -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestTablesGolden(t *testing.T) {
	code, out, stderr := runCLI(t, "tables")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "tables.txt", out)
	// The same figures from the explicit scenario file.
	code, out2, stderr := runCLI(t, "tables", "../../configs/lesson.yaml")
	if code != 0 || out2 != out {
		t.Fatalf("tables configs/lesson.yaml: exit %d, stderr %s, same output %v", code, stderr, out2 == out)
	}
}

// Every figure of the lesson must appear in the printed tables, row by row.
func TestTablesPrintSpecFigures(t *testing.T) {
	_, out, _ := runCLI(t, "tables")
	rows := [][]string{
		{"field app, shift start", "legit", "1720", "360", "640", "0", "–"},
		{"billing-period batch query", "legit", "1080", "45", "240", "0", "–"},
		{"page-crawling scraper", "abusive", "7800", "4800", "4800", "3910", "none"},
		{"login attempt sequence", "abusive", "2160", "240", "960", "0", "code"},
		{"fixed window 60 s", "5040", "7620", "405", "9.4"},
		{"sliding window 60 s", "5760", "6900", "880", "20.5"},
		{"token bucket 10/s", "3910", "8750", "0", "0.0"},
		{"800", "480", "4360", "8300", "1600"},
		{"1240", "0", "1600", "11060", "2160"},
		{"200", "1020", "5190", "7470", "1580"},
		{"600", "220", "4210", "8450", "2160"},
		{"fixed window 60 s", "0", "240", "4800", "95.2"},
		{"sliding window 60 s", "0", "960", "4800", "83.3"},
		{"token bucket 10/s", "0", "0", "3910", "100.0"},
		{"480", "300", "1120", "26.0"},
		{"360", "900", "1360", "31.6"},
	}
	lines := strings.Split(out, "\n")
	for _, want := range rows {
		found := false
		for _, l := range lines {
			if strings.Join(strings.Fields(strings.NewReplacer(",", " ").Replace(l)), " ") ==
				strings.Join(strings.Fields(strings.NewReplacer(",", " ").Replace(strings.Join(want, " "))), " ") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no line reads %q", strings.Join(want, " | "))
		}
	}
}

func TestBadInputExit2(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"tables", write("empty.yaml", "")}, "empty.yaml: empty file"},
		{[]string{"tables", dir}, "is a directory"},
		{[]string{"tables", filepath.Join(dir, "nope.yaml")}, "nope.yaml: no such file"},
		{[]string{"tables", write("bad.yaml", "name: x\nduration_s: 10\nclients:\n  - name: a\n    class: evil\n    segments: [[0, 1, 1]]\n")},
			"bad.yaml:5: clients[0].class: must be legit or abusive"},
		{[]string{"tables", "a", "b"}, "too many arguments"},
		{[]string{"tables", "--nope"}, "unknown flag"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"recomend"}, `unknown command "recomend"; did you mean "recommend"?`},
		{[]string{"my.yaml"}, "to run a spec: ratesweep run my.yaml"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, stderr)
		}
		if !strings.Contains(stderr, c.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: stderr %q, want %q and no panic", c.args, stderr, c.want)
		}
	}
}
