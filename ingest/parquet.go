package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/ratesweep/ratesweep/internal/pqsafe"
)

// parquetFile is what a Parquet reader needs (an *os.File is one).
type parquetFile interface {
	io.Reader
	io.ReaderAt
	io.Seeker
}

func isParquet(f io.ReaderAt) bool {
	var magic [4]byte
	n, _ := f.ReadAt(magic[:], 0)
	return n == 4 && string(magic[:]) == "PAR1"
}

// parquetSource reads the configured columns of a Parquet file batch by
// batch (constant memory in the number of rows), one Record per row. Line
// numbers are 1-based row numbers.
type parquetSource struct {
	opt     CSVOptions
	pf      *file.Reader
	rr      pqarrow.RecordReader
	cols    [len9]arrow.Array // per CSVColumnFields entry; nil if unmapped
	batch   arrow.RecordBatch
	row     int
	rec     Record
	line    int64
	scratch [len9][]byte
	err     error
	bad     int64
	reasons map[string]int64
	samples []LineError
	strict  bool
}

const parquetBatchRows = 64 << 10

func newParquetSource(f parquetFile, opt ReaderOptions) (*parquetSource, error) {
	c := opt.CSV
	if c.Columns["time"] == "" {
		return nil, errors.New("parquet needs a time column (parquet: {columns: {time: NAME, ...}})")
	}
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("not a readable Parquet file: %v", err)
	}
	if v := pf.MetaData().KeyValueMetadata().FindValue(pqsafe.SchemaKey); v != nil {
		if err := pqsafe.CheckArrowSchema(*v); err != nil {
			pf.Close()
			return nil, fmt.Errorf("a damaged Parquet footer: %v", err)
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: parquetBatchRows}, memory.DefaultAllocator)
	if err != nil {
		pf.Close()
		return nil, err
	}
	sc, err := fr.Schema()
	if err != nil {
		pf.Close()
		return nil, err
	}
	p := &parquetSource{opt: c, pf: pf, strict: opt.Strict}
	var idx []int
	for _, f := range CSVColumnFields {
		col, ok := c.Columns[f]
		if !ok {
			continue
		}
		found := sc.FieldIndices(col)
		if len(found) == 0 {
			pf.Close()
			return nil, fmt.Errorf("no column %q (for %s)", col, f)
		}
		idx = append(idx, found[0])
	}
	idx = uniqueSorted(idx)
	if p.rr, err = fr.GetRecordReader(context.Background(), idx, nil); err != nil {
		pf.Close()
		return nil, err
	}
	return p, nil
}

func uniqueSorted(xs []int) []int {
	slices.Sort(xs)
	return slices.Compact(xs)
}

func (p *parquetSource) Format() Format  { return FormatParquet }
func (p *parquetSource) Record() *Record { return &p.rec }
func (p *parquetSource) Err() error      { return p.err }

func (p *parquetSource) Close() error {
	p.batch = nil
	if p.rr != nil {
		p.rr.Release()
		p.rr = nil
	}
	return p.pf.Close()
}

func (p *parquetSource) stats(s *Stats) {
	s.Lines, s.Malformed, s.Samples = p.line, p.bad, p.samples
	s.Reasons = p.reasons
}

func (p *parquetSource) reject(msg string) bool {
	p.bad++
	p.reasons = countReason(p.reasons, msg)
	e := LineError{Line: p.line, Msg: msg, Excerpt: "(row)"}
	if len(p.samples) < MaxSamples {
		p.samples = append(p.samples, e)
	}
	if p.strict {
		p.err = &e
		return false
	}
	return true
}

// Scan reads the next row.
func (p *parquetSource) Scan() bool {
	for p.err == nil {
		if p.batch == nil || p.row >= int(p.batch.NumRows()) {
			if !p.rr.Next() {
				if err := p.rr.Err(); err != nil && !errors.Is(err, io.EOF) {
					p.err = err
				}
				return false
			}
			p.batch, p.row = p.rr.RecordBatch(), 0
			sch := p.batch.Schema()
			for i, f := range CSVColumnFields {
				p.cols[i] = nil
				if col, ok := p.opt.Columns[f]; ok {
					p.cols[i] = p.batch.Column(sch.FieldIndices(col)[0])
				}
			}
			continue
		}
		p.line++
		err := p.fill(p.row)
		p.row++
		if err == nil {
			p.rec.Line = p.line
			return true
		}
		if !p.reject(err.Error()) {
			return false
		}
	}
	return false
}

func (p *parquetSource) fill(i int) error {
	r := &p.rec
	r.reset()
	var err error
	if r.Time, r.TimeNs, err = p.time(p.cols[0], i); err != nil {
		return err
	}
	get := func(k int) []byte {
		if p.cols[k] == nil {
			return nil
		}
		p.scratch[k] = appendValue(p.scratch[k][:0], p.cols[k], i)
		return p.scratch[k]
	}
	r.Host, r.User, r.Method, r.Path = get(1), get(2), get(3), get(4)
	if s := get(5); len(s) > 0 {
		var ok bool
		if r.Status, ok = parseStatus(s); !ok {
			return fmt.Errorf("status %q is not 100..999", s)
		}
	}
	r.UserAgent, r.Referer, r.Label = get(6), get(7), get(8)
	return nil
}

// appendValue appends a cell's text (empty for null).
func appendValue(buf []byte, c arrow.Array, i int) []byte {
	if c.IsNull(i) {
		return buf
	}
	switch a := c.(type) {
	case *array.String:
		return append(buf, a.Value(i)...)
	case *array.LargeString:
		return append(buf, a.Value(i)...)
	case *array.Binary:
		return append(buf, a.Value(i)...)
	case *array.Int64:
		return strconv.AppendInt(buf, a.Value(i), 10)
	case *array.Int32:
		return strconv.AppendInt(buf, int64(a.Value(i)), 10)
	case *array.Dictionary:
		return appendValue(buf, a.Dictionary(), a.GetValueIndex(i))
	}
	return append(buf, c.ValueStr(i)...)
}

// time reads a time cell: a Parquet timestamp, a number (per the time
// format: unix or unix_ms) or text (per the time format).
func (p *parquetSource) time(c arrow.Array, i int) (sec, ns int64, err error) {
	if c.IsNull(i) {
		return 0, 0, errors.New("empty time")
	}
	switch a := c.(type) {
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		v := int64(a.Value(i))
		d := int64(unit.Multiplier())
		sec, ns = v/(1e9/d), v%(1e9/d)*d
		if ns < 0 {
			sec, ns = sec-1, ns+1e9
		}
		if sec < 0 || sec > maxUnix {
			return 0, 0, fmt.Errorf("time %d out of range", v)
		}
		return sec, ns, nil
	case *array.Int64, *array.Int32, *array.Uint64, *array.Uint32:
		if unitScale(p.opt.TimeFormat) == 0 && p.opt.TimeFormat != TimeUnix && p.opt.TimeFormat != TimeAuto {
			return 0, 0, fmt.Errorf("numeric time column needs time_format unix, unix_ms, unix_us, unix_ns or auto")
		}
	case *array.Float64, *array.Float32:
		if unitScale(p.opt.TimeFormat) == 0 && p.opt.TimeFormat != TimeUnix && p.opt.TimeFormat != TimeAuto {
			return 0, 0, fmt.Errorf("numeric time column needs time_format unix, unix_ms, unix_us, unix_ns or auto")
		}
		// The shortest decimal that reads back as the same float: the number
		// the writer meant (1767225600.1, not 1767225600.099999904), then
		// parsed exactly.
		var v float64
		if f, ok := a.(*array.Float64); ok {
			v = f.Value(i)
		} else {
			v = float64(a.(*array.Float32).Value(i))
		}
		p.scratch[0] = strconv.AppendFloat(p.scratch[0][:0], v, 'f', -1, 64)
		if _, ok := a.(*array.Float32); ok {
			p.scratch[0] = strconv.AppendFloat(p.scratch[0][:0], v, 'f', -1, 32)
		}
		return parseTime(p.scratch[0], p.opt.TimeFormat)
	}
	p.scratch[0] = appendValue(p.scratch[0][:0], c, i)
	return parseTime(p.scratch[0], p.opt.TimeFormat)
}

// parquetRows is a Parquet file's row count from its footer (0 if unreadable).
func parquetRows(f parquetFile) int64 {
	// Without Close: the reader would close the caller's file.
	pf, err := file.NewParquetReader(struct {
		io.ReaderAt
		io.Seeker
	}{f, f})
	if err != nil {
		return 0
	}
	return pf.NumRows()
}
