package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/ratesweep/ratesweep/model"
)

// Writer settings (chosen by measuring the writer on sweeps): zstd level 1,
// row groups of at most 1M rows, Parquet dictionaries only on low-cardinality
// columns, delta encoding on integer metrics, Arrow dictionary strings.
// Columns of Arrow dictionary strings carry no statistics: arrow-go computes
// them with a hash of every batch's indices (15% of the writer's CPU), and no
// reader of ours prunes on them.
const (
	rowGroupRows    = 1 << 20
	batchRows       = 64 * 1024
	pointsBatchRows = 32 * 1024
	writerZstdLevel = 1 // zstd.go
)

// writerProps are the Parquet writer's settings, built once (they are
// read-only), with its buffers from writerPool (pool.go).
var writerProps = sync.OnceValue(func() *parquet.WriterProperties { return newWriterProps(writerPool) })

// newWriterProps are the writer's settings with buffers from mem.
func newWriterProps(mem memory.Allocator) *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(writerZstdLevel),
		parquet.WithMaxRowGroupLength(rowGroupRows),
		parquet.WithDictionaryDefault(false),
		parquet.WithStats(true),
		parquet.WithCreatedBy("ratesweep " + Version),
		parquet.WithAllocator(mem),
	}
	for _, c := range dictionaryColumns() {
		opts = append(opts, parquet.WithDictionaryFor(c, true))
	}
	for _, c := range deltaColumns() {
		opts = append(opts, parquet.WithEncodingFor(c, parquet.Encodings.DeltaBinaryPacked))
	}
	for _, c := range noStatsColumns() {
		opts = append(opts, parquet.WithStatsFor(c, false))
	}
	// Labels of neighbouring points share long prefixes.
	opts = append(opts, parquet.WithEncodingFor(PolicyColumn, parquet.Encodings.DeltaByteArray))
	return parquet.NewWriterProperties(opts...)
}

// partResult holds one part's outcomes, rows ordered by (point_id, replicate).
type partResult struct {
	part Part
	reps int
	// The points' policies for prepareParams (a part result filled by
	// hand; simulatePart makes them a chunk at a time: chunkPolicies, and
	// Grid.Policies' changed beside them), and each point's algorithm
	// (algorithmIndex) for the batches.
	policies      []model.Policy
	changed       []int8
	chunkPolicies []model.Policy
	chunkChanged  []int8
	algs          []int8
	params        []paramColumn // per parameter some point takes (prepareParams)
	paramCol      []int         // per parameter: its index in params, or -1
	paramValid    [][]byte      // the validity bitmaps of params, kept between parts
	// beginParams' plan for fillParams: the columns by kind, which
	// parameters each algorithm takes, one point's values.
	ints, floats, enums, partial []*paramColumn
	common                       []*paramColumn // ints, floats and enums
	takes                        [256][]bool
	row                          []float64
	labels                       model.LabelAppender
	// prepare asks simulatePart to fill the parameter columns and labels
	// as it simulates (when the part is written); prepared says they are.
	prepare, prepared bool
	names             []string      // client names (dictionary)
	classes           []model.Class // per client
	stages            []model.Stage // per client
	scratch           columnScratch // reused between batches
	// clientCols are the clients file's periodic columns, built once per
	// worker (names, classes and stages do not change between parts).
	clientCols clientColumns

	// The results, column-wise as the files lay them out (the batches take
	// windows of them, no copy; the cut column is offered − admitted, made
	// per batch: cutRows). A row is a point × replicate; a client row is a
	// row × client.
	nrows       int
	metricWords [][]uint64 // per metric column (metricColumns): each row's value, its 8 bytes
	measured    []byte     // per row: its state was measured (the state columns are valid)
	unmeasured  int        // rows whose state was not measured
	offered     []int64    // per client row
	admitted    []int64
	blocked     []int64 // per client row, ns: empty until a row has a block (blocks.go)

	scratchClients []model.ClientResult // one point's, for pointSim.run
	react          reactColumns         // clients that react (reactions.go)
	cost           costColumns          // requests that carry costs (costcols.go)
	fastRun        model.FastRun        // fastSim.runFast's columns

	// Columns kept as one value (setRow): seen says a row was stored,
	// stored is one past the highest row stored so far (a column that
	// starts to vary is written out up to there: later rows are stored in
	// turn).
	seen         bool
	stored       int
	metricSame   [metricWordCount]bool
	metricFirst  [metricWordCount]uint64
	offeredSame  bool
	offeredFirst []int64    // per client
	constWords   [][]uint64 // per metric column: a buffer of its one value (batches)
	offeredRun   []int64    // offeredFirst repeated (batches)

	// The points' policy labels in Arrow string layout, built on first use
	// for part labelsOf.
	labelOffsets []int32
	labelData    []byte
	labelsOf     Part
	labelsValid  bool
	mem          memory.Allocator
}

func (r *partResult) rows() int { return r.nrows }

// metricWordCount is the number of metric columns (metricColumns).
const metricWordCount = 19

// clientRows is the number of clients rows.
func (r *partResult) clientRows() int { return len(r.offered) }

// reset sizes the columns for n points (of r.reps replicates each).
func (r *partResult) reset(n int) {
	r.nrows = n * r.reps
	mc := metricColumns()
	r.metricWords = grow(r.metricWords, len(mc))
	for c := range mc {
		r.metricWords[c] = grow(r.metricWords[c], r.nrows)
	}
	r.measured = grow(r.measured, int(bitutil.BytesForBits(int64(r.nrows))))
	clear(r.measured)
	r.unmeasured = 0
	r.prepared = false
	nc := r.nrows * len(r.names)
	r.offered, r.admitted = grow(r.offered, nc), grow(r.admitted, nc)
	r.seen, r.stored = false, 0
	r.offeredSame = true
	r.offeredFirst = grow(r.offeredFirst, len(r.names))
	r.blocked = r.blocked[:0]
	r.react.reset(r.nrows, len(r.names))
	r.cost.reset(r.nrows, len(r.names))
}

// setRow stores row's results: its clients' and its metrics. A metric
// column that holds one value in every row so far, and the offered column
// while it repeats one value per client, are not stored but kept as that
// value (many metrics are fixed for a part: offered totals, the delays of
// a limiter that does not shape, unmeasured state); a column is written out
// the first time a row differs.
func (r *partResult) setRow(row int, clients []model.ClientResult, m *model.Metrics) {
	// In metricColumns' order (TestSetRowFollowsMetricColumns).
	vals := [metricWordCount]uint64{
		uint64(m.OfferedLegit), uint64(m.OfferedAbusive), uint64(m.Caught), uint64(m.Missed), uint64(m.FalseCut),
		math.Float64bits(m.LegitCutPct), math.Float64bits(m.MissedPct),
		uint64(m.CutDesign), uint64(m.CutCode), uint64(m.CutNone),
		math.Float64bits(m.OnlyHerePct), math.Float64bits(m.MeanDelayS), math.Float64bits(m.P99DelayS),
		uint64(m.LegitAccounts), uint64(m.LegitAccountsLocked),
		math.Float64bits(m.LegitBlockedS), uint64(m.Blocks),
		uint64(m.StateKeysPeak), uint64(m.StateBytesPeak),
	}
	if !r.seen {
		r.seen, r.metricFirst = true, vals
		for c := range r.metricSame {
			r.metricSame[c] = true
		}
		for i, c := range clients {
			r.offeredFirst[i] = c.Offered
		}
	}
	w := r.metricWords[:metricWordCount]
	for c, v := range vals {
		if r.metricSame[c] {
			if v == r.metricFirst[c] {
				continue
			}
			r.metricVaries(c)
		}
		w[c][row] = v
	}
	if m.StateMeasured {
		bitutil.SetBit(r.measured, row)
	} else {
		r.unmeasured++
	}
	k := row * len(clients)
	if r.offeredSame {
		for i, c := range clients {
			if c.Offered != r.offeredFirst[i] {
				r.offeredVaries()
				break
			}
		}
	}
	if !r.offeredSame {
		offered := r.offered[k : k+len(clients)]
		for i, c := range clients {
			offered[i] = c.Offered
		}
	}
	admitted := r.admitted[k : k+len(clients)]
	for i, c := range clients {
		admitted[i] = c.Admitted
	}
	r.setBlocked(k, clients)
	r.stored = max(r.stored, row+1)
}

// metricVaries writes metric column c out: every row so far held
// metricFirst[c] (rows not yet stored are written when they are).
func (r *partResult) metricVaries(c int) {
	col := r.metricWords[c][:r.stored]
	for i := range col {
		col[i] = r.metricFirst[c]
	}
	r.metricSame[c] = false
}

// offeredVaries writes the offered column out: every row so far repeated
// offeredFirst.
func (r *partResult) offeredVaries() {
	nc := len(r.offeredFirst)
	for k := 0; k < r.stored*nc; k += nc {
		copy(r.offered[k:k+nc], r.offeredFirst)
	}
	r.offeredSame = false
}

// metricWord is metric column c of row.
func (r *partResult) metricWord(c, row int) uint64 {
	if r.metricSame[c] {
		return r.metricFirst[c]
	}
	return r.metricWords[c][row]
}

// offeredAt is the offered column at client row k.
func (r *partResult) offeredAt(k int) int64 {
	if r.offeredSame {
		return r.offeredFirst[k%len(r.offeredFirst)]
	}
	return r.offered[k]
}

// falseCut is Σ false_cut over the part's rows.
func (r *partResult) falseCut() (sum int64) {
	c := falseCutColumn()
	if r.metricSame[c] {
		return int64(r.metricFirst[c]) * int64(r.nrows)
	}
	for _, w := range r.metricWords[c][:r.nrows] {
		sum += int64(w)
	}
	return sum
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
// file under the final name. The directory is not synced: Run syncs each
// directory once before it writes the manifest (syncDir), which is what makes
// the renames durable; until then a part lost by a power cut is recomputed
// on --resume like any unfinished part.
func writeParquet(dir, name string, schema *arrow.Schema, rows, step int, batch func(lo, hi int) arrow.RecordBatch, hook func(path string) error) (fileMeta, error) {
	return writeParquetFile(dir, name, schema, false, func(fw *pqarrow.FileWriter) (int64, error) {
		for lo := 0; lo < rows; lo += step {
			rec := batch(lo, min(lo+step, rows))
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
	return writeParquetFile(dir, name, schema, true, write)
}

// writeParquetFile is writeParquetStream; with syncDirAfter false it leaves
// the directory sync to the caller.
func writeParquetFile(dir, name string, schema *arrow.Schema, syncDirAfter bool, write func(fw *pqarrow.FileWriter) (int64, error)) (fm fileMeta, err error) {
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return fm, err
	}
	tmp := f.Name()
	if err = os.Chmod(tmp, filePerm); err != nil {
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
	if syncDirAfter {
		syncDir(dir)
	}
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
	r.prepareParams()
	cm, err = writeParquet(filepath.Join(dir, "clients"), name, clients, r.clientRows(), batchRows,
		func(lo, hi int) arrow.RecordBatch { return r.clientsBatch(clients, lo, hi) }, hook)
	if err != nil {
		return pm, cm, fmt.Errorf("writing clients/%s: %w", name, err)
	}
	pm, err = writeParquet(filepath.Join(dir, "points"), name, points, r.rows(), pointsBatchRows,
		func(lo, hi int) arrow.RecordBatch { return r.pointsBatch(points, lo, hi) }, hook)
	if err != nil {
		return pm, cm, fmt.Errorf("writing points/%s: %w", name, err)
	}
	return pm, cm, nil
}

// fastFields are the metric columns a model.FastRun holds per point: the
// field's offset in model.Metrics and the FastRun column of it, as words.
var fastFields = func() []fastField {
	var m model.Metrics
	return []fastField{
		{unsafe.Offsetof(m.Caught), func(d *model.FastRun) []uint64 { return int64Words(d.Caught) }},
		{unsafe.Offsetof(m.Missed), func(d *model.FastRun) []uint64 { return int64Words(d.Missed) }},
		{unsafe.Offsetof(m.FalseCut), func(d *model.FastRun) []uint64 { return int64Words(d.FalseCut) }},
		{unsafe.Offsetof(m.CutDesign), func(d *model.FastRun) []uint64 { return int64Words(d.CutDesign) }},
		{unsafe.Offsetof(m.CutCode), func(d *model.FastRun) []uint64 { return int64Words(d.CutCode) }},
		{unsafe.Offsetof(m.CutNone), func(d *model.FastRun) []uint64 { return int64Words(d.CutNone) }},
		{unsafe.Offsetof(m.LegitAccountsLocked), func(d *model.FastRun) []uint64 { return int64Words(d.LegitAccountsLocked) }},
		{unsafe.Offsetof(m.LegitCutPct), func(d *model.FastRun) []uint64 { return float64Words(d.LegitCutPct) }},
		{unsafe.Offsetof(m.MissedPct), func(d *model.FastRun) []uint64 { return float64Words(d.MissedPct) }},
		{unsafe.Offsetof(m.OnlyHerePct), func(d *model.FastRun) []uint64 { return float64Words(d.OnlyHerePct) }},
	}
}()

type fastField struct {
	offset uintptr
	column func(*model.FastRun) []uint64
}

// fastFieldOf is, per metric column, its index in fastFields or -1.
var fastFieldOf = sync.OnceValue(func() (t [metricWordCount]int) {
	for c, mc := range metricColumns() {
		t[c] = slices.IndexFunc(fastFields, func(f fastField) bool { return f.offset == mc.offset })
	}
	return t
})

// fastColumns gives, per metric column, d's column of it, or nil where the
// metric is d.Fixed's.
func fastColumns(d *model.FastRun) (cols [metricWordCount][]uint64) {
	for c, k := range fastFieldOf() {
		if k >= 0 {
			cols[c] = fastFields[k].column(d)
		}
	}
	return cols
}

func int64Words(s []int64) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

func float64Words(s []float64) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// setFastRun stores the results of points first, first+1, … first+n-1 of
// replicate rep that model.Simulator.RunFastCols wrote into d, whose
// Admitted are the part's own (the rows' clients, Stride apart): setRow
// for every point, a column at a time.
func (r *partResult) setFastRun(first, rep, n int, d *model.FastRun) {
	mc := metricColumns()
	cols := fastColumns(d)
	fixed := unsafe.Pointer(&d.Fixed)
	word := func(c int) uint64 {
		if cols[c] != nil {
			return cols[c][0]
		}
		return *(*uint64)(unsafe.Add(fixed, mc[c].offset))
	}
	offered := d.Offered[:len(r.offeredFirst)]
	if !r.seen {
		r.seen = true
		for c := range r.metricSame {
			r.metricSame[c], r.metricFirst[c] = true, word(c)
		}
		copy(r.offeredFirst, offered)
	}
	base, reps := first*r.reps+rep, r.reps
	for c := range mc {
		w := r.metricWords[c]
		if cols[c] == nil {
			v := word(c)
			if r.metricSame[c] {
				if v == r.metricFirst[c] {
					continue
				}
				r.metricVaries(c)
			}
			for k := range n {
				w[base+k*reps] = v
			}
			continue
		}
		src := cols[c][:n]
		if r.metricSame[c] {
			k, v := 0, r.metricFirst[c]
			for k < n && src[k] == v {
				k++
			}
			if k == n {
				continue
			}
			r.metricVaries(c)
		}
		if reps == 1 {
			copy(w[base:base+n], src)
			continue
		}
		for k, v := range src {
			w[base+k*reps] = v
		}
	}
	if d.Fixed.StateMeasured {
		for k := range n {
			bitutil.SetBit(r.measured, base+k*reps)
		}
	} else {
		r.unmeasured += n
	}
	if r.offeredSame && !slices.Equal(offered, r.offeredFirst) {
		r.offeredVaries()
	}
	r.stored = max(r.stored, base+(n-1)*reps+1)
	if !r.offeredSame {
		nc := len(offered)
		for k := range n {
			kk := (base + k*reps) * nc
			copy(r.offered[kk:kk+nc], offered)
		}
	}
}
