package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

const reportSpec = `name: tiny
scenario:
  name: tiny scenario
  duration_s: 60
  clients:
    - {name: user, class: legit, segments: [[0, 10, 2], [10, 20, 30], [20, 60, 2]]}
    - {name: bot, class: abusive, stage: none, segments: [[0, 60, 9]]}
sweep:
  - algorithm: sliding_window
    window_s: [10, 60]
    limit: {from: 50, to: 600, step: 50}
  - algorithm: token_bucket
    rate: [5, 10]
    capacity: [100, 900]
`

// tinyRun runs reportSpec (with name) into a fresh directory via the CLI.
func tinyRun(t *testing.T, name string) string {
	t.Helper()
	tmp := t.TempDir()
	spec := filepath.Join(tmp, "spec.yaml")
	if err := os.WriteFile(spec, []byte(strings.Replace(reportSpec, "name: tiny\n", "name: "+name+"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	if code, _, stderr := runCLI(t, "run", spec, "--out", dir, "--quiet", "--workers", "1"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	return dir
}

// A run without its manifest is refused (exit 1, naming the missing parts)
// unless --allow-incomplete, which warns and marks the page.
func TestReportIncompleteRun(t *testing.T) {
	dir := tinyRun(t, "tiny")
	if err := os.Remove(filepath.Join(dir, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "clients", "part-000000.parquet")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "report", dir)
	if code != 1 || !strings.Contains(stderr, "no manifest.json") || !strings.Contains(stderr, "clients/part-000000.parquet") {
		t.Fatalf("exit %d, stderr %q: want 1 naming the manifest and the missing part", code, stderr)
	}
	code, _, stderr = runCLI(t, "report", dir, "--allow-incomplete", "-q", "--target", "missed<=5%", "--target", "missed <= 60")
	if code != 0 || !strings.Contains(stderr, "INCOMPLETE RUN") {
		t.Fatalf("--allow-incomplete: exit %d, stderr %q", code, stderr)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"INCOMPLETE RUN", "| 5% | best of all", "| 60% | best of all"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(string(md), "| 25% |") {
		t.Error("report.md has the default targets though --target was given")
	}
}

// A finished run with a part deleted exits 1 naming the command that
// recomputes it; --allow-incomplete draws what is there.
func TestReportDeletedPart(t *testing.T) {
	dir := tinyRun(t, "tiny")
	if err := os.Remove(filepath.Join(dir, "clients", "part-000000.parquet")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "report", dir)
	resume := "ratesweep run " + filepath.Join(dir, "spec.yaml") + " --out " + dir + " --resume"
	if code != 1 || !strings.Contains(stderr, "clients/part-000000.parquet") || !strings.Contains(stderr, resume) {
		t.Fatalf("exit %d, stderr %q: want 1 naming the part and %q", code, stderr, resume)
	}
	code, _, stderr = runCLI(t, "report", dir, "--allow-incomplete", "-q")
	if code != 0 || !strings.Contains(stderr, "INCOMPLETE RUN") {
		t.Fatalf("--allow-incomplete: exit %d, stderr %q", code, stderr)
	}
}

func TestReportCommand(t *testing.T) {
	dir := tinyRun(t, "tiny")
	code, stdout, stderr := runCLI(t, "report", dir, "--knees", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page := filepath.Join(dir, "report", "index.html")
	if !strings.Contains(stdout, page) {
		t.Errorf("stdout does not say where the page is:\n%s", stdout)
	}
	for _, f := range []string{"index.html", "report.md", "tradeoff.png", "tradeoff.svg", "frontier.csv"} {
		if _, err := os.Stat(filepath.Join(dir, "report", f)); err != nil {
			t.Error(err)
		}
	}
	out := filepath.Join(t.TempDir(), "elsewhere")
	if code, _, stderr := runCLI(t, "report", dir, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("--out: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err != nil {
		t.Error(err)
	}
}

// writeParquet writes a one-column Parquet file with optional key-value metadata.
func writeParquet(t *testing.T, path string, kv map[string]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "point_id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{0, 1, 2}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	for k, v := range kv {
		if err := w.AppendKeyValueMetadata(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReportBadInputExit2(t *testing.T) {
	run := tinyRun(t, "tiny")
	spec, err := os.ReadFile(filepath.Join(run, "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	points := filepath.Join(run, "points", "part-000000.parquet")
	data, err := os.ReadFile(points)
	if err != nil {
		t.Fatal(err)
	}

	empty := t.TempDir()

	foreign := t.TempDir()
	writeParquet(t, filepath.Join(foreign, "points", "part-000000.parquet"), nil)

	missing := t.TempDir()
	writeParquet(t, filepath.Join(missing, "points", "part-000000.parquet"), map[string]string{"ratesweep.spec": string(spec)})

	truncated := t.TempDir()
	if err := os.MkdirAll(filepath.Join(truncated, "points"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(truncated, "points", "part-000000.parquet"), data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}

	// Parts of two different runs in one directory.
	other := tinyRun(t, "other")
	mixed := t.TempDir()
	for i, src := range []string{points, filepath.Join(other, "points", "part-000000.parquet")} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(mixed, "points"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mixed, "points", []string{"part-000000.parquet", "part-000001.parquet"}[i]), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"report", empty}, "no Parquet files under points/"},
		{[]string{"report", filepath.Join(empty, "nope")}, "no such file"},
		{[]string{"report", foreign}, "part-000000.parquet: no ratesweep.spec metadata"},
		{[]string{"report", missing, "--allow-incomplete"}, `part-000000.parquet: no column "algorithm"`},
		{[]string{"report", mixed}, "part-000001.parquet: its ratesweep.spec differs"},
		{[]string{"report", run, "extra"}, "too many arguments"},
		{[]string{"report", run, "--curves", "0"}, "--curves must be >= 1"},
		{[]string{"report", run, "--target", "cut<=5%"}, "want missed<=N%"},
		{[]string{"report", run, "--target", "missed<=150%"}, "from 0 to 100"},
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
	// A damaged part is a failed job, not bad usage: exit 1, naming it.
	if code, _, stderr := runCLI(t, "report", truncated); code != 1 || !strings.Contains(stderr, "part-000000.parquet is damaged") || !strings.Contains(stderr, "--resume") {
		t.Errorf("report on a truncated part: exit %d, stderr %q; want 1 and the part named damaged", code, stderr)
	}
}
