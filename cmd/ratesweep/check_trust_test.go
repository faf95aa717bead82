package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/ratesweep/ratesweep/sweep"
)

// copyRun copies a run directory (spec, manifests, parts) into a new one.
func copyRun(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "run")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// rewriteParquet rewrites a Parquet file through fn, which gets the file's
// columns and returns the new schema and columns (metadata kept).
func rewriteParquet(t *testing.T, path string, fn func(s *arrow.Schema, cols []arrow.Array) (*arrow.Schema, []arrow.Array)) {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	kv := rdr.MetaData().KeyValueMetadata()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	rdr.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 1<<30)
	defer tr.Release()
	var recs []arrow.RecordBatch
	for tr.Next() {
		rec := tr.RecordBatch()
		s, cols := fn(rec.Schema(), rec.Columns())
		recs = append(recs, array.NewRecordBatch(s, cols, int64(cols[0].Len())))
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	fw, err := pqarrow.NewFileWriter(recs[0].Schema(), out, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range kv.Keys() { // the file's metadata: ratesweep.spec, …
		if k != "ARROW:schema" {
			if err := fw.AppendKeyValueMetadata(k, kv.Values()[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, r := range recs {
		if err := fw.Write(r); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

func eachPart(t *testing.T, dir string, fn func(s *arrow.Schema, cols []arrow.Array) (*arrow.Schema, []arrow.Array)) {
	t.Helper()
	files, err := sweep.PartFiles(dir, "points")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rewriteParquet(t, f, fn)
	}
	rehash(t, dir)
}

// rehash brings manifest.json's sizes and sha256 up to date with the part
// files (its row counts stay): a forger who covers his tracks, so that
// what the rows say is what the readers must judge.
func rehash(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "manifest.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	var m sweep.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for i := range m.Parts {
		p := &m.Parts[i]
		for _, f := range []struct {
			table     string
			name      string
			bytes     *int64
			sha256Hex *string
		}{{"points", p.Points.Name, &p.Points.Bytes, &p.Points.SHA256}, {"clients", p.Clients.Name, &p.Clients.Bytes, &p.Clients.SHA256}} {
			b, err := os.ReadFile(filepath.Join(dir, f.table, f.name))
			if err != nil {
				continue
			}
			sum := sha256.Sum256(b)
			*f.bytes, *f.sha256Hex = int64(len(b)), hex.EncodeToString(sum[:])
		}
	}
	if data, err = json.MarshalIndent(&m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// check cannot be fooled: each case exited 0 before.
func TestCheckRefusesWhatItCannotTrust(t *testing.T) {
	base := sweepRun(t, "trust", lessonScenario(t), "", checkGrid)
	expect := func(name string, wantCode int, want string, args ...string) {
		t.Helper()
		code, stdout, stderr := runCLI(t, append([]string{"check"}, args...)...)
		if code != wantCode || !strings.Contains(stderr+stdout, want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%s: exit %d, want %d with %q\nstdout: %s\nstderr: %s", name, code, wantCode, want, stdout, stderr)
		}
	}

	// The run lacks false_cut.
	noFalseCut := copyRun(t, base)
	eachPart(t, noFalseCut, func(s *arrow.Schema, cols []arrow.Array) (*arrow.Schema, []arrow.Array) {
		i := s.FieldIndices("false_cut")[0]
		fields := slices.Delete(slices.Clone(s.Fields()), i, i+1)
		md := s.Metadata()
		return arrow.NewSchema(fields, &md), slices.Delete(slices.Clone(cols), i, i+1)
	})
	expect("run without false_cut", 2, "lacks the baseline's metric column(s) false_cut", "--baseline", base, noFalseCut)

	// A killed baseline (no manifest): its missing points are not "added".
	killed := copyRun(t, base)
	if err := os.Remove(filepath.Join(killed, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	expect("incomplete baseline", 2, "the baseline "+killed+" has no manifest.json", "--baseline", killed, base)
	expect("incomplete run", 2, "the run "+killed+" has no manifest.json", "--baseline", base, killed)
	expect("incomplete, allowed", 0, "check ok: 72 points compared", "--baseline", killed, base, "--allow-incomplete")

	// Every row twice: not replicates.
	doubled := copyRun(t, base)
	eachPart(t, doubled, func(s *arrow.Schema, cols []arrow.Array) (*arrow.Schema, []arrow.Array) {
		n := cols[0].Len()
		idx := make([]int, 0, 2*n)
		for i := range n {
			idx = append(idx, i, i)
		}
		return s, takeRows(t, cols, idx)
	})
	expect("every row duplicated", 2, "144 rows, manifest.json says 72", "--baseline", base, doubled)
	expect("every baseline row duplicated", 2, "144 rows, manifest.json says 72", "--baseline", doubled, base)
	if err := os.Remove(filepath.Join(doubled, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	expect("every row duplicated, no manifest", 2, "replicate 0 is repeated", "--baseline", base, doubled, "--allow-incomplete")

	// A part listed twice (a leftover file under another name).
	leftover := copyRun(t, base)
	if err := os.Remove(filepath.Join(leftover, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(leftover, "points", "part-000000.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(leftover, "points", "part-000001.parquet"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	expect("a part twice", 2, "comes again", "--baseline", base, leftover, "--allow-incomplete")

	// NaN on both sides is no change.
	nanBase, nanRun := copyRun(t, base), copyRun(t, base)
	toNaN := func(s *arrow.Schema, cols []arrow.Array) (*arrow.Schema, []arrow.Array) {
		out := slices.Clone(cols)
		for _, name := range []string{"legit_cut_pct", "p99_delay_s"} {
			i := s.FieldIndices(name)[0]
			fb := array.NewFloat64Builder(memory.DefaultAllocator)
			for r := range cols[i].Len() {
				v, _ := sweep.Float(cols[i], r)
				if r%3 == 0 {
					v = nanValue()
				}
				fb.Append(v)
			}
			out[i] = fb.NewArray()
			fb.Release()
		}
		return s, out
	}
	eachPart(t, nanBase, toNaN)
	eachPart(t, nanRun, toNaN)
	// ratesweep writes no NaN: refused, as the other readers do, unless let
	// through; then NaN compares equal to NaN and differs from a number.
	expect("NaN refused", 2, "legit_cut_pct is NaN", "--baseline", nanBase, nanRun)
	expect("NaN = NaN", 0, "72 identical, 0 changed", "--baseline", nanBase, nanRun, "--allow-incomplete")
	expect("NaN ≠ a number", 1, "changed", "--baseline", base, nanRun, "--allow-incomplete")
}

func nanValue() float64 { var z float64; return z / z }

// takeRows returns the rows idx of every column.
func takeRows(t *testing.T, cols []arrow.Array, idx []int) []arrow.Array {
	t.Helper()
	out := make([]arrow.Array, len(cols))
	for c, col := range cols {
		b := array.NewBuilder(memory.DefaultAllocator, col.DataType())
		for _, i := range idx {
			if err := b.AppendValueFromString(col.ValueStr(i)); err != nil {
				t.Fatal(err)
			}
		}
		out[c] = b.NewArray()
		b.Release()
	}
	return out
}
