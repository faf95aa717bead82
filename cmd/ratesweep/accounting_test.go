package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// Issue 16: a log with 4 malformed lines out of 7 no longer runs silently.
// Over --max-malformed (default 1%) it is exit 2 naming the first bad lines;
// under it, stderr, manifest.json and the Parquet metadata carry the counts.
func TestRunAccountsForEveryLine(t *testing.T) {
	dir := t.TempDir()
	log := `1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1
garbage one
1.1.1.1 - - [01/Jan/2026:00:00:01 +0000] "GET / HTTP/1.1" 200 1
2.2.2.2 - - [01/Jan/2026:00:00:02 +0000] "GET / HTTP/1.1" 20 1
garbage two

2.2.2.2 - - [01/Jan/2026:00:00:03 +0000] "GET / HTTP/1.1" 200 1
2.2.2.2 - - [01/Jan/2026:00:00:03 +0000] "GET / HTTP/1.1" 200
`
	if err := os.WriteFile(filepath.Join(dir, "access.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := "name: acct\ntraffic:\n  log: access.log\n  format: clf\nsweep:\n  - algorithm: fixed_window\n    window_s: 1\n    limit: [1, 2]\n"
	specPath := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	code, _, stderr := runCLI(t, "run", specPath, "--out", out)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
	}
	for _, w := range []string{"4 of 7 lines are malformed, more than --max-malformed 1% allows", "line 2: missing user field", "line 4: status is not 100..999", "line 8: missing bytes"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
		t.Error("a refused run wrote a manifest")
	}
	for _, limit := range []string{"4", "60%"} {
		code, _, stderr = runCLI(t, "run", specPath, "--out", out, "--force", "--max-malformed", limit)
		if code != 0 {
			t.Fatalf("--max-malformed %s: exit %d:\n%s", limit, code, stderr)
		}
		if !strings.Contains(stderr, "8 lines read: 3 used, 4 malformed, 0 filtered (headers, directives), 1 blank") ||
			!strings.Contains(stderr, "malformed: 2 × missing user field") {
			t.Errorf("stderr:\n%s", stderr)
		}
	}
	if code, _, stderr = runCLI(t, "run", specPath, "--out", out, "--force", "--max-malformed", "3"); code != 2 {
		t.Errorf("--max-malformed 3: exit %d\n%s", code, stderr)
	}
	if code, _, _ = runCLI(t, "run", specPath, "--out", out, "--force", "--max-malformed", "x%"); code != 2 {
		t.Errorf("--max-malformed x%%: exit %d", code)
	}
	code, _, _ = runCLI(t, "run", specPath, "--out", out, "--force", "--max-malformed", "100%")
	if code != 0 {
		t.Fatal(code)
	}
	data, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m sweep.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Log == nil || m.Log.Lines != 8 || m.Log.Used != 3 || m.Log.Malformed != 4 || m.Log.Blank != 1 ||
		m.Log.ByReason["missing user field"] != 2 || len(m.Log.FirstBad) != 4 || m.Log.FirstBad[0].Line != 2 {
		t.Errorf("manifest log: %+v", m.Log)
	}
	parts, _ := filepath.Glob(filepath.Join(out, "points", "*.parquet"))
	if len(parts) == 0 {
		t.Fatal("no parts")
	}
	md, err := sweep.FileMetadata(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Lines, Used, Malformed int64
	}
	if err := json.Unmarshal([]byte(md[sweep.MetaLog]), &meta); err != nil || meta.Lines != 8 || meta.Used != 3 || meta.Malformed != 4 {
		t.Errorf("Parquet metadata %s = %q (%v)", sweep.MetaLog, md[sweep.MetaLog], err)
	}
}
