package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// setCell rewrites the points parts of dir with column col of row row of
// the first part set to val (a value as arrow's builders parse it: "99999",
// "-Inf"), and brings the manifest's hashes up to date (rehash) unless
// stale.
func setCell(t *testing.T, dir, col string, row int, val string, stale bool) {
	t.Helper()
	first := filepath.Join(dir, "points", "part-000000.parquet")
	rewriteParquet(t, first, func(s *arrow.Schema, cols []arrow.Array) (*arrow.Schema, []arrow.Array) {
		i := s.FieldIndices(col)[0]
		out := slices.Clone(cols)
		b := array.NewBuilder(memory.DefaultAllocator, cols[i].DataType())
		defer b.Release()
		for r := range cols[i].Len() {
			var err error
			switch {
			case r == row:
				err = b.AppendValueFromString(val)
			case cols[i].IsNull(r):
				b.AppendNull()
			default:
				err = b.AppendValueFromString(cols[i].ValueStr(r))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		out[i] = b.NewArray()
		return s, out
	})
	if !stale {
		rehash(t, dir)
	}
}

// readersOf are the commands that read a run directory, with the run dir
// placed where each expects it (check: as the run and as the baseline;
// check --update: into a new baseline, which must not appear).
func readersOf(t *testing.T, base, dir string) [][]string {
	return [][]string{
		{"report", dir},
		{"recommend", dir, "--max-false-cut", "1%"},
		{"export", "--to", "nginx", "--run", dir, "fixed_window window_s=30 limit=100"},
		{"check", "--baseline", base, dir},
		{"check", "--baseline", dir, base},
		{"check", "--baseline", filepath.Join(t.TempDir(), "new-baseline"), dir, "--update"},
		{"check", "--baseline", copyRun(t, base), dir, "--update"},
	}
}

// expectRefused runs every command and wants exit 2 with want on stderr,
// one short line naming what was refused, and no baseline written.
func expectRefused(t *testing.T, name, want string, cmds [][]string) {
	t.Helper()
	for _, args := range cmds {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, want) || strings.Contains(stderr, "goroutine") ||
			strings.Contains(stderr+stdout, "json: unsupported") || strings.Contains(stdout, "Inf%") {
			t.Errorf("%s: %v: exit %d, want 2 with %q\nstdout: %.300s\nstderr: %s", name, args, code, want, stdout, stderr)
		}
		if slices.Contains(args, "--update") {
			if _, err := os.Stat(filepath.Join(args[2], "points")); err == nil && strings.HasSuffix(args[2], "new-baseline") {
				t.Errorf("%s: check --update wrote the baseline %s", name, args[2])
			}
		}
	}
}

// A row whose policy is not the one its footer's spec gives its point_id
// (row 0 says limit 99999, the spec 100) is refused by every reader and by
// merge, the manifest's hash brought up to date or left stale. recommend picked it,
// export --run called it exact and check --update made it the baseline.
func TestReadersRefuseForgedPolicy(t *testing.T) {
	base := sweepRun(t, "forged", lessonScenario(t), "", checkGrid)
	forged := copyRun(t, base)
	setCell(t, forged, "limit", 0, "99999", false)
	expectRefused(t, "forged limit", "point_id 0 has limit = 99999, but the spec in its metadata says 100", append(readersOf(t, base, forged), []string{"merge", forged}))
	expectRefused(t, "forged limit, --allow-incomplete", "point_id 0 has limit = 99999", [][]string{
		{"report", forged, "--allow-incomplete"},
		{"recommend", forged, "--max-false-cut", "1%", "--allow-incomplete"},
		{"check", "--baseline", base, forged, "--allow-incomplete"},
	})

	stale := copyRun(t, base)
	setCell(t, stale, "limit", 0, "99999", true)
	expectRefused(t, "forged limit, stale manifest", "points/part-000000.parquet", readersOf(t, base, stale))
	code, _, stderr := runCLI(t, "report", stale)
	if code != exitUsage || !strings.Contains(stderr, "manifest.json says") {
		t.Errorf("stale manifest: exit %d, %s", code, stderr)
	}

	algo := copyRun(t, base)
	setCell(t, algo, "algorithm", 0, "token_bucket", false)
	expectRefused(t, "forged algorithm", "column algorithm is token_bucket, but the spec in its metadata says fixed_window", readersOf(t, base, algo))
}

// Values ratesweep never writes are refused by every reader, named by
// file, point_id and column: -Inf made recommend print "-Inf%" and report
// fail with "json: unsupported value: -Inf"; a negative count made
// recommend show a caught share of 789889%.
func TestReadersRefuseImpossibleMetrics(t *testing.T) {
	base := sweepRun(t, "metrics", lessonScenario(t), "", checkGrid)
	for _, c := range []struct{ col, val, want string }{
		{"legit_cut_pct", "-Inf", "legit_cut_pct is -Inf"},
		{"missed_pct", "+Inf", "missed_pct is +Inf"},
		{"missed_pct", "150", "missed_pct is 150, outside 0 to 100"},
		{"caught", "-789", "caught is -789, below 0"},
		{"false_cut", "-1", "false_cut is -1, below 0"},
		{"offered_legit", "-5", "offered_legit is -5, below 0"},
	} {
		dir := copyRun(t, base)
		setCell(t, dir, c.col, 3, c.val, false)
		cmds := append(readersOf(t, base, dir), []string{"merge", dir})
		if !slices.Contains([]string{"caught", "false_cut", "offered_legit"}, c.col) {
			cmds = slices.DeleteFunc(cmds, func(a []string) bool { return a[0] == "report" }) // report reads counts, not shares
		}
		expectRefused(t, c.col+"="+c.val, "part-000000.parquet: point_id 3: "+c.want, cmds)
		expectRefused(t, c.col+"="+c.val+", --allow-incomplete", c.want, [][]string{
			{"recommend", dir, "--max-false-cut", "1%", "--allow-incomplete"},
			{"check", "--baseline", base, dir, "--allow-incomplete"},
		})
	}
	// NaN in a column readers other than recommend read.
	nan := copyRun(t, base)
	setCell(t, nan, "only_here_pct", 3, "NaN", false)
	expectRefused(t, "only_here_pct=NaN", "point_id 3: only_here_pct is NaN", [][]string{
		{"export", "--to", "nginx", "--run", nan, "fixed_window window_s=30 limit=100"},
		{"check", "--baseline", base, nan},
		{"check", "--baseline", filepath.Join(t.TempDir(), "new-baseline"), nan, "--update"},
	})
	// report reads the delays: +Inf is not a number for its JSON.
	dir := copyRun(t, base)
	setCell(t, dir, "mean_delay_s", 3, "+Inf", false)
	expectRefused(t, "mean_delay_s=+Inf", "point_id 3: mean_delay_s is +Inf", [][]string{{"report", dir}, {"report", dir, "--allow-incomplete"}})
}

// A manifest.json with impossible counts, or listing a part twice, is
// refused by every reader, check --update included (it accepted row counts
// of 1e18 or -1, and failed on a part listed twice with "file exists").
func TestReadersRefuseImpossibleManifests(t *testing.T) {
	base := sweepRun(t, "manifest", lessonScenario(t), "", checkGrid)
	edit := func(fn func(m map[string]any)) string {
		dir := copyRun(t, base)
		path := filepath.Join(dir, "manifest.json")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		fn(m)
		if data, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "manifest.json", string(data))
		return dir
	}
	part := func(m map[string]any, k int) map[string]any { return m["parts"].([]any)[k].(map[string]any) }
	for _, c := range []struct {
		name string
		fn   func(m map[string]any)
		want string
	}{
		{"rows -1", func(m map[string]any) { m["rows"] = -1 }, "manifest.json: rows is -1, below 0"},
		{"rows 1e18", func(m map[string]any) { m["rows"] = int64(1e18) }, "manifest.json says 1000000000000000000"},
		{"part rows -1", func(m map[string]any) { part(m, 0)["points"].(map[string]any)["rows"] = -1 }, "parts[0].points.rows is -1, below 0"},
		{"part rows 1e18", func(m map[string]any) { part(m, 0)["points"].(map[string]any)["rows"] = int64(1e18) }, "manifest.json says 1000000000000000000"},
		{"clients rows 1e18", func(m map[string]any) { part(m, 0)["clients"].(map[string]any)["rows"] = int64(1e18) }, "manifest.json says 1000000000000000000"},
		{"part twice", func(m map[string]any) { m["parts"] = append(m["parts"].([]any), part(m, 0)) }, "lists \"points/part-000000.parquet\" twice (parts[0] and parts[1])"},
		{"not JSON", nil, "manifest.json: not a manifest"},
	} {
		var dir string
		if c.fn != nil {
			dir = edit(c.fn)
		} else {
			dir = copyRun(t, base)
			writeFile(t, dir, "manifest.json", "{")
		}
		expectRefused(t, c.name, c.want, readersOf(t, base, dir))
	}
}

// withTimeout runs a command in-process and fails the test, instead of
// hanging it, when the command has not ended within d.
func withTimeout(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := runCLI(t, args...)
		done <- result{code, stdout, stderr}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(d):
		t.Fatalf("%v: still running after %v (blocked on a named pipe?)", args, d)
		return 0, "", ""
	}
}

// A named pipe in a run directory, as a part or as manifest.json, is
// refused at once with exit 2 by every reader and merge; run --resume
// refuses a named manifest.json and recomputes a part that is one (as it
// does a damaged part). Each blocked for ever before.
func TestNamedPipeInRunRefused(t *testing.T) {
	base := sweepRun(t, "fifo", lessonScenario(t), "", checkGrid)
	for _, name := range []string{"manifest.json", "points/part-000000.parquet", "clients/part-000000.parquet"} {
		dir := copyRun(t, base)
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := mkfifo(path); err != nil {
			t.Skipf("no named pipe here: %v", err)
		}
		cmds := append(readersOf(t, base, dir),
			[]string{"merge", dir},
			[]string{"run", filepath.Join(dir, "spec.yaml"), "--out", dir, "--resume", "--quiet"})
		if name == "clients/part-000000.parquet" {
			cmds = slices.DeleteFunc(cmds, func(a []string) bool { return a[0] == "check" && !slices.Contains(a, "--update") })
		}
		for _, args := range cmds {
			code, _, stderr := withTimeout(t, 20*time.Second, args...)
			if args[0] == "run" && name != "manifest.json" {
				if st, err := os.Lstat(path); code != 0 || err != nil || !st.Mode().IsRegular() {
					t.Errorf("%s a named pipe: run --resume: exit %d (%v), want 0 and the part recomputed; stderr: %s", name, code, err, stderr)
				}
				continue
			}
			if code != exitUsage || !strings.Contains(stderr, "is not a regular file (a named pipe)") || strings.Count(strings.TrimSpace(stderr), "\n") > 2 {
				t.Errorf("%s a named pipe: %v: exit %d, want 2 naming it; stderr: %s", name, args, code, stderr)
			}
		}
	}
}

// Errors quote at most a short excerpt of hostile input: a manifest naming
// a 40 KB part with terminal escapes.
func TestErrorsQuoteShortExcerpts(t *testing.T) {
	base := sweepRun(t, "excerpt", lessonScenario(t), "", checkGrid)
	dir := copyRun(t, base)
	m, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("\x1b[31mA", 8000) + ".parquet"
	q, _ := json.Marshal(long)
	writeFile(t, dir, "manifest.json", strings.Replace(string(m), `"file": "part-000000.parquet"`, `"file": `+string(q), 1))
	for _, args := range readersOf(t, base, dir) {
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || len(stderr) > 1000 || strings.Contains(stderr, "\x1b") {
			t.Errorf("%v: exit %d, stderr (%d bytes) %.300q; want exit 2 and a short, escaped excerpt", args, code, len(stderr), stderr)
		}
	}
	// Flags' values.
	huge := strings.Repeat("\x1b[2J%", 6000)
	for _, args := range [][]string{
		{"recommend", base, "--max-false-cut", huge},
		{"recommend", base, "--max-false-cut", "1%", "--format", huge},
		{"recommend", base, "--max-false-cut", "1%", "--max-legit-delay-p99", huge},
		{"check", "--baseline", base, base, "--format", huge},
		{"check", "--baseline", base, base, "--tol-abs", huge + "=1"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || len(stderr) > 1000 || strings.Contains(stderr, "\x1b") {
			t.Errorf("%.60v: exit %d, stderr (%d bytes) %.300q; want exit 2 and a short, escaped excerpt", args, code, len(stderr), stderr)
		}
	}
}
