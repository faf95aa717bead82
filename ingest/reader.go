package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"unicode/utf8"
)

// DefaultMaxLineBytes bounds one log line; longer lines are malformed and
// skipped without being held in memory.
const DefaultMaxLineBytes = 64 << 10

// MaxSamples is how many malformed lines a Reader keeps for messages.
const MaxSamples = 5

// MaxDetectLines bounds the unrecognisable lines an auto-detecting Reader
// skips (as malformed) before it gives up.
const MaxDetectLines = 100

// ReaderOptions configure a Reader. The zero value reads an auto-detected
// format with the default line bound.
type ReaderOptions struct {
	Format       Format
	CSV          CSVOptions
	MaxLineBytes int  // default DefaultMaxLineBytes
	Strict       bool // the first malformed line is an error
	// Template is the format string of envoy-text (envoy_format), haproxy
	// (haproxy_format) or nginx (nginx_log_format); empty: the default.
	Template string
	// TrustedProxies are the addresses of proxies in front of the server
	// (envoy-text, haproxy and nginx formats with X-Forwarded-For): the key
	// ip is the first X-Forwarded-For hop from the right that is not one.
	TrustedProxies []netip.Prefix
	// key are the key's fields (set by Build): a W3C #Fields: header
	// without their columns is an error.
	key []Field
}

// fatalError is a line that stops the reading (a W3C header without the
// key's column).
type fatalError struct{ error }

// LineError is a malformed line: its number, reason and a short excerpt.
type LineError struct {
	Line    int64  `json:"line"`
	Msg     string `json:"reason"`
	Excerpt string `json:"excerpt"` // at most 120 bytes, quoted if not printable UTF-8
}

func (e *LineError) Error() string {
	return fmt.Sprintf("line %d: %s: %s", e.Line, e.Msg, e.Excerpt)
}

// Reader reads requests from a log, line by line, in constant memory. It is
// modelled on bufio.Scanner: call Scan until it returns false, then Err.
// Malformed lines are counted and skipped (or fail Scan when Strict).
type Reader struct {
	opt         ReaderOptions
	br          *lineBuffer
	closeZ      func() error   // releases the decompressor
	read        countingReader // the log's bytes as decompressed, counted (every member and frame)
	parse       func([]byte, *Record) error
	clf         *clfClock // set for Common and Combined lines: parse, called directly
	csv         *csvParser
	json        *jsonParser
	w3c         *w3cParser
	joined      []byte // a CSV record whose quoted field spans lines
	rec         Record
	raw         []byte // the last line read
	line        int64
	err         error
	started     bool
	undetected  int // lines before the format was detected
	malformed   int64
	samples     []LineError
	badUTF8     int64
	blank       int64
	filtered    int64 // directive and header lines
	continued   int64 // lines that continue a CSV record (quoted newlines)
	reasons     map[string]int64
	format      Format
	gzipped     bool
	compress    Compression
	nulPrefixed int64 // lines that started with NUL bytes
}

// NewReader returns a Reader over r, which may be compressed with gzip,
// zstd, bzip2 or xz (detected by its magic bytes).
func NewReader(r io.Reader, opt ReaderOptions) (*Reader, error) {
	if opt.MaxLineBytes <= 0 {
		opt.MaxLineBytes = DefaultMaxLineBytes
	}
	rd := &Reader{opt: opt, format: opt.Format}
	zr, c, closeZ, err := decompress(bufio.NewReaderSize(r, 64<<10))
	if err != nil {
		return nil, err
	}
	rd.closeZ, rd.compress, rd.gzipped = closeZ, c, c == CompressGzip
	rd.read.r = zr
	rd.br = newLineBuffer(&rd.read, max(256<<10, opt.MaxLineBytes+2))
	if opt.Format == FormatCSV {
		p, err := newCSVParser(opt.CSV)
		if err != nil {
			return nil, err
		}
		rd.csv, rd.parse = p, p.parse
	}
	if opt.Format.IsJSON() {
		if err := rd.useJSON(opt.Format); err != nil {
			return nil, err
		}
	}
	if opt.Format.Templated() {
		if err := rd.useTemplate(opt.Format); err != nil {
			return nil, err
		}
	}
	return rd, nil
}

// useJSON sets up the JSON lines parser of format f (generic or a preset).
func (r *Reader) useJSON(f Format) error {
	o := jsonOptions(f, r.opt.CSV)
	if o.Columns["time"] == "" {
		if f == FormatJSONL && r.opt.Format == FormatAuto {
			return errors.New("JSON lines that match no preset (envoy, caddy, traefik, cloudflare, gcp-lb): give format: jsonl with jsonl: {columns: {time: PATH, ip: PATH, ...}}")
		}
		return errors.New("jsonl needs a time field path (jsonl: {columns: {time: PATH, ...}})")
	}
	p, err := newJSONParser(o)
	if err != nil {
		return err
	}
	p.trusted = r.opt.TrustedProxies
	r.json, r.parse = p, p.parse
	return nil
}

// hasPath reports whether a JSON line has the field path.
func hasPath(line []byte, path string) bool {
	p, err := newJSONParser(CSVOptions{TimeFormat: TimeAuto, Columns: map[string]string{"time": path}})
	if err != nil {
		return false
	}
	var rec Record
	p.parse(line, &rec)
	return p.found[0]
}

// Templated reports whether f reads lines by a format string (envoy-text,
// haproxy, nginx).
func (f Format) Templated() bool {
	return f == FormatEnvoyText || f == FormatHAProxy || f == FormatNginx
}

// JSON reports whether f reads JSON lines (jsonl or a JSON preset).
func (f Format) JSON() bool { return f >= FormatJSONL && f <= FormatGCPLB }

// useTemplate sets up the parser of a format read by a format string: the
// configured one, or the format's default (HAProxy's httplog line is read
// by ParseHAProxy, which also takes a syslog header).
func (r *Reader) useTemplate(f Format) error {
	s := r.opt.Template
	switch {
	case s != "":
	case f == FormatHAProxy:
		r.parse = ParseHAProxy
		return nil
	case f == FormatEnvoyText:
		s = EnvoyDefaultFormat
	case f == FormatNginx:
		s = NginxCombinedFormat
	}
	t, err := newTemplate(f, s, r.opt.TrustedProxies)
	if err != nil {
		return err
	}
	r.parse = t.parse
	return nil
}

// Format is the log's format (detected after the first Scan when auto).
func (r *Reader) Format() Format { return r.format }

// Gzipped reports whether the input was gzip-compressed.
func (r *Reader) Gzipped() bool { return r.gzipped }

// Compression is the input's compression (CompressNone when plain).
func (r *Reader) Compression() Compression { return r.compress }

// Record returns the last request read; valid until the next Scan.
func (r *Reader) Record() *Record { return &r.rec }

// Lines is the number of lines read so far (header and blank lines included).
func (r *Reader) Lines() int64 { return r.line }

// Malformed is the number of malformed lines skipped so far.
func (r *Reader) Malformed() int64 { return r.malformed }

// Samples are the first MaxSamples malformed lines.
func (r *Reader) Samples() []LineError { return r.samples }

// InvalidUTF8 is the number of accepted lines that are not valid UTF-8.
func (r *Reader) InvalidUTF8() int64 { return r.badUTF8 }

// Blank is the number of empty lines skipped.
func (r *Reader) Blank() int64 { return r.blank }

// Err is the error that stopped Scan: nil at the end of the input.
func (r *Reader) Err() error { return r.err }

// Scan reads the next request. It returns false at the end of the input or
// on an error (see Err). It is the reader's per-line loop (blank and
// malformed lines, quoted fields across lines, strict mode) kept in one
// function so that a line costs one call.
func (r *Reader) Scan() bool {
	if r.err != nil {
		return false
	}
	for {
		line, err := r.readLine()
		if err != nil {
			if err != io.EOF {
				r.err = err
			} else if !r.started && r.undetected > 0 {
				s := r.samples[0]
				r.err = fmt.Errorf("line %d: cannot detect the log format from %s (give the format)", s.Line, s.Excerpt)
			}
			return false
		}
		if r.line == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
		}
		if line == nil {
			continue // an over-long line, already counted
		}
		if len(line) == 0 {
			r.blank++
			continue
		}
		if !r.started {
			if line[0] == '[' && (r.opt.Format == FormatAuto || r.opt.Format.IsJSON()) && jsonArray(line) {
				r.err = fmt.Errorf("line %d: a JSON array, not JSON lines (one object per line): convert it with jq -c '.[]' FILE", r.line)
				return false
			}
			if r.opt.Format == FormatAuto && Detect(line) == FormatAuto {
				// Junk before the first recognisable line is malformed.
				r.undetected++
				if r.undetected > MaxDetectLines {
					r.err = fmt.Errorf("line %d: cannot detect the log format in the first %d lines (give the format); line %d: %s",
						r.line, MaxDetectLines, r.samples[0].Line, r.samples[0].Excerpt)
					return false
				}
				if !r.bad(line, "log format not recognised") {
					return false
				}
				continue
			}
			r.started = true
			hdr, err := r.first(line)
			if err != nil {
				r.err = fmt.Errorf("line %d: %v", r.line, err)
				return false
			}
			if hdr {
				r.filtered++
				continue
			}
		}
		first, joined := r.line, false
		if r.csv != nil && r.started && openQuote(line, r.csv.opt.Delimiter) {
			joined = true
			if line, err = r.joinCSV(line); err != nil {
				r.err = err
				return false
			}
			if line == nil {
				continue // counted as malformed
			}
		}
		r.raw = line
		var perr error
		if r.clf != nil {
			perr = parseCombined(line, &r.rec, r.clf)
		} else {
			perr = r.parse(line, &r.rec)
		}
		if perr != nil {
			if perr == errDirective {
				r.filtered++
				continue
			}
			if fe, ok := perr.(fatalError); ok {
				r.err = fmt.Errorf("line %d: %v", first, fe.error)
				return false
			}
			if !r.badAt(first, line, perr.Error()) {
				return false
			}
			continue
		}
		if (joined || !r.br.lastASCII()) && !utf8.Valid(line) {
			r.badUTF8++
		}
		r.rec.Line = first
		return true
	}
}

// first handles the first non-empty line: format detection and headers. It
// reports whether the line is a header.
func (r *Reader) first(line []byte) (bool, error) {
	if r.format == FormatAuto {
		r.format = Detect(line)
		if r.format == FormatAuto {
			return false, fmt.Errorf("cannot detect the log format from %s (give the format)", excerpt(line))
		}
		if r.format == FormatCaddy && r.opt.CSV.Columns["ip"] == "" && caddyRemoteIP(line) && !hasPath(line, "request.client_ip") {
			r.opt.CSV.Columns = maps.Clone(r.opt.CSV.Columns)
			if r.opt.CSV.Columns == nil {
				r.opt.CSV.Columns = map[string]string{}
			}
			r.opt.CSV.Columns["ip"] = caddyLegacyIP
		}
	}
	switch r.format {
	case FormatCLF, FormatCombined:
		r.clf = new(clfClock)
		r.parse = r.clf.parseCombined
	case FormatNASATSV:
		r.parse = ParseNASATSV
		return bytes.Equal(bytes.TrimRight(line, "\t"), bytes.TrimRight(nasaHeader, "\t")), nil
	case FormatCSV:
		if r.csv == nil {
			return false, errors.New("csv needs options (time column)")
		}
		return true, r.csv.header(line)
	case FormatALB:
		r.parse = ParseALB
	case FormatW3C:
		r.w3c = newW3CParser(&r.line)
		r.w3c.key = r.opt.key
		r.parse = r.w3c.parse
	case FormatEnvoyText, FormatHAProxy, FormatNginx:
		if r.parse == nil {
			return false, r.useTemplate(r.format)
		}
	default:
		if r.format.IsJSON() {
			if r.json == nil {
				return false, r.useJSON(r.format)
			}
			return false, nil
		}
		return false, fmt.Errorf("unsupported format %v", r.format)
	}
	return false, nil
}

// Detect guesses a format from a first line: the NASA TSV header or a
// tab-separated line, or a line that parses as CLF/Combined. It returns
// FormatAuto when nothing fits (CSV needs explicit options).
func Detect(line []byte) Format {
	if bytes.HasPrefix(line, []byte("host\tlogname\ttime\t")) {
		return FormatNASATSV
	}
	if len(line) > 0 && line[0] == '{' {
		return detectJSON(line)
	}
	for _, d := range []string{"#Version:", "#Fields:", "#Software:"} {
		if bytes.HasPrefix(line, []byte(d)) {
			return FormatW3C
		}
	}
	var rec Record
	if ParseCombined(line, &rec) == nil {
		if rec.UserAgent != nil || rec.Referer != nil {
			return FormatCombined
		}
		return FormatCLF
	}
	if ParseNASATSV(line, &rec) == nil {
		return FormatNASATSV
	}
	if ParseALB(line, &rec) == nil {
		return FormatALB
	}
	if ParseHAProxy(line, &rec) == nil {
		return FormatHAProxy
	}
	if len(line) > 0 && line[0] == '[' {
		if t, err := newTemplate(FormatEnvoyText, EnvoyDefaultFormat, nil); err == nil && t.parse(line, &rec) == nil {
			return FormatEnvoyText
		}
	}
	return FormatAuto
}
