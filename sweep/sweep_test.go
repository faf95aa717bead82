package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

func mustSpec(t testing.TB, name string) *Spec {
	t.Helper()
	s, err := LoadSpec("embedded:" + name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustRun(t testing.TB, s *Spec, opts Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func readManifest(t testing.TB, path string) Manifest {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// fileHashes maps part file names to their sha256 from a manifest.
func fileHashes(m Manifest) map[string]string {
	out := map[string]string{}
	for _, p := range m.Parts {
		out["points/"+p.Points.Name] = p.Points.SHA256
		out["clients/"+p.Clients.Name] = p.Clients.SHA256
	}
	return out
}

// Every figure of the lesson, read back from the Parquet files of a sweep.
func TestLessonFiguresFromParquet(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, mustSpec(t, "lesson-sweep.yaml"), Options{OutDir: dir})
	rows, err := ReadPoints(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]PointRow{}
	for _, r := range rows {
		byKey[r.Key()] = r
	}
	r1 := func(x float64) float64 { return math.Round(x*10) / 10 }
	type fig struct {
		key                      string
		caught, missed, falseCut int64
		legitPct                 float64
		design, code, none       int64
		onlyHere                 float64
	}
	for _, f := range []fig{
		{"fixed_window window_s=60 limit=600", 5040, 7620, 405, 9.4, 0, 240, 4800, 95.2},
		{"sliding_window window_s=60 limit=600", 5760, 6900, 880, 20.5, 0, 960, 4800, 83.3},
		{"token_bucket rate=10 capacity=900", 3910, 8750, 0, 0.0, 0, 0, 3910, 100.0},
	} {
		r, ok := byKey[f.key]
		if !ok {
			t.Fatalf("no row %q", f.key)
		}
		if r.Caught != f.caught || r.Missed != f.missed || r.FalseCut != f.falseCut || r1(r.LegitCutPct) != f.legitPct ||
			r.CutDesign != f.design || r.CutCode != f.code || r.CutNone != f.none || r1(r.OnlyHerePct) != f.onlyHere {
			t.Errorf("%s: got %+v, want %+v", f.key, r.Metrics, f)
		}
		if r.OfferedLegit != 4300 || r.OfferedAbusive != 12660 {
			t.Errorf("%s: offered %d/%d", f.key, r.OfferedLegit, r.OfferedAbusive)
		}
	}
	// Table 2 and Table 3b rows.
	for _, f := range []struct {
		key                      string
		falseCut, caught, missed int64
		legitPct                 float64
	}{
		{"sliding_window window_s=60 limit=800", 480, 4360, 8300, -1},
		{"sliding_window window_s=60 limit=1000", 240, 2960, 9700, -1},
		{"sliding_window window_s=60 limit=1240", 0, 1600, 11060, -1},
		{"sliding_window window_s=60 limit=1500", 0, 300, 12360, -1},
		{"token_bucket rate=10 capacity=200", 1020, 5190, 7470, -1},
		{"token_bucket rate=10 capacity=400", 620, 4590, 8070, -1},
		{"token_bucket rate=10 capacity=600", 220, 4210, 8450, -1},
		{"token_bucket rate=10 capacity=1200", 0, 3610, 9050, -1},
		{"sliding_window window_s=60 limit=540", 1000, -1, -1, 23.3},
		{"sliding_window window_s=60 limit=480", 1120, -1, -1, 26.0},
		{"sliding_window window_s=60 limit=360", 1360, -1, -1, 31.6},
	} {
		r := byKey[f.key]
		if r.FalseCut != f.falseCut || (f.caught >= 0 && (r.Caught != f.caught || r.Missed != f.missed)) ||
			(f.legitPct >= 0 && r1(r.LegitCutPct) != f.legitPct) {
			t.Errorf("%s: got %+v, want %+v", f.key, r.Metrics, f)
		}
	}
	// Per-client figures: Table 1, login attempts admitted (Table 2), bulk download cut (Table 3b).
	clients, err := ReadClients(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	cut := map[string]int64{}
	admitted := map[string]int64{}
	idOf := map[int64]string{}
	for _, r := range rows {
		idOf[r.PointID] = r.Key()
	}
	for _, c := range clients {
		k := idOf[c.PointID] + " / " + c.Client
		cut[k], admitted[k] = c.Cut, c.Admitted
		if (c.Class == "legit") != (c.Stage == "") {
			t.Errorf("%s: class %s with stage %q", k, c.Class, c.Stage)
		}
	}
	for k, want := range map[string]int64{
		"fixed_window window_s=60 limit=600 / field app, shift start":        360,
		"sliding_window window_s=60 limit=600 / field app, shift start":      640,
		"token_bucket rate=10 capacity=900 / field app, shift start":         0,
		"fixed_window window_s=60 limit=600 / billing-period batch query":    45,
		"sliding_window window_s=60 limit=600 / billing-period batch query":  240,
		"fixed_window window_s=60 limit=600 / page-crawling scraper":         4800,
		"token_bucket rate=10 capacity=900 / page-crawling scraper":          3910,
		"fixed_window window_s=60 limit=600 / login attempt sequence":        240,
		"sliding_window window_s=60 limit=600 / login attempt sequence":      960,
		"sliding_window window_s=60 limit=480 / off-workflow bulk download":  300,
		"sliding_window window_s=60 limit=360 / off-workflow bulk download":  900,
		"sliding_window window_s=60 limit=540 / off-workflow bulk download":  0,
		"sliding_window window_s=60 limit=600 / subscriber portal, steady":   0,
		"token_bucket rate=10 capacity=900 / internal monitoring poll":       0,
		"sliding_window window_s=60 limit=1500 / off-workflow bulk download": 0,
	} {
		if got, ok := cut[k]; !ok || got != want {
			t.Errorf("%s: cut %d (present %v), want %d", k, got, ok, want)
		}
	}
	for k, want := range map[string]int64{
		"sliding_window window_s=60 limit=600 / login attempt sequence":  1200,
		"sliding_window window_s=60 limit=800 / login attempt sequence":  1600,
		"sliding_window window_s=60 limit=1000 / login attempt sequence": 2000,
		"sliding_window window_s=60 limit=1240 / login attempt sequence": 2160,
		"token_bucket rate=10 capacity=200 / login attempt sequence":     1580,
		"token_bucket rate=10 capacity=400 / login attempt sequence":     1980,
		"token_bucket rate=10 capacity=600 / login attempt sequence":     2160,
	} {
		if got := admitted[k]; got != want {
			t.Errorf("%s: admitted %d, want %d", k, got, want)
		}
	}
	// File metadata carries the spec with the scenario inlined.
	files, _ := PartFiles(dir, "points")
	md, err := FileMetadata(files[0])
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseSpec([]byte(md[MetaSpec]), nil)
	if err != nil {
		t.Fatalf("spec in metadata does not parse: %v", err)
	}
	if spec.Scenario.SHA256() != md[MetaScenarioSHA256] || md[MetaShard] != "0/1" || md[MetaVersion] != Version {
		t.Errorf("metadata: %v", md)
	}
}

// The peers' checksum over the bench grid (bench/peers: Σ false cut).
func TestBenchChecksum(t *testing.T) {
	s := mustSpec(t, "bench.yaml")
	if s.Points() != 60000 {
		t.Fatalf("bench grid has %d points, want 60000", s.Points())
	}
	res := mustRun(t, s, Options{NoOutput: true})
	if res.FalseCutSum != 24882395 {
		t.Errorf("Σ false cut = %d, want 24882395", res.FalseCutSum)
	}
}

func TestBenchLargeGridSize(t *testing.T) {
	if n := mustSpec(t, "bench-large.yaml").Points(); n != 1_400_000 {
		t.Errorf("bench-large grid has %d points, want 1400000", n)
	}
}

// A smaller grid with many parts for determinism tests.
func detSpec(t testing.TB) *Spec {
	t.Helper()
	s, err := ParseSpec([]byte(`name: det
scenario: {name: s, duration_s: 300, clients: [
  {name: a, class: legit, segments: [[0, 300, 4], ]},
  {name: b, class: legit, segments: [[0, 110, 2], [110, 150, 30], [150, 300, 2]]},
  {name: c, class: abusive, stage: none, segments: [[0, 300, 26]]},
  {name: d, class: abusive, stage: code, segments: [[40, 100, 18], [160, 220, 18]]}]}
sweep:
  - algorithm: sliding_window
    window_s: [10, 60, 300]
    limit: {from: 1, to: 1500, step: 1}
  - algorithm: token_bucket
    rate: [1, 2.5, 10]
    capacity: {from: 1, to: 1000, count: 400, scale: log}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestWorkersAndShardsGiveIdenticalOutput(t *testing.T) {
	s := detSpec(t)
	if n := len(Parts(s.Points(), Shard{0, 1})); n < 4 {
		t.Fatalf("only %d parts; the test needs several", n)
	}
	one, many := t.TempDir(), t.TempDir()
	mustRun(t, s, Options{OutDir: one, Workers: 1})
	mustRun(t, s, Options{OutDir: many, Workers: 8})
	m1, m8 := readManifest(t, filepath.Join(one, "manifest.json")), readManifest(t, filepath.Join(many, "manifest.json"))
	if !reflect.DeepEqual(fileHashes(m1), fileHashes(m8)) {
		t.Error("--workers 1 and --workers 8 wrote different files")
	}
	if m1.FalseCutSum != m8.FalseCutSum || m1.Rows != s.Rows() {
		t.Errorf("manifests: %d/%d rows %d", m1.FalseCutSum, m8.FalseCutSum, m1.Rows)
	}
	// Shards 0/3, 2/3, 1/3 into one directory equal the whole run.
	sh := t.TempDir()
	var sum int64
	for _, i := range []int{0, 2, 1} {
		res := mustRun(t, s, Options{OutDir: sh, Workers: 2, Shard: Shard{i, 3}})
		sum += res.FalseCutSum
	}
	// Files differ only in their ratesweep.shard metadata; rows are identical.
	parts := 0
	for i := range 3 {
		parts += len(readManifest(t, filepath.Join(sh, ManifestName(Shard{i, 3}))).Parts)
	}
	if parts != len(m1.Parts) || sum != m1.FalseCutSum {
		t.Errorf("shards wrote %d parts with Σ false cut %d, want %d and %d", parts, sum, len(m1.Parts), m1.FalseCutSum)
	}
	a, _ := ReadPoints(context.Background(), one)
	b, _ := ReadPoints(context.Background(), sh)
	if !reflect.DeepEqual(a, b) || int64(len(a)) != s.Rows() {
		t.Errorf("points rows differ: %d vs %d", len(a), len(b))
	}
	ca, _ := ReadClients(context.Background(), one)
	cb, _ := ReadClients(context.Background(), sh)
	if len(ca) != len(a)*4 || len(ca) != len(cb) {
		t.Errorf("clients rows: %d vs %d", len(ca), len(cb))
	}
	pos := map[[2]int64]int{}
	for i, r := range cb {
		pos[[2]int64{r.PointID, int64(i % 4)}] = i
	}
	for i, r := range ca {
		if j, ok := pos[[2]int64{r.PointID, int64(i % 4)}]; !ok || cb[j] != r {
			t.Fatalf("clients row %+v differs between 0/1 and 3 shards", r)
		}
	}
	for i := range a {
		if a[i].PointID != int64(i) {
			t.Fatalf("row %d has point_id %d: rows are not sorted and complete", i, a[i].PointID)
		}
	}
}

func TestCancelThenResume(t *testing.T) {
	s := detSpec(t)
	full := t.TempDir()
	mustRun(t, s, Options{OutDir: full, Workers: 2})
	want := fileHashes(readManifest(t, filepath.Join(full, "manifest.json")))

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := Run(ctx, s, Options{OutDir: dir, Workers: 1, beforePart: func(Part) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if fileExists(filepath.Join(dir, "manifest.json")) {
		t.Fatal("an interrupted run wrote its manifest")
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "points", "*.parquet"))
	if len(kept) == 0 || len(kept) >= len(want)/2 {
		t.Fatalf("%d parts kept after cancel", len(kept))
	}
	// Without --resume the directory is refused.
	if _, err := Run(context.Background(), s, Options{OutDir: dir}); !errors.Is(err, ErrOutputExists) {
		t.Fatalf("rerun without --resume: %v", err)
	}
	res := mustRun(t, s, Options{OutDir: dir, Resume: true, Workers: 2})
	if res.PartsSkipped != len(kept) {
		t.Errorf("resume skipped %d parts, want %d", res.PartsSkipped, len(kept))
	}
	if got := fileHashes(readManifest(t, filepath.Join(dir, "manifest.json"))); !reflect.DeepEqual(got, want) {
		t.Error("cancel-then-resume differs from an uninterrupted run")
	}
	// A corrupted part is recomputed on resume.
	victim := filepath.Join(dir, "points", "part-000001.parquet")
	if err := os.WriteFile(victim, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = mustRun(t, s, Options{OutDir: dir, Resume: true})
	if res.PartsSkipped != res.Parts-1 {
		t.Errorf("resume kept %d of %d parts, want all but the corrupt one", res.PartsSkipped, res.Parts)
	}
	if got := fileHashes(readManifest(t, filepath.Join(dir, "manifest.json"))); !reflect.DeepEqual(got, want) {
		t.Error("resume after corruption differs")
	}
}

func TestWriteFailureLeavesNoIncompleteFile(t *testing.T) {
	s := detSpec(t)
	dir := t.TempDir()
	boom := errors.New("disk full (injected)")
	var calls atomic.Int64 // both workers call the hook
	_, err := Run(context.Background(), s, Options{OutDir: dir, Workers: 2, afterBatch: func(path string) error {
		if calls.Add(1) == 7 {
			return boom
		}
		return nil
	}})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	for _, sub := range []string{"points", "clients"} {
		files, _ := filepath.Glob(filepath.Join(dir, sub, "*"))
		for _, f := range files {
			if strings.HasSuffix(f, ".tmp") {
				t.Errorf("temporary file left: %s", f)
				continue
			}
			if _, err := verifyPart(f, -1, string(s.YAML())); err != nil {
				t.Errorf("incomplete file under a final name: %v", err)
			}
		}
	}
	if fileExists(filepath.Join(dir, "manifest.json")) {
		t.Error("a failed run wrote its manifest")
	}
}

func TestRunRefusals(t *testing.T) {
	s := mustSpec(t, "lesson-sweep.yaml")
	// Grid over --max-points.
	_, err := Run(context.Background(), s, Options{OutDir: t.TempDir(), MaxPoints: 5})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "--max-points") {
		t.Errorf("max points: %v", err)
	}
	// A non-empty directory that is not a run.
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644)
	if _, err := Run(context.Background(), s, Options{OutDir: foreign}); !errors.Is(err, ErrOutputExists) {
		t.Errorf("foreign dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(foreign, "notes.txt")); err != nil {
		t.Error("the user's file was touched")
	}
	// An unwritable output location (a path below a regular file).
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if _, err := Run(context.Background(), s, Options{OutDir: filepath.Join(file, "run")}); err == nil {
		t.Error("unwritable output: no error")
	}
	// A run of another spec is refused even with --resume; --force replaces it.
	dir := t.TempDir()
	mustRun(t, s, Options{OutDir: dir})
	other := mustSpec(t, "lesson-sweep.yaml")
	other.Entries = other.Entries[:1]
	if _, err := Run(context.Background(), other, Options{OutDir: dir, Resume: true}); !errors.As(err, &ie) {
		t.Errorf("different spec: %v", err)
	}
	mustRun(t, other, Options{OutDir: dir, Force: true})
	rows, _ := ReadPoints(context.Background(), dir)
	if len(rows) != 1 {
		t.Errorf("after --force: %d rows, want 1", len(rows))
	}
}

func TestParseShard(t *testing.T) {
	for _, bad := range []string{"3/2", "0/0", "2/2", "-1/3", "1", "a/b", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if s, err := ParseShard("2/5"); err != nil || s != (Shard{2, 5}) {
		t.Errorf("2/5: %v %v", s, err)
	}
}

func TestGridAndAxes(t *testing.T) {
	s := detSpec(t)
	g := NewGrid(s)
	if g.Points() != 3*1500+s.Entries[1].Size() {
		t.Fatalf("points %d", g.Points())
	}
	if p := g.Policy(0); p != (model.Policy{Algorithm: model.SlidingWindow, WindowS: 10, Limit: 1}) {
		t.Errorf("point 0 = %+v", p)
	}
	if p := g.Policy(1500); p != (model.Policy{Algorithm: model.SlidingWindow, WindowS: 60, Limit: 1}) {
		t.Errorf("point 1500 = %+v", p)
	}
	if p := g.Policy(4500); p.Algorithm != model.TokenBucket || p.Rate != 1 || p.Capacity != 1 {
		t.Errorf("point 4500 = %+v", p)
	}
	caps := s.Entries[1].Axes[1].Values
	if caps[0] != 1 || caps[len(caps)-1] != 1000 || len(caps) >= 400 {
		t.Errorf("log axis of whole numbers: %d values from %g to %g", len(caps), caps[0], caps[len(caps)-1])
	}
	for i := 1; i < len(caps); i++ {
		if caps[i] <= caps[i-1] {
			t.Fatalf("log axis not strictly increasing at %d", i)
		}
	}
	ax, err := ParseSpec([]byte("name: x\nscenario: {name: s, duration_s: 1, clients: [{name: a, class: legit, segments: [[0, 1, 1]]}]}\n"+
		"sweep: [{algorithm: token_bucket, rate: {from: 0.1, to: 1, step: 0.1}, capacity: 5}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}
	if got := ax.Entries[0].Axes[0].Values; !reflect.DeepEqual(got, want) {
		t.Errorf("step axis %v, want %v", got, want)
	}
	// The canonical YAML parses back to the same grid.
	again, err := ParseSpec(s.YAML(), nil)
	if err != nil {
		t.Fatalf("canonical spec: %v\n%s", err, s.YAML())
	}
	if !reflect.DeepEqual(again.Entries, s.Entries) || string(again.YAML()) != string(s.YAML()) {
		t.Error("canonical spec round trip changed the grid")
	}
}

func TestSpecBadInput(t *testing.T) {
	const head = "name: x\nscenario: {name: s, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\n"
	cases := []struct{ body, want string }{
		{"sweep:\n  - algorithm: leaky\n    limit: 5\n", `sweep[0].algorithm: unknown algorithm "leaky"`},
		{"sweep:\n  - algorithm: fixed_window\n    window_s: 10\n    limit: 5\n    rate: 3\n", `sweep[0].rate: fixed_window takes no parameter "rate"`},
		{"sweep:\n  - algorithm: fixed_window\n    window_s: 10\n", `sweep[0].limit: missing`},
		{"sweep:\n  - algorithm: fixed_window\n    window_s: 10\n    limit: {from: 9, to: 5, step: 1}\n", `sweep[0].limit: from (9) must not exceed to (5)`},
		{"sweep:\n  - algorithm: fixed_window\n    window_s: 10\n    limit: {from: 1, to: 5, step: 0}\n", `sweep[0].limit.step: must be > 0`},
		{"sweep:\n  - algorithm: fixed_window\n    window_s: 10\n    limit: {from: 1, to: 5, count: 0}\n", `sweep[0].limit.count: must be between 1`},
		{"sweep:\n  - algorithm: fixed_window\n    window_s: 10\n    limit: [5, -1]\n", `sweep[0].limit[1]: must be >= 0`},
		{"sweep:\n  - algorithm: fixed_window\n    window_s: 0\n    limit: 5\n", `sweep[0].window_s: must be > 0`},
		{"sweep:\n  - algorithm: fixed_window\n    window_s: 1.5\n    limit: 5\n", `sweep[0].window_s: must be a whole number`},
		{"sweep:\n  - algorithm: fixed_window\n    window_s: []\n    limit: 5\n", `sweep[0].window_s: empty list`},
		{"sweep:\n  - algorithm: token_bucket\n    rate: 0\n    capacity: 5\n", `sweep[0].rate: must be > 0`},
		{"sweep:\n  - algorithm: token_bucket\n    rate: 1\n    capacity: {from: 0, to: 5, count: 3, scale: log}\n", `sweep[0].capacity.from: must be > 0 on a log scale`},
		{"sweep:\n  - algorithm: token_bucket\n    rate: 1\n    capacity: {from: 1, to: 5, step: 1, colour: 2}\n", `sweep[0].capacity.colour: unknown field`},
		{"sweep: []\n", `sweep: at least one entry`},
		{"sweep:\n  - algorithm: token_bucket\n    rate: 1\n    capacity: 5\nextra: 1\n", `extra: unknown field`},
		{"replicates: 0\nsweep:\n  - algorithm: token_bucket\n    rate: 1\n    capacity: 5\n", `replicates: must be between 1`},
	}
	for _, c := range cases {
		_, err := ParseSpec([]byte(head+c.body), nil)
		var ye *yamlx.Error
		if !errors.As(err, &ye) || !strings.Contains(err.Error(), c.want) || ye.Line == 0 {
			t.Errorf("%q:\n got %v\nwant %q with a line number", c.body, err, c.want)
		}
	}
	// Scenario errors inside a spec keep their path; file errors name the file.
	_, err := ParseSpec([]byte("name: x\nscenario: {name: s, duration_s: 10, clients: [{name: a, class: bad, segments: [[0, 10, 1]]}]}\nsweep: []\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "scenario.clients[0].class") {
		t.Errorf("inline scenario error: %v", err)
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	os.WriteFile(spec, []byte("name: x\nscenario: missing.yaml\nsweep: [{algorithm: token_bucket, rate: 1, capacity: 5}]\n"), 0o644)
	if _, err := LoadSpec(spec); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing scenario file: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("name: s\nduration_s: 10\nclients: []\n"), 0o644)
	os.WriteFile(spec, []byte("name: x\nscenario: bad.yaml\nsweep: [{algorithm: token_bucket, rate: 1, capacity: 5}]\n"), 0o644)
	if _, err := LoadSpec(spec); err == nil || !strings.Contains(err.Error(), "bad.yaml:3: clients") {
		t.Errorf("bad scenario file: %v", err)
	}
	if _, err := LoadSpec(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
}

func TestEmbeddedSpecsLoad(t *testing.T) {
	for _, name := range []string{"default.yaml", "bench.yaml", "bench-large.yaml", "lesson-sweep.yaml"} {
		s := mustSpec(t, name)
		if s.Points() == 0 {
			t.Errorf("%s: empty grid", name)
		}
	}
	d := mustSpec(t, "default.yaml")
	if n := d.Points(); n < 10_000 || n > 100_000 {
		t.Errorf("default spec has %d points; want tens of thousands", n)
	}
}

// Stochastic workloads: replicates differ, every point of a replicate sees
// the same requests, and the output does not depend on the worker count.
func TestReplicatesOfStochasticWorkload(t *testing.T) {
	s, err := ParseSpec([]byte(`name: poisson
seed: 7
replicates: 4
scenario:
  name: p
  duration_s: 120
  arrivals: poisson
  clients:
    - {name: a, class: legit, segments: [[0, 120, 3.5]]}
    - {name: b, class: abusive, stage: none, segments: [[10, 100, 20]]}
sweep:
  - algorithm: sliding_window
    window_s: [10, 60]
    limit: {from: 50, to: 600, step: 50}
  - algorithm: token_bucket
    rate: [2, 5]
    capacity: [10, 100]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	one, two := t.TempDir(), t.TempDir()
	mustRun(t, s, Options{OutDir: one, Workers: 1})
	mustRun(t, s, Options{OutDir: two, Workers: 2})
	if !reflect.DeepEqual(fileHashes(readManifest(t, filepath.Join(one, "manifest.json"))),
		fileHashes(readManifest(t, filepath.Join(two, "manifest.json")))) {
		t.Error("workers 1 and 2 differ on a stochastic workload")
	}
	rows, err := ReadPoints(context.Background(), one)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(rows)) != s.Points()*4 {
		t.Fatalf("%d rows, want %d", len(rows), s.Points()*4)
	}
	offered := map[int32]int64{}
	for _, r := range rows {
		o := r.OfferedLegit + r.OfferedAbusive
		if prev, ok := offered[r.Replicate]; ok && prev != o {
			t.Fatalf("replicate %d: points see different traffic (%d vs %d requests)", r.Replicate, prev, o)
		}
		offered[r.Replicate] = o
	}
	if offered[0] == offered[1] && offered[1] == offered[2] && offered[2] == offered[3] {
		t.Errorf("replicates drew identical traffic: %v", offered)
	}
	// Another seed draws other traffic.
	s.Seed = 8
	res := mustRun(t, s, Options{NoOutput: true})
	var sum int64
	for _, r := range rows {
		sum += r.FalseCut
	}
	if res.FalseCutSum == sum {
		t.Error("seed 7 and seed 8 gave the same Σ false cut")
	}
}

func TestZooEntriesValidated(t *testing.T) {
	const head = "name: x\nscenario: {name: s, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\n"
	_, err := ParseSpec([]byte(head+"sweep:\n  - algorithm: fixed_window\n    window_s: [10, 60]\n    limit: 5\n    phase_s: [0, 30]\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "phase_s") {
		t.Errorf("phase_s >= window_s: %v", err)
	}
	_, err = ParseSpec([]byte(head+"sweep:\n  - algorithm: nginx\n    rate: 5\n    burst: -1\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "sweep[0].burst") {
		t.Errorf("negative burst: %v", err)
	}
	s, err := ParseSpec([]byte(head+"sweep:\n  - algorithm: nginx\n    rate: 5\n    burst: [0, 10]\n    delay: 5\n"), nil)
	if err != nil || s.Points() != 2 {
		t.Errorf("nginx entry: %v", err)
	}
}

// runSpecText runs the spec text (named name; paths relative to ".") with
// one worker into a temporary directory and returns the spec with the
// points and clients rows read back from its Parquet files.
func runSpecText(t *testing.T, text, name string) (*Spec, []PointRow, []ClientRow) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	sp, err := ReadSpec([]byte(text), name, ".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, sp, Options{OutDir: dir, Workers: 1, Shard: Shard{Count: 1}, MaxPoints: DefaultMaxPoints}); err != nil {
		t.Fatalf("run: %v", err)
	}
	rows, err := ReadPoints(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := ReadClients(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	return sp, rows, clients
}
