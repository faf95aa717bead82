package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInspectGolden(t *testing.T) {
	code, out, stderr := runCLI(t, "inspect", "--spec", "../../configs/examples/antlr-org.yaml", "--top", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "inspect-antlr.txt", out)
	// The README's figures: requests, clients, peak req/s of the whole log.
	for _, c := range []struct{ log, want string }{
		{"nasa_ksc_19950801/nasa_19950801.tsv.gz", "30,969 requests|keys        2,365|peak 17 "},
		{"antlr_org_20030902/access.log.gz", "7,502 requests|keys        431|peak 23 "},
		{"elastic_apache_logs/apache_logs.gz", "10,000 requests|keys        1,753|peak 9 "},
	} {
		code, out, stderr := runCLI(t, "inspect", "../../configs/examples/logs/"+c.log, "--top", "0")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.log, code, stderr)
		}
		for _, w := range strings.Split(c.want, "|") {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in\n%s", c.log, w, out)
			}
		}
	}
}

func TestInspectMalformedAndBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := `1.2.3.4 - - [02/Sep/2003:00:00:09 -0700] "GET / HTTP/1.1" 200 1 "-" "ua"` + "\n"
	log := write("mixed.log", ok+"oops\n"+ok+strings.Repeat("x", 70000)+"\n"+ok)
	code, out, stderr := runCLI(t, "inspect", log)
	if code != 0 || !strings.Contains(out, "3 requests, 2 malformed") || !strings.Contains(out, "line 2: ") ||
		!strings.Contains(out, "line 4: line of 70001 bytes exceeds the limit of 65536 bytes") {
		t.Errorf("exit %d, stdout:\n%s\nstderr: %s", code, out, stderr)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"inspect", log, "--strict"}, "mixed.log:2: missing identity field: «oops» (--strict)"},
		{[]string{"inspect", write("empty.log", "")}, "empty.log: no requests in the log"},
		{[]string{"inspect", filepath.Join(dir, "nope.log")}, "nope.log: no such file"},
		{[]string{"inspect", write("junk.log", "\x00\x01\x02\n")}, "junk.log: line 1: cannot detect the log format"},
		{[]string{"inspect", log, "--format", "w3x"}, "--format: unknown log format"},
		{[]string{"inspect", log, "--key", "cookie"}, `--key: unknown key field "cookie"`},
		{[]string{"inspect", log, "--csv-time", "t"}, "--csv-* flags need --format csv, parquet, jsonl or a JSON preset"},
		{[]string{"inspect", log, "--format", "csv"}, "needs --csv-time"},
		{[]string{"inspect", "--spec", "../../configs/examples/antlr-org.yaml", "--key", "user"}, "--key conflicts with --spec"},
		{[]string{"inspect", "--spec", write("spec.yaml", "name: x\n")}, "spec.yaml:1: no traffic: section"},
		{[]string{"inspect"}, "give a LOG or --spec"},
		{[]string{"inspect", log, "--window", "0"}, "--window"},
		{[]string{"inspect", log, "--rules", write("r.yaml", "rules:\n  - {name: a, stage: bad, method: GET}\n")}, "r.yaml:2: rules[0].stage: must be design, code or none"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// --scenario-out writes a fluid scenario that a plain spec can sweep today.
func TestInspectScenarioOutRuns(t *testing.T) {
	dir := t.TempDir()
	scn := filepath.Join(dir, "antlr.yaml")
	code, _, stderr := runCLI(t, "inspect", "--spec", "../../configs/examples/antlr-org.yaml", "--top", "0", "--scenario-out", scn)
	if code != 0 || !strings.Contains(stderr, "431 clients over 41253 s") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte("name: antlr\nscenario: antlr.yaml\nsweep:\n  - algorithm: sliding_window\n    window_s: 60\n    limit: [30, 500]\n"), 0o644)
	code, _, stderr = runCLI(t, "run", spec, "--out", filepath.Join(dir, "run"), "--quiet")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	// elastic spans 83 h over 1,753 keys: too dense for a fluid scenario.
	code, _, stderr = runCLI(t, "inspect", "../../configs/examples/logs/elastic_apache_logs/apache_logs.gz", "--scenario-out", scn)
	if code != 2 || !strings.Contains(stderr, "use event simulation") {
		t.Errorf("elastic: exit %d: %s", code, stderr)
	}
}
