package ingest

// Reading lines: the source under a Reader, lines too long or broken across
// quotes, and the errors that name them.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"unicode/utf8"
)

// jsonArray reports whether a first line opens a JSON array of objects
// ("[" then "{" or the end of the line, as gcloud logging read
// --format=json writes it).
func jsonArray(line []byte) bool {
	rest := bytes.TrimLeft(line[1:], " \t")
	return len(rest) == 0 || rest[0] == '{'
}

// openQuote reports whether a CSV line ends inside a quoted field (one that
// starts with a quote, RFC 4180); quotes inside unquoted fields are data.
func openQuote(line []byte, delim byte) bool {
	if bytes.IndexByte(line, '"') < 0 {
		return false // no quote at all (most lines)
	}
	inQuotes, fieldStart := false, true
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQuotes:
			if c == '"' {
				if i+1 < len(line) && line[i+1] == '"' {
					i++ // an escaped quote
				} else {
					inQuotes = false
				}
			}
		case fieldStart && c == '"':
			inQuotes = true
			fieldStart = false
		case c == delim:
			fieldStart = true
		default:
			fieldStart = false
		}
	}
	return inQuotes
}

// joinCSV reads the lines that continue a quoted CSV field (a newline inside
// quotes, as encoding/csv reads it) and returns the whole record, or nil when
// it exceeds max_line_bytes or the input ends inside the quotes (counted as
// malformed at its first line).
func (r *Reader) joinCSV(line []byte) ([]byte, error) {
	first := r.line
	r.joined = append(r.joined[:0], line...)
	for openQuote(r.joined, r.csv.opt.Delimiter) {
		next, err := r.readLine()
		if err == io.EOF {
			r.badAt(first, r.joined, "quoted field not closed before the end of the input")
			return nil, r.stopErr()
		}
		if err != nil {
			return nil, err
		}
		if next == nil {
			r.badAt(first, r.joined, "quoted field runs into an over-long line")
			return nil, r.stopErr()
		}
		r.joined = append(append(r.joined, '\n'), next...)
		r.continued++
		if len(r.joined) > r.opt.MaxLineBytes {
			r.badAt(first, r.joined, fmt.Sprintf("record of more than %d bytes (a quoted field not closed?)", r.opt.MaxLineBytes))
			// Skip to the end of the open field, bounded by the input.
			return nil, r.stopErr()
		}
	}
	return r.joined, nil
}

// stopErr is the error that stops a strict scan after badAt (nil otherwise).
func (r *Reader) stopErr() error {
	if r.opt.Strict && len(r.samples) > 0 {
		e := r.samples[len(r.samples)-1]
		return &e
	}
	return nil
}

// bad counts a malformed line; it returns false when that stops the scan.
func (r *Reader) bad(line []byte, msg string) bool { return r.badAt(r.line, line, msg) }

// badAt counts a malformed record that starts at line n.
func (r *Reader) badAt(n int64, line []byte, msg string) bool {
	r.malformed++
	r.reasons = countReason(r.reasons, msg)
	if len(r.samples) >= MaxSamples && !r.opt.Strict {
		return true // counted; the excerpt is for samples only
	}
	e := LineError{Line: n, Msg: msg, Excerpt: excerpt(line)}
	if len(r.samples) < MaxSamples {
		r.samples = append(r.samples, e)
	}
	if r.opt.Strict {
		r.err = &e
		return false
	}
	return true
}

// readLine returns the next line without its "\n" or "\r\n". An over-long
// line is counted as malformed, skipped to its end, and returned as nil.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice()
	r.line++
	if err == bufio.ErrBufferFull || (err == nil && len(line) > r.opt.MaxLineBytes+1) {
		head := excerpt(line)
		n := int64(len(line))
		for err == bufio.ErrBufferFull {
			line, err = r.br.ReadSlice()
			n += int64(len(line))
		}
		if err != nil && err != io.EOF {
			return nil, r.ioErr(err)
		}
		r.malformed++
		r.reasons = countReason(r.reasons, reasonTooLong)
		e := LineError{Line: r.line, Msg: fmt.Sprintf("line of %d bytes exceeds the limit of %d bytes", n, r.opt.MaxLineBytes), Excerpt: head}
		if len(r.samples) < MaxSamples {
			r.samples = append(r.samples, e)
		}
		if r.opt.Strict {
			return nil, &e
		}
		return nil, nil
	}
	if err != nil {
		if err != io.EOF {
			return nil, r.ioErr(err)
		}
		if len(line) == 0 {
			r.line--
			return nil, io.EOF
		}
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > 0 && line[0] == 0 {
		// NUL bytes before a line: the gap a truncated or preallocated
		// file leaves (logrotate copytruncate); never part of a field.
		k := 0
		for k < len(line) && line[k] == 0 {
			k++
		}
		line = line[k:]
		r.nulPrefixed++
	}
	if len(line) > r.opt.MaxLineBytes {
		return r.tooLong(line)
	}
	return line, nil
}

// tooLong counts a final line (no newline) longer than the limit.
func (r *Reader) tooLong(line []byte) ([]byte, error) {
	r.malformed++
	r.reasons = countReason(r.reasons, reasonTooLong)
	e := LineError{Line: r.line, Msg: fmt.Sprintf("line of %d bytes exceeds the limit of %d bytes", len(line), r.opt.MaxLineBytes), Excerpt: excerpt(line)}
	if len(r.samples) < MaxSamples {
		r.samples = append(r.samples, e)
	}
	if r.opt.Strict {
		return nil, &e
	}
	return nil, nil
}

func (r *Reader) ioErr(err error) error {
	if r.compress != CompressNone {
		return fmt.Errorf("%s: %v", r.compress, err)
	}
	return err
}

// excerpt is a short printable form of a line for messages.
func excerpt(line []byte) string {
	const max = 120      // bytes of a printable line
	const maxBinary = 40 // bytes of a line shown quoted (up to 4 times longer)
	line = bytes.TrimRight(line, "\r\n")
	binary := !utf8.Valid(line) || bytes.ContainsFunc(line, func(r rune) bool { return r < 0x20 && r != '\t' })
	n := max
	if binary {
		n = maxBinary
	}
	more := len(line) > n
	if more {
		line = line[:n]
	}
	var s string
	if binary {
		s = fmt.Sprintf("%q", line)
	} else {
		s = "«" + strings.ToValidUTF8(string(line), "\uFFFD") + "»"
	}
	if more {
		s += "…"
	}
	return s
}

// source is a stream of records: a line Reader or a Parquet file.
type source interface {
	Scan() bool
	Record() *Record
	Err() error
	Format() Format
	Close() error
	// reject counts the current record as malformed; false stops the scan.
	reject(msg string) bool
	stats(s *Stats)
}

func (r *Reader) reject(msg string) bool { return r.bad(r.raw, msg) }

func (r *Reader) stats(s *Stats) {
	s.Lines, s.Malformed, s.Samples = r.line, r.malformed, r.samples
	s.InvalidUTF8, s.Gzipped, s.Compression = r.badUTF8, r.gzipped, r.compress
	s.Filtered, s.Blank, s.Continued = r.filtered, r.blank, r.continued
	s.NULPrefixed = r.nulPrefixed
	s.Reasons = maps.Clone(r.reasons)
	if r.w3c != nil {
		s.FieldsChanges = r.w3c.changes
	}
	if r.json != nil {
		for i, p := range r.json.paths {
			if p != nil {
				if s.MissingFields == nil {
					s.MissingFields = map[string]int64{}
				}
				s.MissingFields[CSVColumnFields[i]+" ("+p.String()+")"] = r.json.missing[i]
			}
		}
	}
}

// Close releases the decompressor, if any (not the underlying reader).
func (r *Reader) Close() error {
	if r.closeZ != nil {
		return r.closeZ()
	}
	return nil
}

// newSource opens a Parquet source when the format says so or when r is a
// file that starts with Parquet's magic bytes, and a line Reader otherwise.
func newSource(r io.Reader, opt ReaderOptions) (source, error) {
	if opt.Format == FormatAuto || opt.Format == FormatParquet {
		ras, ok := r.(parquetFile)
		if ok && (opt.Format == FormatParquet || isParquet(ras)) {
			return newParquetSource(ras, opt)
		}
		if opt.Format == FormatParquet {
			return nil, errors.New("parquet needs a seekable file")
		}
	}
	return NewReader(r, opt)
}
