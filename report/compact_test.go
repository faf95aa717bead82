package report

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// A run compacted by 'merge --compact' (its clients files merged-NNNNNN,
// each holding several parts) gives the report the same per-client bars
// as before compaction, without a warning that a part is missing.
func TestLoadCompactedRun(t *testing.T) {
	// 2,500 points: three parts of 1,024, one merged file or two.
	spec := strings.Replace(tinySpec, "limit: {from: 100, to: 1000, step: 100}\n  - algorithm: sliding_window",
		"limit: {from: 1, to: 1243, step: 1}\n  - algorithm: sliding_window", 1)
	dir := runSpec(t, spec)
	want, err := Load(context.Background(), dir, Options{Knees: 6})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := filepath.Glob(filepath.Join(dir, "clients", "part-*.parquet")); len(n) != 3 || len(want.Warnings) != 0 {
		t.Fatalf("%d clients parts, warnings %q", len(n), want.Warnings)
	}
	for _, rows := range []int64{4000, 2048} {
		cdir := filepath.Join(t.TempDir(), "run")
		if err := os.CopyFS(cdir, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		if rep, err := sweep.Merge(context.Background(), cdir, sweep.MergeOptions{Compact: true, CompactRows: rows}); err != nil || rep.Compacted < 1 {
			t.Fatalf("merge --compact: %v %+v", err, rep)
		}
		got, err := Load(context.Background(), cdir, Options{Knees: 6})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Warnings) != 0 {
			t.Errorf("compacted to %d rows a file: warnings %q", rows, got.Warnings)
		}
		if len(got.Selected) != len(want.Selected) {
			t.Fatalf("%d selected, want %d", len(got.Selected), len(want.Selected))
		}
		var ids []int64
		for i, s := range got.Selected {
			ids = append(ids, s.ID)
			if s.ID != want.Selected[i].ID || len(s.Clients) == 0 || !slices.Equal(s.Clients, want.Selected[i].Clients) {
				t.Errorf("compacted to %d rows a file: point %d clients %+v, want %+v", rows, s.ID, s.Clients, want.Selected[i].Clients)
			}
		}
		if slices.Max(ids) < 1024 {
			t.Fatalf("every selected point %v is in the first part", ids)
		}
	}
}
