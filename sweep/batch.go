package sweep

import (
	"math"
	"slices"
	"strings"
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

// columnScratch holds the value buffers of one batch, one per column.
type columnScratch struct {
	i64  [][]int64
	f64  [][]float64
	i32  [][]int32
	i8   [][]int8
	bits [][]byte
	used [5]int // slots handed out in the current batch, per kind

	zeros []byte // never written: the buffers of all-null columns (nulls)

	dicts map[*arrow.DictionaryType]map[string]arrow.Array // per index type and values (joined)
}

// reset starts a new batch: every buffer may be handed out again.
func (s *columnScratch) reset() { s.used = [5]int{} }

// take returns the next unused buffer of *slots with length n.
func take[T any](slots *[][]T, used *int, n int) []T {
	if *used == len(*slots) {
		*slots = append(*slots, nil)
	}
	b := grow((*slots)[*used], n)
	(*slots)[*used] = b
	*used++
	return b
}

func (s *columnScratch) int64s(n int) []int64     { return take(&s.i64, &s.used[0], n) }
func (s *columnScratch) float64s(n int) []float64 { return take(&s.f64, &s.used[1], n) }
func (s *columnScratch) int32s(n int) []int32     { return take(&s.i32, &s.used[2], n) }
func (s *columnScratch) int8s(n int) []int8       { return take(&s.i8, &s.used[3], n) }
func (s *columnScratch) bitmap(n int) []byte {
	b := take(&s.bits, &s.used[4], int(bitutil.BytesForBits(int64(n))))
	clear(b)
	return b
}

// dictionary returns the (cached) dictionary array of values.
func (s *columnScratch) dictionary(mem memory.Allocator, typ *arrow.DictionaryType, values []string) arrow.Array {
	if s.dicts == nil {
		s.dicts = map[*arrow.DictionaryType]map[string]arrow.Array{}
	}
	if s.dicts[typ] == nil {
		s.dicts[typ] = map[string]arrow.Array{}
	}
	var kb strings.Builder // linear: += here was quadratic in the number of values
	for _, v := range values {
		kb.WriteString(v)
		kb.WriteByte(0)
	}
	key := kb.String()
	d, ok := s.dicts[typ][key]
	if !ok {
		b := array.NewStringBuilder(mem)
		b.AppendValues(values, nil)
		d = b.NewArray()
		b.Release()
		s.dicts[typ][key] = d
	}
	return d
}

// nulls returns an array of n nulls of typ (width bytes a value), all
// zeros: its buffers are one zero buffer shared by every such column of
// every batch (arrays are read-only), so they cost neither filling nor
// memory per column.
func (s *columnScratch) nulls(typ arrow.DataType, n, width int) arrow.Array {
	if len(s.zeros) < n*width {
		s.zeros = make([]byte, n*width)
	}
	z := s.zeros[:n*width]
	data := array.NewData(typ, n, []*memory.Buffer{memory.NewBufferBytes(z[:bitutil.BytesForBits(int64(n))]), memory.NewBufferBytes(z)}, nil, n, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// zeroInt32s returns an array of n int32 zeros (no nulls) over the shared
// zero buffer.
func (s *columnScratch) zeroInt32s(n int) arrow.Array {
	if len(s.zeros) < n*4 {
		s.zeros = make([]byte, n*4)
	}
	data := array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, memory.NewBufferBytes(s.zeros[:n*4])}, nil, 0, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// primitive returns an array of typ over vals (no copy). valid is the
// validity bitmap, or nil when nulls == 0.
func primitive[T int8 | int32 | int64 | float64](typ arrow.DataType, vals []T, valid []byte, nulls int) arrow.Array {
	var zero T
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vals))), len(vals)*int(unsafe.Sizeof(zero)))
	bufs := []*memory.Buffer{nil, memory.NewBufferBytes(raw)}
	if nulls > 0 {
		bufs[0] = memory.NewBufferBytes(valid)
	}
	data := array.NewData(typ, len(vals), bufs, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

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

// paramColumn is one parameter's values for every point of the part, in
// the column's Arrow type (int64, float64, or int8 indices of an enumerated
// parameter), 0 and invalid where the point's algorithm does not take it.
type paramColumn struct {
	param int // index in model.Params
	i64   []int64
	f64   []float64
	i8    []int8
	valid []byte // nil when every point takes it
	nulls int

	kind    paramKind
	partial bool // some point does not take it

	// same says every point so far has the value first (Float64bits), so
	// the column is not stored (fillParams) but written as a buffer of it
	// (constBuf, kept between batches) until a point differs.
	same     bool
	first    uint64
	constBuf []byte
}

// varies writes the column out: points [0, i) all have c.first.
func (c *paramColumn) varies(i int) {
	v := math.Float64frombits(c.first)
	switch c.kind {
	case paramInt:
		for k := range c.i64[:i] {
			c.i64[k] = int64(v)
		}
	case paramFloat:
		for k := range c.f64[:i] {
			c.f64[k] = v
		}
	default:
		for k := range c.i8[:i] {
			c.i8[k] = int8(v)
		}
	}
	c.same = false
}

// constant is an array of n rows of the column's one value.
func (c *paramColumn) constant(n int) arrow.Array {
	v := math.Float64frombits(c.first)
	width := 8
	if c.kind == paramEnum {
		width = 1
	}
	if len(c.constBuf) < n*width || !c.constMatches(v) {
		c.constBuf = grow(c.constBuf, max(n, pointsBatchRows)*width)
		switch c.kind {
		case paramInt:
			b := unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(c.constBuf))), len(c.constBuf)/8)
			for k := range b {
				b[k] = int64(v)
			}
		case paramFloat:
			b := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(c.constBuf))), len(c.constBuf)/8)
			for k := range b {
				b[k] = v
			}
		default:
			for k := range c.constBuf {
				c.constBuf[k] = byte(int8(v))
			}
		}
	}
	typ := arrow.DataType(arrow.PrimitiveTypes.Int64)
	switch c.kind {
	case paramFloat:
		typ = arrow.PrimitiveTypes.Float64
	case paramEnum:
		typ = arrow.PrimitiveTypes.Int8
	}
	return window(typ, c.constBuf, nil, 0, 0, n)
}

// constMatches reports whether constBuf holds v.
func (c *paramColumn) constMatches(v float64) bool {
	switch c.kind {
	case paramInt:
		return *(*int64)(unsafe.Pointer(&c.constBuf[0])) == int64(v)
	case paramFloat:
		return math.Float64bits(*(*float64)(unsafe.Pointer(&c.constBuf[0]))) == math.Float64bits(v)
	}
	return int8(c.constBuf[0]) == int8(v)
}

type paramKind uint8

const (
	paramInt paramKind = iota
	paramFloat
	paramEnum
)

// prepareParams fills r.params with the part's parameter columns (one per
// parameter some point takes; r.paramCol[j] is parameter j's, or -1 when
// its column is all null) and the points' labels (policy column), once per
// part, reading each point's values once: the batches take windows of them
// (no copy) when there is one replicate. simulatePart does it as it goes
// (r.prepare); this is for a part result simulated without.
func (r *partResult) prepareParams() {
	if r.prepared {
		return
	}
	var seen [256]bool
	var algs []model.Algorithm
	for i := range r.policies {
		if a := r.policies[i].Algorithm; !seen[a] {
			seen[a] = true
			algs = append(algs, a)
		}
	}
	r.beginParams(algs, len(r.policies))
	r.fillParams(0, r.policies, r.changed)
}

// beginParams sets up the parameter columns and labels of a part of n points
// whose algorithms are algs (at least); fillParams fills them.
func (r *partResult) beginParams(algs []model.Algorithm, n int) {
	np := len(model.Params)
	var seen [256]bool
	for _, a := range algs {
		seen[a] = true
	}
	r.paramCol = grow(r.paramCol, np)
	r.params = r.params[:0]
	for i := range r.takes {
		r.takes[i] = nil
	}
	for _, a := range model.Algorithms {
		if seen[a] {
			r.takes[a] = make([]bool, np)
		}
	}
	for j, prm := range model.Params {
		r.paramCol[j] = -1
		all, some := true, false
		for _, a := range model.Algorithms {
			if seen[a] {
				t := a.Takes(prm.Name)
				r.takes[a][j] = t
				all, some = all && t, some || t
			}
		}
		if !some {
			continue
		}
		r.paramCol[j] = len(r.params)
		if len(r.params) == cap(r.params) {
			r.params = append(r.params, paramColumn{})
		} else {
			r.params = r.params[:len(r.params)+1]
		}
		c := &r.params[len(r.params)-1]
		c.param, c.nulls = j, 0
		switch {
		case prm.Values != nil:
			c.kind, c.i8 = paramEnum, grow(c.i8, n)
		case prm.Int:
			c.kind, c.i64 = paramInt, grow(c.i64, n)
		default:
			c.kind, c.f64 = paramFloat, grow(c.f64, n)
		}
		c.valid, c.partial = nil, !all
	}
	// Validity bitmaps, kept per column slot between parts.
	for len(r.paramValid) < len(r.params) {
		r.paramValid = append(r.paramValid, nil)
	}
	for k := range r.params {
		c := &r.params[k]
		if c.partial {
			r.paramValid[k] = grow(r.paramValid[k], int(bitutil.BytesForBits(int64(n))))
			clear(r.paramValid[k])
			c.valid = r.paramValid[k]
		}
	}
	// The columns every point takes, by type, then the others: no branch
	// per column and point for the common ones.
	r.ints, r.floats, r.enums, r.partial = r.ints[:0], r.floats[:0], r.enums[:0], r.partial[:0]
	r.common = r.common[:0]
	for k := range r.params {
		c := &r.params[k]
		c.same = false
		if !c.partial {
			r.common = append(r.common, c)
		}
		switch {
		case c.partial:
			r.partial = append(r.partial, c)
		case c.kind == paramInt:
			r.ints = append(r.ints, c)
		case c.kind == paramFloat:
			r.floats = append(r.floats, c)
		default:
			r.enums = append(r.enums, c)
		}
	}
	r.labelOffsets, r.labelData = append(r.labelOffsets[:0], 0), r.labelData[:0]
	r.labels.Reset()
	r.row = grow(r.row, np)
	r.algs = grow(r.algs, n)
	r.labelsOf, r.labelsValid, r.prepared = r.part, false, false
}

// fillParams fills the parameter columns, labels and algorithms of points
// lo, lo+1, … whose policies are pol (and changed, Grid.Policies', or nil),
// after those of the points before lo.
func (r *partResult) fillParams(lo int, pol []model.Policy, changed []int8) {
	row := r.row
	hi := lo + len(pol)
	alg, algIndex := model.Algorithm(0), int8(-1)
	for i := lo; i < hi; i++ {
		p := &pol[i-lo]
		if p.Algorithm != alg {
			alg, algIndex = p.Algorithm, algorithmIndex(p.Algorithm)
		}
		r.algs[i] = algIndex
		// row holds point i-1's values after the first point of pol.
		j := -1
		if changed != nil {
			j = int(changed[i-lo])
		}
		if j >= 0 && i > lo {
			row[j] = p.ValueAt(j)
		} else {
			j = -1
			p.Values(row)
		}
		if i == 0 {
			for _, c := range r.common {
				c.same, c.first = true, math.Float64bits(row[c.param])
			}
		}
		for _, c := range r.ints {
			if v := row[c.param]; !c.same || math.Float64bits(v) != c.first {
				if c.same {
					c.varies(i)
				}
				c.i64[i] = int64(v)
			}
		}
		for _, c := range r.floats {
			if v := row[c.param]; !c.same || math.Float64bits(v) != c.first {
				if c.same {
					c.varies(i)
				}
				c.f64[i] = v
			}
		}
		for _, c := range r.enums {
			if v := row[c.param]; !c.same || math.Float64bits(v) != c.first {
				if c.same {
					c.varies(i)
				}
				c.i8[i] = int8(v)
			}
		}
		t := r.takes[p.Algorithm]
		for _, c := range r.partial {
			v := row[c.param]
			if !t[c.param] {
				v = 0
				c.nulls++
			} else {
				bitutil.SetBit(c.valid, i)
			}
			switch c.kind {
			case paramInt:
				c.i64[i] = int64(v)
			case paramFloat:
				c.f64[i] = v
			default:
				c.i8[i] = int8(v)
			}
		}
		if p.Stack != nil {
			r.labels.Reset()
			r.labelData = p.AppendCanonical(r.labelData)
		} else {
			r.labelData = r.labels.AppendNext(r.labelData, p.Algorithm, row, j)
			r.labelData = model.AppendBlockLevels(r.labelData, *p)
			if p.CountIf != "" { // the label names it (model.Policy.String)
				r.labelData = append(append(r.labelData, " count_if="...), p.CountIf...)
			}
		}
		r.labelOffsets = append(r.labelOffsets, int32(len(r.labelData)))
	}
	if hi == r.nrows/r.reps {
		r.labelsOf, r.labelsValid, r.prepared = r.part, true, true
	}
}

// paramArray is parameter j of model.Params for rows [lo, lo+n), null where
// the row's algorithm does not take it; enumerated parameters are
// dictionary strings. With one replicate it is a window of the part's
// column.
func (r *partResult) paramArray(lo, n, j int) arrow.Array {
	prm := model.Params[j]
	s := &r.scratch
	k := r.paramCol[j]
	if k < 0 { // no point of the part takes it: all null
		switch {
		case prm.Values != nil:
			return r.dictArray(dictInt8, s.nulls(arrow.PrimitiveTypes.Int8, n, 1), prm.Values)
		case prm.Int:
			return s.nulls(arrow.PrimitiveTypes.Int64, n, 8)
		}
		return s.nulls(arrow.PrimitiveTypes.Float64, n, 8)
	}
	c := &r.params[k]
	if c.same { // one value in every row
		if c.kind == paramEnum {
			return r.dictArray(dictInt8, c.constant(n), prm.Values)
		}
		return c.constant(n)
	}
	if r.reps == 1 {
		switch c.kind {
		case paramEnum:
			return r.dictArray(dictInt8, window(arrow.PrimitiveTypes.Int8, int8Bytes(c.i8), c.valid, c.nulls, lo, n), prm.Values)
		case paramInt:
			return window(arrow.PrimitiveTypes.Int64, int64Bytes(c.i64), c.valid, c.nulls, lo, n)
		}
		return window(arrow.PrimitiveTypes.Float64, float64Bytes(c.f64), c.valid, c.nulls, lo, n)
	}
	var valid []byte
	if c.valid != nil {
		valid = s.bitmap(n)
	}
	switch c.kind {
	case paramEnum:
		enums := s.int8s(n)
		nulls := repeatParam(enums, valid, c.i8, c.valid, lo, r.reps)
		return r.dictArray(dictInt8, primitive(arrow.PrimitiveTypes.Int8, enums, valid, nulls), prm.Values)
	case paramInt:
		ints := s.int64s(n)
		return primitive(arrow.PrimitiveTypes.Int64, ints, valid, repeatParam(ints, valid, c.i64, c.valid, lo, r.reps))
	}
	floats := s.float64s(n)
	return primitive(arrow.PrimitiveTypes.Float64, floats, valid, repeatParam(floats, valid, c.f64, c.valid, lo, r.reps))
}

// window is an array of typ over rows [lo, lo+n) of a part's column (vals,
// and its validity bitmap or nil), without a copy; nulls counts the
// column's nulls over the whole part (the window's are counted on demand).
func window(typ arrow.DataType, vals, valid []byte, nulls, lo, n int) arrow.Array {
	bufs := []*memory.Buffer{nil, memory.NewBufferBytes(vals)}
	nn := 0
	if valid != nil && nulls > 0 {
		bufs[0], nn = memory.NewBufferBytes(valid), array.UnknownNullCount
	}
	d := array.NewData(typ, n, bufs, nil, nn, lo)
	defer d.Release()
	return array.MakeFromData(d)
}

// repeatParam fills dst with rows [lo, lo+len(dst)) of a parameter whose
// values per point are vals (valid: its bitmap, or nil when every point
// takes it), each point repeated reps times; it returns the nulls.
func repeatParam[T int8 | int64 | float64](dst []T, valid []byte, vals []T, pvalid []byte, lo, reps int) (nulls int) {
	pt, rep := lo/reps, lo%reps
	for i := range dst {
		dst[i] = vals[pt]
		if pvalid != nil {
			if bitutil.BitIsSet(pvalid, pt) {
				bitutil.SetBit(valid, i)
			} else {
				nulls++
			}
		}
		if rep++; rep == reps {
			rep, pt = 0, pt+1
		}
	}
	return nulls
}

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

func int32Bytes(v []int32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*4)
}

func uint64Bytes(v []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*8)
}

func int64Bytes(v []int64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*8)
}

func float64Bytes(v []float64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*8)
}

func int8Bytes(v []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}

func releaseAfter(rec arrow.RecordBatch, cols []arrow.Array) arrow.RecordBatch {
	for _, c := range cols {
		c.Release()
	}
	return rec
}
