package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// errDirective marks a line that is not a request but part of the log's
// structure (a W3C "#" directive): counted as filtered, never malformed.
var errDirective = errors.New("directive line")

// w3cParser reads the W3C extended log format (CloudFront, IIS): "#"
// directives, a "#Fields:" header naming the columns, then one request per
// line, fields separated by tabs (CloudFront) or spaces (IIS), "-" for
// empty. A later "#Fields:" header (IIS writes one after each restart)
// applies to the lines after it.
type w3cParser struct {
	idx      [len9]int // column per CSVColumnFields entry, -1 unmapped
	date     int       // the date column, or -1 when the time column holds both
	query    int       // cs-uri-query, appended to the path, or -1
	ncol     int
	header   int64 // line of the last #Fields header (0: none yet)
	bad      string
	fields   [][]byte
	scratch  []byte
	timebuf  []byte
	pathbuf  []byte
	changes  int // #Fields headers that differ from the first
	lastSpec string
	line     *int64
	key      []Field // the key's fields: their columns must be in #Fields:
}

// w3cKeyColumn is the CSVColumnFields index a key field reads in W3C.
var w3cKeyColumn = map[Field]int{FieldIP: 1, FieldUser: 2, FieldMethod: 3, FieldPath: 4, FieldPathPrefix: 4,
	FieldStatus: 5, FieldUserAgent: 6, FieldReferer: 7}

// W3C field names per record field (IIS and CloudFront spellings).
var w3cNames = [len9][]string{
	{"time"},
	{"c-ip"},
	{"cs-username"},
	{"cs-method"},
	{"cs-uri-stem"},
	{"sc-status"},
	{"cs(user-agent)"},
	{"cs(referer)", "cs(referrer)"},
	{"x-label"},
}

func newW3CParser(line *int64) *w3cParser {
	p := &w3cParser{line: line, bad: "no #Fields: header before this line"}
	for i := range p.idx {
		p.idx[i] = -1
	}
	return p
}

func (p *w3cParser) directive(line []byte) error {
	rest, ok := bytes.CutPrefix(line, []byte("#Fields:"))
	if !ok {
		return errDirective // #Version, #Software, #Date, #Remark...
	}
	spec := strings.Join(strings.Fields(string(rest)), " ")
	if p.lastSpec != "" && spec != p.lastSpec {
		p.changes++
	}
	p.lastSpec = spec
	names := strings.Fields(strings.ToLower(spec))
	for i := range p.idx {
		p.idx[i] = -1
	}
	p.date, p.query, p.ncol = -1, -1, len(names)
	p.header = *p.line
	for j, n := range names {
		for i, alts := range w3cNames {
			for _, a := range alts {
				if n == a && p.idx[i] < 0 {
					p.idx[i] = j
				}
			}
		}
		switch n {
		case "date":
			p.date = j
		case "cs-uri-query":
			p.query = j
		}
	}
	p.bad = ""
	for _, f := range p.key {
		if i, ok := w3cKeyColumn[f]; !ok || p.idx[i] < 0 {
			want := "no W3C column"
			if ok {
				want = strings.Join(w3cNames[i], " or ")
			}
			return fatalError{fmt.Errorf("the #Fields: header has no column for the key field %s (%s); its columns: %s", f, want, spec)}
		}
	}
	if p.idx[0] < 0 || p.date < 0 {
		p.bad = fmt.Sprintf("the #Fields: header at line %d has no date and time fields", p.header)
	}
	return errDirective
}

func (p *w3cParser) parse(line []byte, rec *Record) error {
	rec.reset()
	if len(line) > 0 && line[0] == '#' {
		return p.directive(line)
	}
	if p.bad != "" {
		return errors.New(p.bad)
	}
	sep := byte(' ')
	if bytes.IndexByte(line, '\t') >= 0 {
		sep = '\t'
	}
	p.fields = p.fields[:0]
	for {
		i := bytes.IndexByte(line, sep)
		if i < 0 {
			p.fields = append(p.fields, line)
			break
		}
		p.fields = append(p.fields, line[:i])
		line = line[i+1:]
	}
	if len(p.fields) != p.ncol {
		return fmt.Errorf("%d fields, the #Fields: header at line %d has %d", len(p.fields), p.header, p.ncol)
	}
	get := func(i int) []byte {
		if p.idx[i] < 0 {
			return nil
		}
		v := p.fields[p.idx[i]]
		if len(v) == 1 && v[0] == '-' {
			return nil
		}
		return v
	}
	p.timebuf = append(append(append(append(p.timebuf[:0], p.fields[p.date]...), 'T'), p.fields[p.idx[0]]...), 'Z')
	var err error
	if rec.Time, rec.TimeNs, err = parseRFC3339(p.timebuf); err != nil {
		return fmt.Errorf("date and time %q %q are not yyyy-mm-dd hh:mm:ss[.fff]", excerptString(p.fields[p.date]), excerptString(p.fields[p.idx[0]]))
	}
	rec.Host, rec.User, rec.Method, rec.Path = get(1), get(2), get(3), get(4)
	if p.query >= 0 {
		if q := p.fields[p.query]; len(q) > 0 && !(len(q) == 1 && q[0] == '-') {
			p.pathbuf = append(append(append(p.pathbuf[:0], rec.Path...), '?'), q...)
			rec.Path = p.pathbuf
		}
	}
	if s := get(5); len(s) > 0 {
		var ok bool
		if rec.Status, ok = parseStatus(s); !ok {
			return fmt.Errorf("sc-status %q is not 100..999", excerptString(s))
		}
	}
	rec.UserAgent, rec.Referer, rec.Label = get(6), get(7), get(8)
	return nil
}

// albTypes are the first field of an AWS Application Load Balancer log line.
var albTypes = []string{"http", "https", "h2", "grpcs", "ws", "wss"}

// ParseALB parses one AWS Application Load Balancer access log line:
// space-separated fields, some quoted ("request", "user_agent", …):
//
//	type time elb client:port target:port request_processing_time target_processing_time
//	response_processing_time elb_status_code target_status_code received_bytes sent_bytes
//	"request" "user_agent" ssl_cipher ssl_protocol target_group_arn "trace_id" "domain_name"
//	"chosen_cert_arn" matched_rule_priority request_creation_time …
//
// The request's time is request_creation_time (when the load balancer
// received it) where the line has it, else time (when it sent the response).
// The key ip is the client address without its port; the path is the
// request URL's path and query; the status is elb_status_code.
func ParseALB(line []byte, rec *Record) error {
	rec.reset()
	var f [22][]byte
	n := 0
	for n < len(f) && len(line) > 0 {
		var err error
		if line[0] == '"' {
			if f[n], line, err = quoted(line); err != nil {
				return fmt.Errorf("field %d: %v", n+1, err)
			}
			if len(line) > 0 && line[0] != ' ' {
				return fmt.Errorf("field %d: text after a closing quote", n+1)
			}
		} else {
			i := bytes.IndexByte(line, ' ')
			if i < 0 {
				i = len(line)
			}
			f[n], line = line[:i], line[i:]
		}
		line = skipSpaces(line)
		n++
	}
	if n < 14 {
		return fmt.Errorf("%d fields, an ALB log line has at least 14", n)
	}
	if !contains(albTypes, string(f[0])) {
		return fmt.Errorf("type %q is not one of %s", excerptString(f[0]), strings.Join(albTypes, ", "))
	}
	tf := f[1]
	if n >= 22 && len(f[21]) > 1 {
		tf = f[21]
		// Written when the request completes, timed when it was created:
		// a long request (a WebSocket) is far behind the lines before it.
		rec.Started = true
	}
	var err error
	if rec.Time, rec.TimeNs, err = parseRFC3339(tf); err != nil {
		return err
	}
	rec.Host = stripPort(f[3])
	if len(rec.Host) == 0 || len(rec.Host) == 1 && rec.Host[0] == '-' {
		return errors.New("missing client:port")
	}
	var ok bool
	if rec.Status, ok = parseStatus(f[8]); !ok {
		return fmt.Errorf("elb_status_code %q is not 100..999 or -", excerptString(f[8]))
	}
	if rec.Bytes, ok = parseCount(f[11]); !ok {
		return errors.New("sent_bytes is not a number or -")
	}
	splitRequest(f[12], rec)
	rec.Path = urlPath(rec.Path)
	if len(f[13]) == 1 && f[13][0] == '-' {
		rec.UserAgent = nil
	} else {
		rec.UserAgent = f[13]
	}
	return nil
}
