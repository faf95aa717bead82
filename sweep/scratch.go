package sweep

// Reusable buffers for Arrow columns built without the builders.

import (
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

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

func (s *columnScratch) int64s(n int) []int64 { return take(&s.i64, &s.used[0], n) }

func (s *columnScratch) float64s(n int) []float64 { return take(&s.f64, &s.used[1], n) }

func (s *columnScratch) int32s(n int) []int32 { return take(&s.i32, &s.used[2], n) }

func (s *columnScratch) int8s(n int) []int8 { return take(&s.i8, &s.used[3], n) }

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
