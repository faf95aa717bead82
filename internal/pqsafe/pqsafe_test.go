package pqsafe

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
)

func testSchema() []byte {
	md := arrow.NewMetadata([]string{"ratesweep.spec"}, []string{"name: x"})
	s := arrow.NewSchema([]arrow.Field{
		{Name: "point_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "algorithm", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}},
		{Name: "l", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Float64, Nullable: true}))},
		{Name: "u", Type: arrow.SparseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32}}, []arrow.UnionTypeCode{0})},
	}, &md)
	return flight.SerializeSchema(s, memory.DefaultAllocator)
}

// A schema arrow-go wrote passes; every single-bit flip of it either fails
// the check or is decoded here by arrow-go, so a count the check missed
// would crash the test with "out of memory".
func TestCheckArrowSchema(t *testing.T) {
	b := testSchema()
	if err := CheckArrowSchema(base64.StdEncoding.EncodeToString(b)); err != nil {
		t.Fatalf("a valid schema: %v", err)
	}
	if err := CheckArrowSchema(base64.RawStdEncoding.EncodeToString(b)); err != nil {
		t.Fatalf("unpadded: %v", err)
	}
	refused := 0
	for i := range b {
		for bit := range 8 {
			c := append([]byte(nil), b...)
			c[i] ^= 1 << bit
			if err := CheckArrowSchema(base64.StdEncoding.EncodeToString(c)); err != nil {
				refused++
				continue
			}
			func() {
				defer func() { recover() }() // arrow-go's own panics are recoverable
				flight.DeserializeSchema(c, memory.DefaultAllocator)
			}()
		}
	}
	if refused == 0 {
		t.Error("no flip refused")
	}
	for _, c := range []struct{ in, want string }{
		{"not base64!", "not base64"},
		{base64.StdEncoding.EncodeToString(b[:6]), "too short"},
		{base64.StdEncoding.EncodeToString(b[:len(b)/2]), "a message of"},
	} {
		if err := CheckArrowSchema(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.20q: %v, want %q", c.in, err, c.want)
		}
	}
}

// A field count with its top bit flipped (2³¹+4 fields, 189 GB to arrow-go)
// is refused naming the count.
func TestHugeCount(t *testing.T) {
	b := testSchema()
	// The schema's fields vector: its count follows the message header.
	w := walker{buf: b[8:]}
	root, _ := w.table(0 + getRoot(w.buf))
	sch, _, _ := w.child(root, msgHeader)
	start, n, err := w.vector(sch, schemaFields, 4)
	if err != nil || n != 4 {
		t.Fatalf("fields: %d, %v", n, err)
	}
	c := append([]byte(nil), b...)
	c[8+int(start)-1] ^= 0x80 // the count's top byte
	err = CheckArrowSchema(base64.StdEncoding.EncodeToString(c))
	if err == nil || !strings.Contains(err.Error(), "a vector of 2147483652 elements") {
		t.Errorf("fields count 2^31+4: %v", err)
	}
}

func getRoot(b []byte) flatbuffers.UOffsetT {
	return flatbuffers.UOffsetT(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
}
