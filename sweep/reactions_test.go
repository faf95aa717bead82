package sweep

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/model/reference"
)

// A run whose clients react writes the reaction columns, the same with one
// worker or several; the points read back match a direct simulation, and a
// run without reactions has none of the columns.
func TestReactionColumns(t *testing.T) {
	s, err := LoadSpec("testdata/retries-sweep.yaml")
	if err != nil {
		t.Fatal(err)
	}
	one, many := t.TempDir(), t.TempDir()
	mustRun(t, s, Options{OutDir: one, Workers: 1})
	mustRun(t, s, Options{OutDir: many, Workers: 3})
	if !reflect.DeepEqual(fileHashes(readManifest(t, filepath.Join(one, "manifest.json"))), fileHashes(readManifest(t, filepath.Join(many, "manifest.json")))) {
		t.Error("--workers 1 and --workers 3 wrote different files")
	}
	rows, err := ReadPoints(context.Background(), one)
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.NewWorkload(s.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	sim := w.NewSimulator()
	sim.SetReplicate(s.Seed, 0)
	grid := NewGrid(s)
	amplified := 0
	for _, r := range rows {
		var out model.Outcome
		sim.Run(grid.Policy(r.PointID), &out)
		if !r.Reactions.Measured || r.Metrics != out.Metrics {
			t.Fatalf("point %d: read %+v, simulated %+v", r.PointID, r.Metrics, out.Metrics)
		}
		if r.Reactions.AmplificationAbusive > 1 {
			amplified++
		}
	}
	if amplified == 0 {
		t.Error("no point where the abusive client's retries amplify its load")
	}
	for _, f := range []string{"points", "clients"} {
		files, _ := PartFiles(one, f)
		sc, err := fileSchema(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(sc.FieldIndices("gave_up")) != 1 || len(sc.FieldIndices("attempts")) != 1 {
			t.Errorf("%s: no reaction columns in %v", f, sc)
		}
	}
	plain := t.TempDir()
	mustRun(t, mustSpec(t, "lesson-sweep.yaml"), Options{OutDir: plain})
	files, _ := PartFiles(plain, "points")
	sc, _ := fileSchema(files[0])
	if len(sc.FieldIndices("attempts")) != 0 {
		t.Error("a run without reactions has reaction columns")
	}
}

// Reactions are simulated on one node with key client, address, account or
// global: a sweep of other deployments is refused with the entry's field.
func TestReactionsRefuseDeployments(t *testing.T) {
	for _, c := range []struct{ axis, want string }{
		{"key: both", "sweep[0].key"},
		{"nodes: [1, 2]", "sweep[0].nodes"},
		{"state: shared", "sweep[0].state"},
	} {
		y := `name: r
scenario:
  name: s
  duration_s: 10
  clients:
    - {name: c, class: legit, segments: [[0, 10, 1]], on_reject: {retry: immediate, max_retries: 2}}
sweep:
  - algorithm: token_bucket
    rate: 1
    capacity: 1
    ` + c.axis + "\n"
		_, err := ParseSpec([]byte(y), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.axis, err, c.want)
		}
	}
}

// Reacting clients decide one at a time: a key they share (org), or an
// all_of component on one (global, org), is refused with the component's
// field rather than decided per client.
func TestReactionsRefuseSharedComponents(t *testing.T) {
	for _, c := range []struct{ entry, want string }{
		{"{algorithm: token_bucket, rate: 1, capacity: 1, key: org}", "sweep[0].key"},
		{"{all_of: [{algorithm: token_bucket, rate: 1, capacity: 1}, {algorithm: fixed_window, window_s: 10, limit: 3, key: global}], rejected_counts: none}", "sweep[0].all_of[1].key"},
		{"{all_of: [{algorithm: token_bucket, rate: 1, capacity: 1, key: org}, {algorithm: fixed_window, window_s: 10, limit: 3}], rejected_counts: all}", "sweep[0].all_of[0].key"},
	} {
		y := "name: r\nscenario:\n  name: s\n  duration_s: 10\n  clients:\n    - {name: c, class: legit, segments: [[0, 10, 1]], on_reject: {retry: immediate, max_retries: 2}}\nsweep:\n  - " + c.entry + "\n"
		_, err := ParseSpec([]byte(y), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.entry, err, c.want)
		}
	}
}

// An overlay client that reacts has a key of its own: one given the log's
// keys is refused with the field.
func TestReactionsRefuseOverlayOnLogKeys(t *testing.T) {
	s, err := LoadSpec(filepath.Join("..", "configs", "examples", "antlr-org-overlay.yaml"),
		"overlay.clients[3].on_reject={retry: immediate, max_retries: 3}")
	if err == nil || !strings.Contains(err.Error(), "overlay.keys.behind NAT") || !strings.Contains(err.Error(), "reacts") {
		t.Fatalf("spec %v, error %v: want one naming overlay.keys.behind NAT", s != nil, err)
	}
}

// A replayed log whose keys retry counts the penalty box's blocks as a
// plain replay does (they were 0).
func TestReactionsOnLogCountBlocks(t *testing.T) {
	rs := []logRequest{{ns: 0, status: 200, path: "/"}, {ns: 1e8, status: 200, path: "/"}, {ns: 2e8, status: 200, path: "/"}}
	path := filepath.Join(t.TempDir(), "log.csv")
	writeLog(t, path, rs, 1767225600)
	o := logOpts{retry: &reference.Retry{MaxRetries: 2}}
	sp, err := ReadSpec([]byte(logSpec(path, o, []string{"{algorithm: token_bucket, rate: 1, capacity: 1, block_s: 5}"})), "r.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	mustRun(t, sp, Options{OutDir: out, Workers: 1, Shard: Shard{Count: 1}, MaxPoints: DefaultMaxPoints})
	rows, err := ReadPoints(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	// The 2nd request blocks the key from 0.1 s to the log's end (1 s).
	if r := rows[0]; r.Blocks != 1 || r.LegitBlockedS != 0.9 || r.FalseCut != 2 {
		t.Errorf("blocks %d, legit blocked %v s, false cut %d; want 1, 0.9 s, 2", r.Blocks, r.LegitBlockedS, r.FalseCut)
	}
}
