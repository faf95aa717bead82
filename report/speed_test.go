package report

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// defaultRun runs the embedded default spec (what `make run` sweeps) into
// a temporary directory.
func defaultRun(tb testing.TB) string {
	tb.Helper()
	spec, err := sweep.LoadSpec("")
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Workers: 2}); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// pageBudget is the most index.html may weigh for the default run, bytes.
const pageBudget = 1_000_000

// The default run's page stays small: its fonts cut to the glyphs drawn,
// its SVGs packed.
func TestDefaultPageSize(t *testing.T) {
	dir := defaultRun(t)
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := r.Write(out); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > pageBudget {
		t.Errorf("index.html of the default run is %d bytes, more than %d", st.Size(), pageBudget)
	}
}

// BenchmarkReportDefault is `ratesweep report` on the default run: load,
// draw every figure and write every file.
func BenchmarkReportDefault(b *testing.B) {
	dir := defaultRun(b)
	out := b.TempDir()
	for b.Loop() {
		r, err := Load(context.Background(), dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Write(out); err != nil {
			b.Fatal(err)
		}
	}
}
