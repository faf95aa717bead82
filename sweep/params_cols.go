package sweep

// The points table's parameter columns: constant runs, dictionaries and values per point.

import (
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ratesweep/ratesweep/model"
)

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
