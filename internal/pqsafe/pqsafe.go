// Package pqsafe checks the parts of a Parquet file's footer that arrow-go
// decodes without bounds, before arrow-go decodes them.
//
// The ARROW:schema key of a footer holds an Arrow IPC schema message (a
// flatbuffer, base64-encoded). arrow-go sizes its slices from the counts
// the flatbuffer states: one flipped bit in a count asks for hundreds of
// gigabytes, and the Go runtime dies of it ("fatal error: out of memory"),
// which no recover catches. CheckArrowSchema walks the message and refuses
// every count that does not fit in its bytes.
package pqsafe

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"
)

// SchemaKey is the footer key under which pqarrow stores the Arrow schema.
const SchemaKey = "ARROW:schema"

// maxDepth bounds the nesting of fields (a corrupt offset can make a field
// its own child).
const maxDepth = 64

// Flatbuffer field slots (vtable offset 4+2·slot) of the Arrow IPC
// messages (format/Message.fbs, format/Schema.fbs).
const (
	msgHeaderType = 1 // Message.header_type: ubyte
	msgHeader     = 2 // Message.header: union
	msgBodyLength = 3 // Message.bodyLength: long
	msgMetadata   = 4 // Message.custom_metadata: [KeyValue]

	schemaFields   = 1 // Schema.fields: [Field]
	schemaMetadata = 2 // Schema.custom_metadata: [KeyValue]
	schemaFeatures = 3 // Schema.features: [long]

	fieldName       = 0 // Field.name: string
	fieldTypeType   = 2 // Field.type_type: ubyte
	fieldType       = 3 // Field.type: union
	fieldDictionary = 4 // Field.dictionary: DictionaryEncoding
	fieldChildren   = 5 // Field.children: [Field]
	fieldMetadata   = 6 // Field.custom_metadata: [KeyValue]

	headerSchema = 1  // MessageHeader.Schema
	typeUnion    = 14 // Type.Union
	unionTypeIDs = 1  // Union.typeIds: [int]
)

func vt(slot int) flatbuffers.VOffsetT { return flatbuffers.VOffsetT(4 + 2*slot) }

// CheckArrowSchema reports whether serialized, the value of a footer's
// ARROW:schema key, is an Arrow schema message whose every offset and count
// lies within its bytes. It never allocates more than the decoded bytes.
func CheckArrowSchema(serialized string) (err error) {
	var b []byte
	if len(serialized)%4 == 0 {
		b, err = base64.StdEncoding.DecodeString(serialized)
	}
	if len(b) == 0 || err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(serialized); err != nil {
			return fmt.Errorf("%s: not base64: %w", SchemaKey, err)
		}
	}
	if len(b) < 8 {
		return fmt.Errorf("%s: %d bytes, too short for a schema message", SchemaKey, len(b))
	}
	off := 0
	if binary.LittleEndian.Uint32(b) == 0xFFFFFFFF { // the continuation marker
		off = 4
	}
	n := int64(int32(binary.LittleEndian.Uint32(b[off:])))
	off += 4
	if n < 4 || n > int64(len(b)-off) {
		return fmt.Errorf("%s: a message of %d bytes in %d", SchemaKey, n, len(b)-off)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: an offset out of bounds (%v)", SchemaKey, r)
		}
	}()
	w := walker{buf: b[off : off+int(n)]}
	return w.message()
}

type walker struct {
	buf    []byte
	tables int // tables visited: bounds the work on a cyclic buffer
}

var errBounds = errors.New("out of bounds")

// table returns the table at absolute offset pos, its vtable checked.
func (w *walker) table(pos flatbuffers.UOffsetT) (flatbuffers.Table, error) {
	w.tables++
	if w.tables > len(w.buf)/4 {
		return flatbuffers.Table{}, fmt.Errorf("%s: more tables than its bytes can hold", SchemaKey)
	}
	if int64(pos)+4 > int64(len(w.buf)) {
		return flatbuffers.Table{}, fmt.Errorf("%s: a table at %d of %d bytes", SchemaKey, pos, len(w.buf))
	}
	t := flatbuffers.Table{Bytes: w.buf, Pos: pos}
	vtab := int64(pos) - int64(flatbuffers.GetSOffsetT(w.buf[pos:]))
	if vtab < 0 || vtab+4 > int64(len(w.buf)) {
		return t, fmt.Errorf("%s: a vtable at %d of %d bytes", SchemaKey, vtab, len(w.buf))
	}
	if vlen := int64(flatbuffers.GetVOffsetT(w.buf[vtab:])); vlen < 4 || vtab+vlen > int64(len(w.buf)) {
		return t, fmt.Errorf("%s: a vtable of %d bytes at %d of %d", SchemaKey, vlen, vtab, len(w.buf))
	}
	return t, nil
}

// child returns the table that slot of t refers to (ok false when absent).
func (w *walker) child(t flatbuffers.Table, slot int) (flatbuffers.Table, bool, error) {
	o := t.Offset(vt(slot))
	if o == 0 {
		return flatbuffers.Table{}, false, nil
	}
	at := int64(t.Pos) + int64(o)
	if at+4 > int64(len(w.buf)) {
		return flatbuffers.Table{}, false, fmt.Errorf("%s: %w", SchemaKey, errBounds)
	}
	c, err := w.table(t.Indirect(flatbuffers.UOffsetT(at)))
	return c, true, err
}

// vector returns the start and length of the vector in slot of t, its
// elements of size elem bytes checked to lie within the buffer.
func (w *walker) vector(t flatbuffers.Table, slot, elem int) (start flatbuffers.UOffsetT, n int, err error) {
	o := t.Offset(vt(slot))
	if o == 0 {
		return 0, 0, nil
	}
	at := int64(t.Pos) + int64(o)
	if at+4 > int64(len(w.buf)) {
		return 0, 0, fmt.Errorf("%s: %w", SchemaKey, errBounds)
	}
	v := int64(at) + int64(flatbuffers.GetUOffsetT(w.buf[at:]))
	if v+4 > int64(len(w.buf)) {
		return 0, 0, fmt.Errorf("%s: a vector at %d of %d bytes", SchemaKey, v, len(w.buf))
	}
	count := int64(flatbuffers.GetUOffsetT(w.buf[v:]))
	if v+4+count*int64(elem) > int64(len(w.buf)) {
		return 0, 0, fmt.Errorf("%s: a vector of %d elements at %d of %d bytes", SchemaKey, count, v, len(w.buf))
	}
	return flatbuffers.UOffsetT(v + 4), int(count), nil
}

// tables checks each table of the vector of tables in slot of t with fn.
func (w *walker) tablesIn(t flatbuffers.Table, slot int, fn func(flatbuffers.Table) error) error {
	start, n, err := w.vector(t, slot, 4)
	if err != nil {
		return err
	}
	for i := range n {
		at := start + flatbuffers.UOffsetT(4*i)
		c, err := w.table(at + flatbuffers.GetUOffsetT(w.buf[at:]))
		if err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// strings checks the string (a byte vector) in slot of t.
func (w *walker) str(t flatbuffers.Table, slot int) error {
	_, _, err := w.vector(t, slot, 1)
	return err
}

func (w *walker) keyValues(t flatbuffers.Table, slot int) error {
	return w.tablesIn(t, slot, func(kv flatbuffers.Table) error {
		if err := w.str(kv, 0); err != nil {
			return err
		}
		return w.str(kv, 1)
	})
}

func (w *walker) message() error {
	root, err := w.table(flatbuffers.GetUOffsetT(w.buf))
	if err != nil {
		return err
	}
	if o := root.Offset(vt(msgHeaderType)); o == 0 || root.GetByte(root.Pos+flatbuffers.UOffsetT(o)) != headerSchema {
		return fmt.Errorf("%s: not a schema message", SchemaKey)
	}
	if o := root.Offset(vt(msgBodyLength)); o != 0 {
		if body := root.GetInt64(root.Pos + flatbuffers.UOffsetT(o)); body != 0 {
			return fmt.Errorf("%s: a schema message with a body of %d bytes", SchemaKey, body)
		}
	}
	if err := w.keyValues(root, msgMetadata); err != nil {
		return err
	}
	schema, ok, err := w.child(root, msgHeader)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: a message without its schema", SchemaKey)
	}
	if _, _, err := w.vector(schema, schemaFeatures, 8); err != nil {
		return err
	}
	if err := w.keyValues(schema, schemaMetadata); err != nil {
		return err
	}
	return w.tablesIn(schema, schemaFields, func(f flatbuffers.Table) error { return w.field(f, 0) })
}

func (w *walker) field(f flatbuffers.Table, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: fields nested more than %d deep", SchemaKey, maxDepth)
	}
	if err := w.str(f, fieldName); err != nil {
		return err
	}
	if err := w.keyValues(f, fieldMetadata); err != nil {
		return err
	}
	if _, _, err := w.child(f, fieldDictionary); err != nil {
		return err
	}
	typ, ok, err := w.child(f, fieldType)
	if err != nil {
		return err
	}
	if o := f.Offset(vt(fieldTypeType)); ok && o != 0 && f.GetByte(f.Pos+flatbuffers.UOffsetT(o)) == typeUnion {
		if _, _, err := w.vector(typ, unionTypeIDs, 4); err != nil {
			return err
		}
	}
	return w.tablesIn(f, fieldChildren, func(c flatbuffers.Table) error { return w.field(c, depth+1) })
}
