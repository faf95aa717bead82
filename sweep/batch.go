package sweep

import (
	"slices"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ratesweep/ratesweep/model"
)

// Record batches are built without Arrow builders: each column's values are
// filled into a Go slice that the Arrow array points at (no copy). The
// slices are reused from batch to batch, which is safe because
// FileWriter.WriteBuffered encodes (copies) a batch's values before it
// returns; dictionaries, which the writer keeps, are built once per part
// result and never reused for other values.

// dictArray returns a dictionary array of indices over values.
func (r *partResult) dictArray(typ *arrow.DictionaryType, indices arrow.Array, values []string) arrow.Array {
	defer indices.Release()
	return array.NewDictionaryArray(typ, indices, r.scratch.dictionary(r.mem, typ, values))
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
	s := &r.scratch
	s.reset()
	ids, algs := s.int64s(n), s.int8s(n)
	var reps []int32
	if r.reps > 1 {
		reps = s.int32s(n)
	}
	pt, rep := lo/r.reps, lo%r.reps // counters, not a division per row
	for i := range n {
		ids[i], algs[i] = r.part.From+int64(pt), r.algs[pt]
		if reps != nil {
			reps[i] = int32(rep)
		}
		if rep++; rep == r.reps {
			rep, pt = 0, pt+1
		}
	}
	repCol := s.zeroInt32s(n) // one replicate: all 0
	if reps != nil {
		repCol = primitive(arrow.PrimitiveTypes.Int32, reps, nil, 0)
	}
	cols := []arrow.Array{
		primitive(arrow.PrimitiveTypes.Int64, ids, nil, 0),
		repCol,
		r.dictArray(dictInt8, primitive(arrow.PrimitiveTypes.Int8, algs, nil, 0), algorithmNames()),
	}
	for j := range model.Params {
		cols = append(cols, r.paramArray(lo, n, j))
	}
	cols = r.metricArrays(cols, lo, n)
	cols = append(cols, r.policyArray(lo, n))
	cols = r.react.pointArrays(cols, lo, n)
	cols = r.cost.pointArrays(cols, lo, n)
	return releaseAfter(array.NewRecordBatch(schema, cols, int64(n)), cols)
}

// policyArray is the policy column of rows [lo, lo+n): each point's
// canonical label, formatted once per part.
func (r *partResult) policyArray(lo, n int) arrow.Array {
	if !r.labelsValid || r.labelsOf != r.part {
		r.prepareParams()
	}
	s := &r.scratch
	offs := s.int32s(n + 1)
	var data []byte
	if r.reps == 1 { // a contiguous slice of the part's labels
		first := r.labelOffsets[lo]
		for i := range offs {
			offs[i] = r.labelOffsets[lo+i] - first
		}
		data = r.labelData[first:r.labelOffsets[lo+n]]
	} else {
		for i := range n {
			pt := (lo + i) / r.reps
			offs[i] = int32(len(data))
			data = append(data, r.labelData[r.labelOffsets[pt]:r.labelOffsets[pt+1]]...)
		}
		offs[n] = int32(len(data))
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(offs))), len(offs)*4)
	d := array.NewData(arrow.BinaryTypes.String, n,
		[]*memory.Buffer{nil, memory.NewBufferBytes(raw), memory.NewBufferBytes(data)}, nil, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// metricColumns lists the points metric columns in schema order (after the
// parameters): each one's type and the offset of its field in
// model.Metrics. Every metric is an 8-byte word (int64 or float64), so the
// batches copy them as words.
var metricColumns = sync.OnceValue(func() (cols []metricColumn) {
	var m model.Metrics
	base := uintptr(unsafe.Pointer(&m))
	ints := func(ms []intMetric) {
		for _, im := range ms {
			cols = append(cols, metricColumn{arrow.PrimitiveTypes.Int64, uintptr(unsafe.Pointer(im.field(&m))) - base, im.name})
		}
	}
	floats := func(ms []floatMetric) {
		for _, fm := range ms {
			cols = append(cols, metricColumn{arrow.PrimitiveTypes.Float64, uintptr(unsafe.Pointer(fm.field(&m))) - base, fm.name})
		}
	}
	ints(intMetrics)
	floats(pctMetrics)
	ints(stageMetrics)
	floats(tailMetrics)
	ints(accountMetrics)
	floats(blockTimeMetrics)
	ints(blockCountMetrics)
	ints(stateMetrics)
	return cols
})

type metricColumn struct {
	typ    arrow.DataType // Int64 or Float64
	offset uintptr        // of the field in model.Metrics
	name   string         // the column's name
}

// metricArrays appends the metric columns of rows [lo, lo+n) to cols:
// windows of the part's columns; stateMetrics are null where the state was
// not measured.
func (r *partResult) metricArrays(cols []arrow.Array, lo, n int) []arrow.Array {
	mc := metricColumns()
	firstState := len(mc) - len(stateMetrics)
	for c, m := range mc {
		var valid []byte
		nulls := 0
		if c >= firstState {
			valid, nulls = r.measured, r.unmeasured
		}
		words := r.metricWords[c]
		from := lo
		if r.metricSame[c] { // one value in every row: a buffer of it
			words, from = r.constColumn(c, n), 0
		}
		if valid != nil && from != lo { // the bitmap stays the part's: a copy at offset 0
			v := r.scratch.bitmap(n)
			bitutil.CopyBitmap(valid, lo, n, v, 0)
			valid = v
		}
		cols = append(cols, window(m.typ, uint64Bytes(words), valid, nulls, from, n))
	}
	return cols
}

// constColumn is a buffer of at least n copies of metric column c's one
// value, kept between batches.
func (r *partResult) constColumn(c, n int) []uint64 {
	for len(r.constWords) <= c {
		r.constWords = append(r.constWords, nil)
	}
	b := r.constWords[c]
	if len(b) < n || b[0] != r.metricFirst[c] {
		b = grow(b, max(n, pointsBatchRows))
		for i := range b {
			b[i] = r.metricFirst[c]
		}
		r.constWords[c] = b
	}
	return b
}

// falseCutColumn is the index of false_cut in metricColumns.
var falseCutColumn = sync.OnceValue(func() int {
	var m model.Metrics
	off := uintptr(unsafe.Pointer(&m.FalseCut)) - uintptr(unsafe.Pointer(&m))
	for c, mc := range metricColumns() {
		if mc.offset == off {
			return c
		}
	}
	panic("sweep: no false_cut metric column")
})

// clientsBatch builds clients rows [lo, hi) of the part.
func (r *partResult) clientsBatch(schema *arrow.Schema, lo, hi int) arrow.RecordBatch {
	n := hi - lo
	nc := len(r.names)
	s := &r.scratch
	s.reset()
	ids := s.int64s(n)
	var reps []int32
	if r.reps > 1 {
		reps = s.int32s(n)
	}
	row, c := lo/nc, lo%nc // counters, not a division per row
	id, rep := r.part.From+int64(row/r.reps), int32(row%r.reps)
	for i := 0; i < n; {
		// A row's nc clients (from c on), then the next row.
		k := min(nc-c, n-i)
		for j := range ids[i : i+k] {
			ids[i+j] = id
		}
		if reps != nil {
			for j := range reps[i : i+k] {
				reps[i+j] = rep
			}
		}
		i, c = i+k, 0
		if rep++; int(rep) == r.reps {
			rep = 0
			id++
		}
	}
	repCol := s.zeroInt32s(n) // one replicate: all 0
	if reps != nil {
		repCol = primitive(arrow.PrimitiveTypes.Int32, reps, nil, 0)
	}
	// The client, class and stage columns repeat with period nc: they are
	// windows of one pattern per worker, starting at lo's phase. The
	// offered, admitted and cut columns are windows of the part's.
	pat := r.clientPattern(n)
	phase := lo % nc
	cols := []arrow.Array{
		primitive(arrow.PrimitiveTypes.Int64, ids, nil, 0),
		repCol,
		r.dictArray(dictInt32, window(arrow.PrimitiveTypes.Int32, int32Bytes(pat.client), nil, 0, phase, n), r.names),
		r.dictArray(dictInt8, window(arrow.PrimitiveTypes.Int8, int8Bytes(pat.class), nil, 0, phase, n), []string{"legit", "abusive"}),
		r.dictArray(dictInt8, window(arrow.PrimitiveTypes.Int8, int8Bytes(pat.stage), pat.stageValid, pat.stageNulls, phase, n), []string{"design", "code", "none"}),
		r.offeredArray(lo, n),
		window(arrow.PrimitiveTypes.Int64, int64Bytes(r.admitted), nil, 0, lo, n),
		primitive(arrow.PrimitiveTypes.Int64, r.cutRows(s.int64s(n), lo), nil, 0),
		r.blockedArray(lo, n),
	}
	cols = r.react.clientArrays(cols, lo, n)
	cols = r.cost.clientArrays(cols, lo, n)
	return releaseAfter(array.NewRecordBatch(schema, cols, int64(n)), cols)
}

// cutRows fills dst with the cut column of clients rows [lo, lo+len(dst)):
// offered − admitted, made per batch (in the cache as the writer reads it)
// rather than stored for the part.
func (r *partResult) cutRows(dst []int64, lo int) []int64 {
	adm := r.admitted[lo : lo+len(dst)]
	if !r.offeredSame {
		for i, o := range r.offered[lo : lo+len(dst)] {
			dst[i] = o - adm[i]
		}
		return dst
	}
	nc := len(r.offeredFirst)
	for i, c := 0, lo%nc; i < len(dst); {
		k := min(nc-c, len(dst)-i) // a row's clients from c on
		for j, o := range r.offeredFirst[c : c+k] {
			dst[i+j] = o - adm[i+j]
		}
		i, c = i+k, 0
	}
	return dst
}

// offeredArray is the offered column of clients rows [lo, lo+n): a window
// of the part's, or of offeredFirst repeated while it held one value per
// client.
func (r *partResult) offeredArray(lo, n int) arrow.Array {
	if !r.offeredSame {
		return window(arrow.PrimitiveTypes.Int64, int64Bytes(r.offered), nil, 0, lo, n)
	}
	nc := len(r.offeredFirst)
	if len(r.offeredRun) < n+nc || !slices.Equal(r.offeredRun[:nc], r.offeredFirst) {
		r.offeredRun = grow(r.offeredRun, max(n, batchRows)+nc)
		for k := range r.offeredRun {
			r.offeredRun[k] = r.offeredFirst[k%nc]
		}
	}
	return window(arrow.PrimitiveTypes.Int64, int64Bytes(r.offeredRun), nil, 0, lo%nc, n)
}

// clientColumns are the client, class and stage columns of clients rows
// 0, 1, 2, … (client i mod nc), long enough for a batch of n rows from any
// phase; arrays over them are read-only windows.
type clientColumns struct {
	client     []int32
	class      []int8
	stage      []int8 // index into design, code, none; 0 where null
	stageValid []byte
	stageNulls int // clients without a stage

	nc       int // built for these clients
	of       []model.Class
	stagesOf []model.Stage
}

// clientPattern returns the worker's client columns, built for at least
// n + nc rows.
func (r *partResult) clientPattern(n int) *clientColumns {
	nc := len(r.names)
	pat := &r.clientCols
	if len(pat.client) >= n+nc && pat.nc == nc && unsafe.SliceData(pat.of) == unsafe.SliceData(r.classes) &&
		unsafe.SliceData(pat.stagesOf) == unsafe.SliceData(r.stages) {
		return pat
	}
	size := max(n, batchRows) + nc
	*pat = clientColumns{nc: nc, of: r.classes, stagesOf: r.stages, client: make([]int32, size), class: make([]int8, size), stage: make([]int8, size),
		stageValid: make([]byte, bitutil.BytesForBits(int64(size)))}
	for i := range size {
		c := i % nc
		pat.client[i], pat.class[i] = int32(c), int8(r.classes[c])
		if st := r.stages[c]; st != model.NoStage {
			pat.stage[i] = int8(st) - 1
			bitutil.SetBit(pat.stageValid, i)
		}
	}
	for _, st := range r.stages {
		if st == model.NoStage {
			pat.stageNulls++
		}
	}
	return pat
}
