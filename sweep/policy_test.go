package sweep

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// checkPolicyColumn asserts that every points row's policy column is the
// label of its parameters and that each point has one label.
func checkPolicyColumn(t *testing.T, dir string) int {
	t.Helper()
	rows, err := ReadPoints(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := PartFiles(dir, "points")
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, f := range files {
		err := ScanFile(context.Background(), f, []string{"point_id", "replicate", PolicyColumn}, func(rec arrow.RecordBatch) error {
			for i := range int(rec.NumRows()) {
				s, ok := String(rec.Column(2), i)
				if !ok {
					t.Fatalf("%s: null policy at row %d", f, i)
				}
				labels = append(labels, s)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(labels) != len(rows) {
		t.Fatalf("%d labels for %d rows", len(labels), len(rows))
	}
	seen := map[string]int64{}
	for i, r := range rows { // both in (point_id, replicate) order: parts are written sorted
		if labels[i] != r.Key() {
			t.Fatalf("point %d replicate %d: policy %q, parameters say %q", r.PointID, r.Replicate, labels[i], r.Key())
		}
		if id, ok := seen[labels[i]]; ok && id != r.PointID {
			t.Fatalf("points %d and %d share the label %q", id, r.PointID, labels[i])
		}
		seen[labels[i]] = r.PointID
	}
	return len(seen)
}

func TestPolicyColumn(t *testing.T) {
	// One replicate (labels sliced without copying) and three replicates over
	// more than one record batch (labels repeated per replicate).
	s := mustSpec(t, "lesson-sweep.yaml")
	dir := t.TempDir()
	mustRun(t, s, Options{OutDir: dir, Workers: 2})
	if n := checkPolicyColumn(t, dir); int64(n) != s.Points() {
		t.Errorf("%d distinct labels for %d points", n, s.Points())
	}
	r, err := ParseSpec([]byte(`name: reps
seed: 3
replicates: 3
scenario:
  name: p
  duration_s: 60
  arrivals: poisson
  clients:
    - {name: a, class: legit, segments: [[0, 60, 3]]}
    - {name: b, class: abusive, stage: none, segments: [[10, 50, 9]]}
sweep:
  - algorithm: sliding_counter
    window_s: [1, 10, 60]
    limit: {from: 1, to: 12000, step: 1}
  - algorithm: token_bucket
    rate: [0.5, 2]
    capacity: [1, 1000000]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	mustRun(t, r, Options{OutDir: dir, Workers: 2})
	if n := checkPolicyColumn(t, dir); int64(n) != r.Points() {
		t.Errorf("%d distinct labels for %d points", n, r.Points())
	}
}
