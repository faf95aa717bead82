package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// TimeFormat is how a CSV time column is written.
type TimeFormat uint8

const (
	TimeUnix    TimeFormat = iota // Unix seconds, integer or decimal (parsed exactly)
	TimeUnixMs                    // Unix milliseconds, integer or decimal
	TimeRFC3339                   // 2006-01-02T15:04:05Z07:00, any fractional precision
	TimeCLF                       // 02/Jan/2006:15:04:05 -0700, optionally in brackets
	TimeUnixUs                    // Unix microseconds, integer or decimal
	TimeUnixNs                    // Unix nanoseconds
	TimeAuto                      // RFC 3339 text, or a Unix number whose unit its magnitude gives
)

var timeFormatNames = []string{"unix", "unix_ms", "rfc3339", "clf", "unix_us", "unix_ns", "auto"}

func (f TimeFormat) String() string { return timeFormatNames[f] }

// ParseTimeFormat parses unix, unix_ms, rfc3339 or clf.
func ParseTimeFormat(s string) (TimeFormat, error) {
	for i, n := range timeFormatNames {
		if s == n {
			return TimeFormat(i), nil
		}
	}
	return 0, fmt.Errorf("unknown time format %q (known: %s)", s, strings.Join(timeFormatNames, ", "))
}

// CSVOptions maps CSV columns (by header name) or Parquet columns to record
// fields. Only Time is required; Delimiter is for CSV only.
type CSVOptions struct {
	Delimiter  byte // default ','
	TimeFormat TimeFormat
	TimeSet    bool // TimeFormat was given (JSON lines default to auto)
	// Columns maps a record field name (time, ip, user, method, path,
	// status, user_agent, referer, label) to a header column name.
	Columns map[string]string
}

// CSVColumnFields are the record fields a CSV column can fill.
var CSVColumnFields = []string{"time", "ip", "user", "method", "path", "status", "user_agent", "referer", "label"}

// csvParser parses CSV lines after the header has fixed column indices.
type csvParser struct {
	opt     CSVOptions
	idx     [len9]int // column index per CSVColumnFields entry, -1 if unmapped
	ncol    int
	fields  [][]byte
	scratch []byte
}

const len9 = 9

func newCSVParser(opt CSVOptions) (*csvParser, error) {
	if opt.Delimiter == 0 {
		opt.Delimiter = ','
	}
	if opt.Delimiter == '"' || opt.Delimiter == '\n' || opt.Delimiter == '\r' {
		return nil, fmt.Errorf("csv delimiter %q is not allowed", opt.Delimiter)
	}
	if opt.Columns["time"] == "" {
		return nil, errors.New("csv needs a time column (columns: {time: NAME})")
	}
	for k := range opt.Columns {
		if !contains(CSVColumnFields, k) {
			return nil, fmt.Errorf("csv column field %q is unknown (known: %s)", k, strings.Join(CSVColumnFields, ", "))
		}
	}
	p := &csvParser{opt: opt}
	for i := range p.idx {
		p.idx[i] = -1
	}
	return p, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// header reads the header line and resolves the configured columns.
func (p *csvParser) header(line []byte) error {
	cols, err := p.split(line)
	if err != nil {
		return fmt.Errorf("header: %v", err)
	}
	names := make(map[string]int, len(cols))
	for i, c := range cols {
		names[strings.TrimSpace(string(c))] = i
	}
	p.ncol = len(cols)
	for i, f := range CSVColumnFields {
		col, ok := p.opt.Columns[f]
		if !ok {
			continue
		}
		j, ok := names[col]
		if !ok {
			return fmt.Errorf("header has no column %q (for %s)", col, f)
		}
		p.idx[i] = j
	}
	return nil
}

// split splits a CSV line into fields (RFC 4180 quoting, no newlines inside
// quotes). Slices alias line or p.scratch.
func (p *csvParser) split(line []byte) ([][]byte, error) {
	p.fields = p.fields[:0]
	if cap(p.scratch) < len(line) {
		p.scratch = make([]byte, 0, len(line))
	}
	p.scratch = p.scratch[:0]
	d := p.opt.Delimiter
	for {
		if len(line) > 0 && line[0] == '"' {
			start := len(p.scratch)
			i := 1
			for {
				j := bytes.IndexByte(line[i:], '"')
				if j < 0 {
					return nil, errors.New("unterminated quoted field")
				}
				p.scratch = append(p.scratch, line[i:i+j]...)
				i += j + 1
				if i < len(line) && line[i] == '"' {
					p.scratch = append(p.scratch, '"')
					i++
					continue
				}
				break
			}
			p.fields = append(p.fields, p.scratch[start:len(p.scratch):len(p.scratch)])
			line = line[i:]
			if len(line) == 0 {
				return p.fields, nil
			}
			if line[0] != d {
				return nil, errors.New("text after a closing quote")
			}
			line = line[1:]
			continue
		}
		i := bytes.IndexByte(line, d)
		if i < 0 {
			p.fields = append(p.fields, line)
			return p.fields, nil
		}
		p.fields = append(p.fields, line[:i])
		line = line[i+1:]
	}
}

func (p *csvParser) parse(line []byte, rec *Record) error {
	rec.reset()
	cols, err := p.split(line)
	if err != nil {
		return err
	}
	if len(cols) != p.ncol {
		return fmt.Errorf("%d fields, the header has %d", len(cols), p.ncol)
	}
	get := func(i int) []byte {
		if p.idx[i] < 0 {
			return nil
		}
		return cols[p.idx[i]]
	}
	if rec.Time, rec.TimeNs, err = parseTime(get(0), p.opt.TimeFormat); err != nil {
		return err
	}
	rec.Host, rec.User, rec.Method, rec.Path = get(1), get(2), get(3), get(4)
	if s := get(5); len(s) > 0 {
		var ok bool
		if rec.Status, ok = parseStatus(s); !ok {
			return errors.New("status is not 100..999 or -")
		}
	}
	rec.UserAgent, rec.Referer, rec.Label = get(6), get(7), get(8)
	return nil
}

// maxUnix bounds accepted times (year 9999) so nanoseconds fit in int64 math.
const maxUnix = 253402300799

func parseTime(b []byte, f TimeFormat) (sec, ns int64, err error) {
	b = bytes.TrimSpace(b) // in place: a line's time allocates nothing
	if len(b) == 0 {
		return 0, 0, errors.New("empty time")
	}
	switch f {
	case TimeUnix, TimeUnixMs, TimeUnixUs, TimeUnixNs:
		return parseUnixDecimal(b, unitScale(f))
	case TimeRFC3339:
		return parseRFC3339(b)
	case TimeAuto:
		if (b[0] >= '0' && b[0] <= '9' || b[0] == '.') && !bytes.ContainsAny(b, "-:/T") {
			return parseUnixDecimal(b, guessScale(b))
		}
		if b[0] != '[' && bytes.IndexByte(b, '/') < 0 {
			return parseRFC3339(b)
		}
	}
	b = bytes.TrimSuffix(bytes.TrimPrefix(b, []byte("[")), []byte("]"))
	t, perr := parseCLFTime(b)
	if perr != nil {
		return 0, 0, fmt.Errorf("time %q: %v", b, perr)
	}
	return t, 0, nil
}
