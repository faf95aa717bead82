package sweep

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratesweep/ratesweep/configs"
	"github.com/ratesweep/ratesweep/model"
)

// perfSpec is a 4,530-point grid (5 parts, 2 replicates) over all three
// algorithms of the lesson's scenario.
func perfSpec(t *testing.T) *Spec {
	t.Helper()
	spec, err := ParseSpec([]byte(`name: perf-test
scenario: lesson.yaml
replicates: 2
sweep:
  - algorithm: fixed_window
    window_s: [1, 7, 60, 299]
    limit: {from: 0, to: 1500, step: 3}
  - algorithm: sliding_window
    window_s: [1, 7, 60, 299]
    limit: {from: 0, to: 1500, step: 3}
  - algorithm: token_bucket
    rate: [0.5, 1, 2.25, 10, 33]
    capacity: {from: 1, to: 2000, step: 8}
`), func(p string) (string, []byte, error) { return p, configs.Lesson, nil })
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestWrittenRowsMatchReference reads back every points and clients row and
// compares it with the step-by-step reference kernels (model.Admit): the
// fast paths and the zero-copy batch builders end to end.
func TestWrittenRowsMatchReference(t *testing.T) {
	spec := perfSpec(t)
	dir := t.TempDir()
	res, err := Run(context.Background(), spec, Options{OutDir: dir, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Parts < 2 {
		t.Fatalf("%d parts; the test wants several", res.Parts)
	}
	wl, err := model.NewWorkload(spec.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	grid := NewGrid(spec)
	points, err := ReadPoints(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := ReadClients(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	nc := len(spec.Scenario.Clients)
	if int64(len(points)) != spec.Rows() || len(clients) != len(points)*nc {
		t.Fatalf("%d points rows and %d clients rows, want %d and %d", len(points), len(clients), spec.Rows(), spec.Rows()*int64(nc))
	}
	adm := make([]int32, spec.Scenario.DurationS)
	results := make([]model.ClientResult, nc)
	for k, row := range points {
		p := grid.Policy(row.PointID)
		if row.Replicate != int32(k%spec.Replicates) || row.Algorithm != p.Algorithm.String() {
			t.Fatalf("row %d: point %d replicate %d %s, want replicate %d %s", k, row.PointID, row.Replicate, row.Algorithm, k%spec.Replicates, p.Algorithm)
		}
		for _, name := range p.Algorithm.Params() { // required: never null
			if _, ok := row.Params[name]; !ok {
				t.Fatalf("point %d: %s is null", row.PointID, name)
			}
		}
		for name, v := range row.Params { // every non-null value is the policy's
			if v != p.Value(name) {
				t.Fatalf("point %d: %s = %v, want %v", row.PointID, name, v, p.Value(name))
			}
		}
		if len(row.Params) >= len(model.Params) {
			t.Fatalf("point %d: no parameter column is null: %v", row.PointID, row.Params)
		}
		for i := range nc {
			a := wl.Offered(i)
			var off int64
			for _, x := range a {
				off += int64(x)
			}
			results[i] = model.ClientResult{Offered: off, Admitted: model.Admit(p, a, adm)}
			c := clients[k*nc+i]
			sc := spec.Scenario.Clients[i]
			if c.PointID != row.PointID || c.Replicate != row.Replicate || c.Client != sc.Name || c.Class != sc.Class.String() ||
				c.Stage != sc.Stage.String() || c.Offered != off || c.Admitted != results[i].Admitted || c.Cut != off-results[i].Admitted {
				t.Fatalf("clients row %d: %+v, want %s offered %d admitted %d", k*nc+i, c, sc.Name, off, results[i].Admitted)
			}
		}
		if want := wl.Metrics(results); row.Metrics != want {
			t.Fatalf("point %d %v: metrics %+v, want %+v", row.PointID, p, row.Metrics, want)
		}
	}
}

// TestOutputIndependentOfWorkers: 1 and 2 workers, and the writer-floor
// benchmark path (pre-built records), write byte-identical files.
func TestOutputIndependentOfWorkers(t *testing.T) {
	spec := perfSpec(t)
	var want map[string]string
	for _, workers := range []int{1, 2} {
		dir := t.TempDir()
		if _, err := Run(context.Background(), spec, Options{OutDir: dir, Workers: workers}); err != nil {
			t.Fatal(err)
		}
		got := partFileHashes(t, dir)
		if want == nil {
			want = got
			continue
		}
		if len(got) != len(want) {
			t.Fatalf("%d workers: %d files, want %d", workers, len(got), len(want))
		}
		for name, h := range want {
			if got[name] != h {
				t.Errorf("%d workers: %s differs", workers, name)
			}
		}
	}
	dir := t.TempDir()
	res, _, err := WriterFloor(context.Background(), spec, Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != spec.Rows() {
		t.Fatalf("writer floor: %d rows, want %d", res.Rows, spec.Rows())
	}
	got := partFileHashes(t, dir)
	for name, h := range want {
		if got[name] != h {
			t.Errorf("writer floor: %s differs", name)
		}
	}
}

// partFileHashes returns the SHA-256 of every part file of a run directory.
func partFileHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, table := range []string{"points", "clients"} {
		files, err := PartFiles(dir, table)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[table+"/"+filepath.Base(f)] = sha256Hex(b)
		}
	}
	return out
}
