package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/ratesweep/ratesweep/model"
)

// writeParquet writes one row group: ts (timestamp ms), unix (int64 s),
// client (string), status (int32, one null), verdict (dictionary string).
func writeParquet(t *testing.T, path string) {
	t.Helper()
	mem := memory.DefaultAllocator
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "unix", Type: arrow.PrimitiveTypes.Int64},
		{Name: "client", Type: arrow.BinaryTypes.String},
		{Name: "status", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "verdict", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	ts := []arrow.Timestamp{1700000000250, 1700000000750, 1700000002000, 1700000003000}
	for i, v := range ts {
		b.Field(0).(*array.TimestampBuilder).Append(v)
		b.Field(1).(*array.Int64Builder).Append(int64(v) / 1000)
		b.Field(2).(*array.StringBuilder).Append([]string{"a", "a", "b", "c"}[i])
		if i == 3 {
			b.Field(3).(*array.Int32Builder).AppendNull()
		} else {
			b.Field(3).(*array.Int32Builder).Append([]int32{200, 401, 200}[i])
		}
		if err := b.Field(4).(*array.BinaryDictionaryBuilder).AppendString([]string{"legit", "code", "legit", "bogus"}[i]); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(schema, f, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestParquet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.parquet")
	writeParquet(t, path)
	opt := Options{Reader: ReaderOptions{Format: FormatParquet, CSV: CSVOptions{
		Columns: map[string]string{"time": "ts", "ip": "client", "status": "status", "label": "verdict"}}}}
	tr, err := Load(context.Background(), path, opt)
	if err != nil {
		t.Fatal(err)
	}
	// Row 4 has the label "bogus": malformed.
	if tr.Format != FormatParquet || tr.Requests() != 3 || tr.Stats.Lines != 4 || tr.Stats.Malformed != 1 ||
		tr.Stats.Samples[0].Line != 4 || !tr.SubSecond || len(tr.Keys) != 2 {
		t.Fatalf("traffic %+v", tr)
	}
	if k := tr.Keys[0]; k.Name != "a" || k.ByStage != [4]int64{1, 0, 1, 0} || tr.Times(0)[1] != 750_000_000 {
		t.Errorf("key %+v, times %v", k, tr.Times(0))
	}
	// Auto-detected from the magic bytes, with an int64 Unix-seconds column.
	opt.Reader.Format = FormatAuto
	opt.Reader.CSV.Columns = map[string]string{"time": "unix", "ip": "client"}
	opt.Rules = []Rule{{Name: "401", Stage: model.StageNone, Statuses: []StatusRange{{401, 401}}}}
	tr, err = Load(context.Background(), path, opt)
	if err != nil || tr.Requests() != 4 || tr.SubSecond || tr.Keys[0].Class != model.Legit {
		t.Fatalf("auto: %v %+v", err, tr)
	}
	opt.Reader.CSV.Columns["time"] = "nope"
	if _, err := Load(context.Background(), path, opt); err == nil || !strings.Contains(err.Error(), `log.parquet: no column "nope"`) {
		t.Errorf("missing column: %v", err)
	}
	opt.Reader.CSV.Columns = map[string]string{"time": "client"}
	if _, err := Load(context.Background(), path, opt); err == nil || !strings.Contains(err.Error(), "no valid requests") {
		t.Errorf("text time: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.parquet")
	os.WriteFile(bad, []byte("PAR1 not really"), 0o644)
	if _, err := Load(context.Background(), bad, Options{Reader: ReaderOptions{Format: FormatParquet, CSV: opt.Reader.CSV}}); err == nil || !strings.Contains(err.Error(), "not a readable Parquet file") {
		t.Errorf("bad parquet: %v", err)
	}
}

// A Parquet log's row count is read from its footer without closing the file.
func TestParquetRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.parquet")
	writeParquet(t, path)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := countLines(f); err != nil || n != 4 {
		t.Errorf("%d rows, %v", n, err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Errorf("the file was closed: %v", err)
	}
}
