package sweep

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// ScanPointRange reads only the row groups whose point ids keep accepts,
// from the files' statistics.
func TestScanPointRange(t *testing.T) {
	spec, err := LoadSpec("embedded:baseline-lesson.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Run(context.Background(), spec, Options{OutDir: dir, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	files, err := PartFiles(dir, "points")
	if err != nil {
		t.Fatal(err)
	}
	count := func(keep func(lo, hi int64) bool) (rows int64, lo, hi int64) {
		lo, hi = 1<<62, -1
		for _, f := range files {
			err := ScanPointRange(context.Background(), f, []string{"point_id"}, keep, func(rec arrow.RecordBatch) error {
				for i := range int(rec.NumRows()) {
					id, _ := Int(rec.Column(0), i)
					lo, hi = min(lo, id), max(hi, id)
				}
				rows += rec.NumRows()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	all, _, _ := count(nil)
	if all != spec.Rows() {
		t.Fatalf("%d rows, spec has %d", all, spec.Rows())
	}
	if n, _, _ := count(func(lo, hi int64) bool { return false }); n != 0 {
		t.Errorf("keep nothing: %d rows", n)
	}
	// The last point only: its row group, not the first file's.
	last := spec.Points() - 1
	n, lo, hi := count(func(lo, hi int64) bool { return lo <= last && last <= hi })
	if n == 0 || n == all || hi != last || lo == 0 {
		t.Errorf("last point: %d of %d rows, ids %d..%d", n, all, lo, hi)
	}
}
