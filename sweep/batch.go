package sweep

import (
	"slices"
	"strings"
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
	ids, reps, algs := s.int64s(n), s.int32s(n), s.int8s(n)
	for i := range n {
		row := lo + i
		ids[i] = r.part.From + int64(row/r.reps)
		reps[i] = int32(row % r.reps)
		algs[i] = algorithmIndex(r.policies[row/r.reps].Algorithm)
	}
	cols := []arrow.Array{
		primitive(arrow.PrimitiveTypes.Int64, ids, nil, 0),
		primitive(arrow.PrimitiveTypes.Int32, reps, nil, 0),
		r.dictArray(dictInt8, primitive(arrow.PrimitiveTypes.Int8, algs, nil, 0), algorithmNames()),
	}
	for _, prm := range model.Params {
		cols = append(cols, r.paramArray(lo, n, prm))
	}
	met := r.metrics[lo:hi]
	for _, m := range intMetrics {
		cols = append(cols, intColumn(s, met, m))
	}
	for _, m := range pctMetrics {
		cols = append(cols, floatColumn(s, met, m))
	}
	for _, m := range stageMetrics {
		cols = append(cols, intColumn(s, met, m))
	}
	for _, m := range tailMetrics {
		cols = append(cols, floatColumn(s, met, m))
	}
	for _, m := range accountMetrics {
		cols = append(cols, intColumn(s, met, m))
	}
	for _, m := range stateMetrics { // null where state was not measured
		v, valid := s.int64s(len(met)), s.bitmap(len(met))
		nulls := 0
		for i := range met {
			v[i] = *m.field(&met[i])
			if met[i].StateMeasured {
				bitutil.SetBit(valid, i)
			} else {
				nulls++
			}
		}
		cols = append(cols, primitive(arrow.PrimitiveTypes.Int64, v, valid, nulls))
	}
	return releaseAfter(array.NewRecordBatch(schema, cols, int64(n)), cols)
}

func intColumn(s *columnScratch, met []model.Metrics, m intMetric) arrow.Array {
	v := s.int64s(len(met))
	for i := range met {
		v[i] = *m.field(&met[i])
	}
	return primitive(arrow.PrimitiveTypes.Int64, v, nil, 0)
}

func floatColumn(s *columnScratch, met []model.Metrics, m floatMetric) arrow.Array {
	v := s.float64s(len(met))
	for i := range met {
		v[i] = *m.field(&met[i])
	}
	return primitive(arrow.PrimitiveTypes.Float64, v, nil, 0)
}

// paramArray is parameter prm of rows [lo, lo+n), null where the row's
// algorithm does not take it; enumerated parameters are dictionary strings.
func (r *partResult) paramArray(lo, n int, prm model.Param) arrow.Array {
	s := &r.scratch
	var takes [256]bool // per algorithm
	for _, a := range model.Algorithms {
		takes[a] = a.Takes(prm.Name)
	}
	valid := s.bitmap(n)
	nulls := 0
	var ints []int64
	var floats []float64
	var enums []int8
	switch {
	case prm.Values != nil:
		enums = s.int8s(n)
	case prm.Int:
		ints = s.int64s(n)
	default:
		floats = s.float64s(n)
	}
	for i := range n {
		p := &r.policies[(lo+i)/r.reps]
		v := 0.0
		if takes[p.Algorithm] {
			bitutil.SetBit(valid, i)
			v = p.Value(prm.Name)
		} else {
			nulls++
		}
		switch {
		case enums != nil:
			enums[i] = int8(v)
		case ints != nil:
			ints[i] = int64(v)
		default:
			floats[i] = v
		}
	}
	switch {
	case enums != nil:
		return r.dictArray(dictInt8, primitive(arrow.PrimitiveTypes.Int8, enums, valid, nulls), prm.Values)
	case ints != nil:
		return primitive(arrow.PrimitiveTypes.Int64, ints, valid, nulls)
	}
	return primitive(arrow.PrimitiveTypes.Float64, floats, valid, nulls)
}

// clientsBatch builds clients rows [lo, hi) of the part.
func (r *partResult) clientsBatch(schema *arrow.Schema, lo, hi int) arrow.RecordBatch {
	n := hi - lo
	nc := len(r.names)
	s := &r.scratch
	s.reset()
	ids, reps, cl := s.int64s(n), s.int32s(n), s.int32s(n)
	class, stage := s.int8s(n), s.int8s(n)
	stageValid := s.bitmap(n)
	offered, admitted, cut := s.int64s(n), s.int64s(n), s.int64s(n)
	nulls := 0
	for i := range n {
		row, c := (lo+i)/nc, (lo+i)%nc
		ids[i] = r.part.From + int64(row/r.reps)
		reps[i] = int32(row % r.reps)
		cl[i] = int32(c)
		class[i] = int8(r.classes[c])
		if st := r.stages[c]; st == model.NoStage {
			stage[i] = 0
			nulls++
		} else {
			stage[i] = int8(st) - 1
			bitutil.SetBit(stageValid, i)
		}
		res := &r.clients[lo+i]
		offered[i], admitted[i], cut[i] = res.Offered, res.Admitted, res.Cut()
	}
	cols := []arrow.Array{
		primitive(arrow.PrimitiveTypes.Int64, ids, nil, 0),
		primitive(arrow.PrimitiveTypes.Int32, reps, nil, 0),
		r.dictArray(dictInt32, primitive(arrow.PrimitiveTypes.Int32, cl, nil, 0), r.names),
		r.dictArray(dictInt8, primitive(arrow.PrimitiveTypes.Int8, class, nil, 0), []string{"legit", "abusive"}),
		r.dictArray(dictInt8, primitive(arrow.PrimitiveTypes.Int8, stage, stageValid, nulls), []string{"design", "code", "none"}),
		primitive(arrow.PrimitiveTypes.Int64, offered, nil, 0),
		primitive(arrow.PrimitiveTypes.Int64, admitted, nil, 0),
		primitive(arrow.PrimitiveTypes.Int64, cut, nil, 0),
	}
	return releaseAfter(array.NewRecordBatch(schema, cols, int64(n)), cols)
}

func releaseAfter(rec arrow.RecordBatch, cols []arrow.Array) arrow.RecordBatch {
	for _, c := range cols {
		c.Release()
	}
	return rec
}
