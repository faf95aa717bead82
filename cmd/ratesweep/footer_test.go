package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/ingest"
)

// testdata/flipped-schema is a complete run whose points part has one bit
// flipped in its footer's ARROW:schema: the Arrow schema's field count
// becomes 4,294,965,420, which arrow-go would allocate (377 GB, "fatal
// error: out of memory"). Every reader says the part is damaged (exit 1)
// before anything decodes the schema; a Parquet log with that footer is
// refused the same way.
func TestFlippedArrowSchema(t *testing.T) {
	src, err := filepath.Abs("testdata/flipped-schema")
	if err != nil {
		t.Fatal(err)
	}
	dir := copyRun(t, src)
	const want = "points/part-000000.parquet is damaged (ARROW:schema: a vector of 4294965420 elements"
	for _, args := range [][]string{
		{"report", dir},
		{"check", "--baseline", dir, dir},
		{"recommend", dir, "--max-false-cut", "1%"},
		{"export", "--to", "nginx", "--run", dir, "fixed_window window_s=10 limit=10"},
		{"merge", dir},
		{"merge", "--compact", dir},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "ratesweep run --resume") || strings.Contains(stderr, "goroutine") {
			t.Errorf("%s: exit %d, stderr %q; want 1 naming the damaged part", args[0], code, stderr)
		}
	}
	opt := ingest.Options{Reader: ingest.ReaderOptions{Format: ingest.FormatParquet, CSV: ingest.CSVOptions{Columns: map[string]string{"time": "point_id"}}}}
	_, err = ingest.Load(context.Background(), filepath.Join(dir, "points", "part-000000.parquet"), opt)
	if err == nil || !strings.Contains(err.Error(), "a damaged Parquet footer: ARROW:schema: a vector of 4294965420 elements") {
		t.Errorf("a Parquet log: %v", err)
	}
}
