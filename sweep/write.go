package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/ratesweep/ratesweep/model"
)

// Writer settings (measured in shared/research/pipeline.md): zstd level 1,
// row groups of at most 1M rows, Parquet dictionaries only on low-cardinality
// columns, delta encoding on integer metrics, Arrow dictionary strings.
const (
	rowGroupRows = 1 << 20
	batchRows    = 64 * 1024
)

func writerProps() *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(1),
		parquet.WithMaxRowGroupLength(rowGroupRows),
		parquet.WithDictionaryDefault(false),
		parquet.WithStats(true),
		parquet.WithCreatedBy("ratesweep " + Version),
	}
	for _, c := range dictionaryColumns() {
		opts = append(opts, parquet.WithDictionaryFor(c, true))
	}
	for _, c := range deltaColumns() {
		opts = append(opts, parquet.WithEncodingFor(c, parquet.Encodings.DeltaBinaryPacked))
	}
	return parquet.NewWriterProperties(opts...)
}

// partResult holds one part's outcomes, rows ordered by (point_id, replicate).
type partResult struct {
	part     Part
	reps     int
	policies []model.Policy       // per point
	metrics  []model.Metrics      // per row = point × replicate
	clients  []model.ClientResult // per row × client
	names    []string             // client names (dictionary)
	classes  []model.Class        // per client
	stages   []model.Stage        // per client
	scratch  columnScratch        // reused between batches
	mem      memory.Allocator
}

func (r *partResult) rows() int { return len(r.metrics) }

type columnScratch struct {
	i64   []int64
	i32   []int32
	i8    []int8
	f64   []float64
	valid []bool
}

// fileMeta is what the writer reports for one finished file.
type fileMeta struct {
	Name   string `json:"file"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// writeParquet writes batches to dir/name through a temporary file and
// renames it into place only when complete and synced. A failure leaves no
// file under the final name.
func writeParquet(dir, name string, schema *arrow.Schema, rows int, batch func(lo, hi int) arrow.RecordBatch, hook func(path string) error) (fileMeta, error) {
	return writeParquetStream(dir, name, schema, func(fw *pqarrow.FileWriter) (int64, error) {
		for lo := 0; lo < rows; lo += batchRows {
			rec := batch(lo, min(lo+batchRows, rows))
			err := fw.WriteBuffered(rec)
			rec.Release()
			if err == nil && hook != nil {
				err = hook(filepath.Join(filepath.Base(dir), name))
			}
			if err != nil {
				return 0, err
			}
		}
		return int64(rows), nil
	})
}

// writeParquetStream writes dir/name like writeParquet, with the records
// that write gives the writer; write returns the number of rows written.
// The temporary file ".NAME.*.tmp" has a unique name, so two processes
// that write the same part by mistake (a shard started twice) each rename a
// complete file into place and never write into one file.
func writeParquetStream(dir, name string, schema *arrow.Schema, write func(fw *pqarrow.FileWriter) (int64, error)) (fm fileMeta, err error) {
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return fm, err
	}
	tmp := f.Name()
	if err = os.Chmod(tmp, 0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return fm, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	fw, err := pqarrow.NewFileWriter(schema, cw, writerProps(),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return fm, err
	}
	rows, err := write(fw)
	if err != nil {
		fw.Close()
		return fm, err
	}
	if err = fw.Close(); err != nil {
		return fm, err
	}
	if err = f.Sync(); err != nil {
		return fm, err
	}
	if err = f.Close(); err != nil {
		return fm, err
	}
	if err = os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fm, err
	}
	syncDir(dir)
	return fileMeta{Name: name, Rows: rows, Bytes: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func (r *partResult) int64Array(n int, fill func(i int) int64) arrow.Array {
	b := array.NewInt64Builder(r.mem)
	defer b.Release()
	r.scratch.i64 = grow(r.scratch.i64, n)
	for i := range n {
		r.scratch.i64[i] = fill(i)
	}
	b.AppendValues(r.scratch.i64, nil)
	return b.NewArray()
}

// nullableInt64Array builds an int64 array whose rows fill reports invalid
// are null.
func (r *partResult) nullableInt64Array(n int, fill func(i int) (int64, bool)) arrow.Array {
	b := array.NewInt64Builder(r.mem)
	defer b.Release()
	r.scratch.i64 = grow(r.scratch.i64, n)
	valid := make([]bool, n)
	for i := range n {
		r.scratch.i64[i], valid[i] = fill(i)
	}
	b.AppendValues(r.scratch.i64, valid)
	return b.NewArray()
}

func (r *partResult) float64Array(n int, fill func(i int) float64) arrow.Array {
	b := array.NewFloat64Builder(r.mem)
	defer b.Release()
	r.scratch.f64 = grow(r.scratch.f64, n)
	for i := range n {
		r.scratch.f64[i] = fill(i)
	}
	b.AppendValues(r.scratch.f64, nil)
	return b.NewArray()
}

func (r *partResult) int32Array(n int, fill func(i int) int32) arrow.Array {
	b := array.NewInt32Builder(r.mem)
	defer b.Release()
	r.scratch.i32 = grow(r.scratch.i32, n)
	for i := range n {
		r.scratch.i32[i] = fill(i)
	}
	b.AppendValues(r.scratch.i32, nil)
	return b.NewArray()
}

// dict8 builds a dictionary<int8, utf8> array; index -1 is null.
func (r *partResult) dict8(n int, values []string, idx func(i int) int8) arrow.Array {
	b := array.NewInt8Builder(r.mem)
	defer b.Release()
	r.scratch.i8 = grow(r.scratch.i8, n)
	r.scratch.valid = grow(r.scratch.valid, n)
	hasNull := false
	for i := range n {
		v := idx(i)
		r.scratch.valid[i] = v >= 0
		hasNull = hasNull || v < 0
		r.scratch.i8[i] = max(v, 0)
	}
	if hasNull {
		b.AppendValues(r.scratch.i8, r.scratch.valid)
	} else {
		b.AppendValues(r.scratch.i8, nil)
	}
	return r.dictArray(dictInt8, b.NewArray(), values)
}

func (r *partResult) dictArray(typ *arrow.DictionaryType, indices arrow.Array, values []string) arrow.Array {
	sb := array.NewStringBuilder(r.mem)
	defer sb.Release()
	sb.AppendValues(values, nil)
	dict := sb.NewArray()
	defer dict.Release()
	defer indices.Release()
	return array.NewDictionaryArray(typ, indices, dict)
}

func algorithmNames() []string {
	out := make([]string, len(model.Algorithms))
	for i, a := range model.Algorithms {
		out[i] = a.String()
	}
	return out
}

func algorithmIndex(a model.Algorithm) int8 { return int8(slices.Index(model.Algorithms, a)) }

// pointsBatch builds points rows [lo, hi) of the part.
func (r *partResult) pointsBatch(schema *arrow.Schema, lo, hi int) arrow.RecordBatch {
	n := hi - lo
	pol := func(i int) *model.Policy { return &r.policies[(lo+i)/r.reps] }
	met := func(i int) *model.Metrics { return &r.metrics[lo+i] }
	cols := []arrow.Array{
		r.int64Array(n, func(i int) int64 { return r.part.From + int64((lo+i)/r.reps) }),
		r.int32Array(n, func(i int) int32 { return int32((lo + i) % r.reps) }),
		r.dict8(n, algorithmNames(), func(i int) int8 { return algorithmIndex(pol(i).Algorithm) }),
	}
	for _, prm := range model.Params {
		cols = append(cols, r.paramArray(n, prm, pol))
	}
	for _, m := range intMetrics {
		cols = append(cols, r.int64Array(n, func(i int) int64 { return *m.field(met(i)) }))
	}
	for _, m := range pctMetrics {
		cols = append(cols, r.float64Array(n, func(i int) float64 { return *m.field(met(i)) }))
	}
	for _, m := range stageMetrics {
		cols = append(cols, r.int64Array(n, func(i int) int64 { return *m.field(met(i)) }))
	}
	for _, m := range tailMetrics {
		cols = append(cols, r.float64Array(n, func(i int) float64 { return *m.field(met(i)) }))
	}
	for _, m := range accountMetrics {
		cols = append(cols, r.int64Array(n, func(i int) int64 { return *m.field(met(i)) }))
	}
	for _, m := range stateMetrics {
		cols = append(cols, r.nullableInt64Array(n, func(i int) (int64, bool) { return *m.field(met(i)), met(i).StateMeasured }))
	}
	return releaseAfter(array.NewRecordBatch(schema, cols, int64(n)), cols)
}

func (r *partResult) paramArray(n int, prm model.Param, pol func(i int) *model.Policy) arrow.Array {
	r.scratch.valid = grow(r.scratch.valid, n)
	for i := range n {
		r.scratch.valid[i] = pol(i).Algorithm.Takes(prm.Name)
	}
	valid := slices.Clone(r.scratch.valid)
	if prm.Values != nil {
		return r.dict8(n, prm.Values, func(i int) int8 {
			if !valid[i] {
				return -1
			}
			return int8(pol(i).Value(prm.Name))
		})
	}
	if prm.Int {
		b := array.NewInt64Builder(r.mem)
		defer b.Release()
		r.scratch.i64 = grow(r.scratch.i64, n)
		for i := range n {
			r.scratch.i64[i] = int64(pol(i).Value(prm.Name))
		}
		b.AppendValues(r.scratch.i64, valid)
		return b.NewArray()
	}
	b := array.NewFloat64Builder(r.mem)
	defer b.Release()
	r.scratch.f64 = grow(r.scratch.f64, n)
	for i := range n {
		r.scratch.f64[i] = pol(i).Value(prm.Name)
	}
	b.AppendValues(r.scratch.f64, valid)
	return b.NewArray()
}

// clientsBatch builds clients rows [lo, hi) of the part.
func (r *partResult) clientsBatch(schema *arrow.Schema, lo, hi int) arrow.RecordBatch {
	n := hi - lo
	nc := len(r.names)
	row := func(i int) int { return (lo + i) / nc }
	cl := func(i int) int { return (lo + i) % nc }
	res := func(i int) *model.ClientResult { return &r.clients[lo+i] }
	b := array.NewInt32Builder(r.mem)
	r.scratch.i32 = grow(r.scratch.i32, n)
	for i := range n {
		r.scratch.i32[i] = int32(cl(i))
	}
	b.AppendValues(r.scratch.i32, nil)
	clientIdx := b.NewArray()
	b.Release()
	cols := []arrow.Array{
		r.int64Array(n, func(i int) int64 { return r.part.From + int64(row(i)/r.reps) }),
		r.int32Array(n, func(i int) int32 { return int32(row(i) % r.reps) }),
		r.dictArray(dictInt32, clientIdx, r.names),
		r.dict8(n, []string{"legit", "abusive"}, func(i int) int8 { return int8(r.classes[cl(i)]) }),
		r.dict8(n, []string{"design", "code", "none"}, func(i int) int8 { return int8(r.stages[cl(i)]) - 1 }),
		r.int64Array(n, func(i int) int64 { return res(i).Offered }),
		r.int64Array(n, func(i int) int64 { return res(i).Admitted }),
		r.int64Array(n, func(i int) int64 { return res(i).Cut() }),
	}
	return releaseAfter(array.NewRecordBatch(schema, cols, int64(n)), cols)
}

func releaseAfter(rec arrow.RecordBatch, cols []arrow.Array) arrow.RecordBatch {
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// schemas returns the points and clients schemas carrying the run metadata.
func schemas(meta map[string]string) (points, clients *arrow.Schema) {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = meta[k]
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(pointsFields(), &md), arrow.NewSchema(clientsFields(), &md)
}

// writePart writes the part's points and clients files. The clients file is
// renamed into place first: a part counts as done once its points file exists
// (and both verify).
func writePart(dir string, r *partResult, points, clients *arrow.Schema, hook func(path string) error) (pm, cm fileMeta, err error) {
	name := r.part.Name()
	cm, err = writeParquet(filepath.Join(dir, "clients"), name, clients, len(r.clients),
		func(lo, hi int) arrow.RecordBatch { return r.clientsBatch(clients, lo, hi) }, hook)
	if err != nil {
		return pm, cm, fmt.Errorf("writing clients/%s: %w", name, err)
	}
	pm, err = writeParquet(filepath.Join(dir, "points"), name, points, r.rows(),
		func(lo, hi int) arrow.RecordBatch { return r.pointsBatch(points, lo, hi) }, hook)
	if err != nil {
		return pm, cm, fmt.Errorf("writing points/%s: %w", name, err)
	}
	return pm, cm, nil
}
