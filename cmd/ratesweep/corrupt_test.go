package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// flipOffsets returns byte offsets inside a Parquet file's footer, the
// dictionary page of column dictCol and the data pages of column dataCol.
func flipOffsets(t *testing.T, path, dictCol, dataCol string) map[string]int64 {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	md := rdr.MetaData()
	rg := md.RowGroup(0)
	dict, err := rg.ColumnChunk(md.Schema.ColumnIndexByName(dictCol))
	if err != nil {
		t.Fatal(err)
	}
	data, err := rg.ColumnChunk(md.Schema.ColumnIndexByName(dataCol))
	if err != nil {
		t.Fatal(err)
	}
	if !dict.HasDictionaryPage() {
		t.Fatalf("%s has no dictionary page", dictCol)
	}
	dataEnd := data.DataPageOffset() + data.TotalCompressedSize()
	if data.HasDictionaryPage() {
		dataEnd = data.DictionaryPageOffset() + data.TotalCompressedSize()
	}
	footer := int64(md.Size())
	return map[string]int64{
		"footer":          st.Size() - 8 - footer + 2, // the schema list: structure, not text
		"dictionary page": (dict.DictionaryPageOffset() + dict.DataPageOffset()) / 2,
		"data page":       (data.DataPageOffset() + dataEnd) / 2,
	}
}

// A byte flipped in a part's footer, dictionary page or data page: every
// reader says the part is damaged (exit 1, naming it, no panic), and
// --resume recomputes it to the bytes of the undamaged run, with its
// manifest (sha256) and without (page checksums).
func TestCorruptPart(t *testing.T) {
	ref := sweepRun(t, "corrupt", lessonScenario(t), "", checkGrid)
	const part = "part-000000.parquet"
	want, err := os.ReadFile(filepath.Join(ref, "points", part))
	if err != nil {
		t.Fatal(err)
	}
	offsets := flipOffsets(t, filepath.Join(ref, "points", part), "algorithm", "missed")
	for where, off := range offsets {
		for _, keepManifest := range []bool{true, false} {
			dir := copyRun(t, ref)
			path := filepath.Join(dir, "points", part)
			b := bytes.Clone(want)
			b[off] ^= 0x5a
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if keepManifest {
				readers := [][]string{{"check", "--baseline", ref, dir}, {"check", "--baseline", dir, ref}, {"report", dir}}
				if where == "dictionary page" {
					readers = readers[2:] // check joins on policy: it never reads algorithm
				}
				for _, args := range readers {
					code, _, stderr := runCLI(t, args...)
					if code != 1 || !strings.Contains(stderr, part+" is damaged") || !strings.Contains(stderr, "--resume") || strings.Contains(stderr, "goroutine") {
						t.Errorf("%s flipped: %v: exit %d, stderr %q; want 1 naming the damaged part", where, args[0], code, stderr)
					}
				}
			} else if err := os.Remove(filepath.Join(dir, "manifest.json")); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCLI(t, "run", filepath.Join(filepath.Dir(ref), "spec.yaml"), "--out", dir, "--resume", "--quiet", "--workers", "2")
			if code != 0 {
				t.Errorf("%s flipped (manifest kept %v): run --resume: exit %d: %s", where, keepManifest, code, stderr)
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s flipped (manifest kept %v): --resume kept or wrote other bytes", where, keepManifest)
			}
		}
	}
}
