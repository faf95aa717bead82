package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// A JSON lines log holds one JSON object per line. Each record field (the
// names of CSVColumnFields) is read from a field path: dotted names
// ("request.remote_ip"), optionally as "$.request.headers.x-forwarded-for", with
// bracketed names for keys that contain dots ("$['a.b'].c"). A key holding
// dots also matches the same path written with dots ("request.remote_ip"
// finds {"request.remote_ip": …} as well as {"request": {"remote_ip": …}}),
// names match exactly or else case-insensitively (header names), and an
// array yields its first element (Caddy's header lists).

// jsonPath is a compiled field path: its segments.
type jsonPath []string

// parseJSONPath compiles a field path.
func parseJSONPath(s string) (jsonPath, error) {
	orig := s
	s = strings.TrimPrefix(s, "$")
	s = strings.TrimPrefix(s, ".")
	var p jsonPath
	for len(s) > 0 {
		if s[0] == '[' {
			if len(s) < 4 || (s[1] != '\'' && s[1] != '"') {
				return nil, fmt.Errorf("field path %q: expected ['name'] after [", orig)
			}
			q := s[1]
			end := strings.IndexByte(s[2:], q)
			if end < 0 || 2+end+1 >= len(s) || s[2+end+1] != ']' {
				return nil, fmt.Errorf("field path %q: unterminated ['name']", orig)
			}
			p = append(p, s[2:2+end])
			s = s[2+end+2:]
			s = strings.TrimPrefix(s, ".")
			continue
		}
		i := strings.IndexAny(s, ".[")
		if i < 0 {
			i = len(s)
		}
		if i == 0 {
			return nil, fmt.Errorf("field path %q: empty name", orig)
		}
		p = append(p, s[:i])
		s = strings.TrimPrefix(s[i:], ".")
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("field path %q is empty", orig)
	}
	return p, nil
}

func (p jsonPath) String() string { return strings.Join(p, ".") }

// match reports how many segments from d a key covers (0: none): the key
// equals segs[d], or segs[d] "." segs[d+1] …, compared case-insensitively.
func (p jsonPath) match(key []byte, d int) int {
	pos := 0
	for m := d; m < len(p); m++ {
		s := p[m]
		if len(key)-pos < len(s) || !strings.EqualFold(string(key[pos:pos+len(s)]), s) {
			return 0
		}
		pos += len(s)
		if pos == len(key) {
			return m + 1 - d
		}
		if key[pos] != '.' {
			return 0
		}
		pos++
	}
	return 0
}

// jsonParser extracts configured fields from JSON object lines without
// allocating per line. Values alias the line or the parser's scratch.
type jsonParser struct {
	opt     CSVOptions
	paths   [len9]jsonPath // per CSVColumnFields entry; nil if unmapped
	vals    [len9][]byte
	found   [len9]bool
	missing [len9]int64 // lines without the field
	scratch [len9][]byte
	isStr   [len9]bool
	urlPath bool           // strip scheme://host from path values (full request URLs)
	stripIP bool           // "addr:port" ip values become the address
	ipList  bool           // the ip field may be an X-Forwarded-For list: take the client it forwards (forwardedClient)
	trusted []netip.Prefix // trusted_proxies
}

func newJSONParser(opt CSVOptions) (*jsonParser, error) {
	if opt.Columns["time"] == "" {
		return nil, errors.New("jsonl needs a time field path (jsonl: {columns: {time: PATH}})")
	}
	p := &jsonParser{opt: opt, urlPath: true, stripIP: true, ipList: true}
	for i, f := range CSVColumnFields {
		s, ok := opt.Columns[f]
		if !ok {
			continue
		}
		path, err := parseJSONPath(s)
		if err != nil {
			return nil, err
		}
		p.paths[i] = path
	}
	for k := range opt.Columns {
		if !contains(CSVColumnFields, k) {
			return nil, fmt.Errorf("jsonl field %q is unknown (known: %s)", k, strings.Join(CSVColumnFields, ", "))
		}
	}
	return p, nil
}

// errJSON is a line that is not one JSON object.
type jsonError string

func (e jsonError) Error() string { return string(e) }

func (p *jsonParser) parse(line []byte, rec *Record) error {
	rec.reset()
	for i := range p.vals {
		p.vals[i], p.found[i], p.isStr[i] = nil, false, false
	}
	s := jsonScanner{b: line}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return jsonError("not a JSON object")
	}
	var active [len9]int8 // depth matched so far per path (0 at the root)
	if err := s.object(p, active, 0); err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return jsonError("text after the JSON object")
	}
	if !p.found[0] || len(p.vals[0]) == 0 {
		return fmt.Errorf("no time at %s", p.paths[0])
	}
	var err error
	if rec.Time, rec.TimeNs, err = parseTime(p.vals[0], p.opt.TimeFormat); err != nil {
		return err
	}
	rec.Host = p.vals[1]
	if p.ipList && bytes.IndexByte(rec.Host, ',') >= 0 {
		if len(p.trusted) > 0 {
			rec.Host = forwardedClient(rec.Host, p.trusted)
		} else {
			rec.Host = firstAddress(rec.Host) // what the client says it is
		}
	}
	if p.stripIP {
		rec.Host = stripPort(rec.Host)
	}
	rec.User, rec.Method, rec.Path = p.vals[2], p.vals[3], p.vals[4]
	if p.urlPath {
		rec.Path = urlPath(rec.Path)
	}
	if v := p.vals[5]; len(v) > 0 {
		var ok bool
		if rec.Status, ok = parseStatus(v); !ok {
			return fmt.Errorf("status %q is not 100..999", excerptString(v))
		}
	}
	rec.UserAgent, rec.Referer, rec.Label = p.vals[6], p.vals[7], p.vals[8]
	for i := range p.paths {
		if p.paths[i] != nil && !p.found[i] {
			p.missing[i]++ // counted over accepted lines only
		}
	}
	return nil
}

// firstAddress is the first entry of a comma-separated address list
// (X-Forwarded-For: "client, proxy1, proxy2").
func firstAddress(b []byte) []byte {
	if i := bytes.IndexByte(b, ','); i >= 0 {
		b = b[:i]
	}
	return bytes.TrimSpace(b)
}

// stripPort turns "1.2.3.4:5678" and "[::1]:80" into the address; anything
// else is returned as it is.
func stripPort(b []byte) []byte {
	if len(b) < 3 || len(b) > 64 {
		return b
	}
	last := -1
	for i, c := range b {
		if c == ':' {
			last = i
		}
	}
	if last < 0 {
		return b
	}
	if ap, err := netip.ParseAddrPort(string(b)); err == nil {
		host := b[:last]
		if ap.Addr().Is6() && len(host) > 2 && host[0] == '[' {
			host = host[1 : len(host)-1]
		}
		return host
	}
	return b
}

// urlPath turns "https://host:443/a/b?q" into "/a/b?q"; a path stays as is.
func urlPath(b []byte) []byte {
	var rest []byte
	switch {
	case hasPrefixFold(b, "http://"):
		rest = b[7:]
	case hasPrefixFold(b, "https://"):
		rest = b[8:]
	case hasPrefixFold(b, "ws://"):
		rest = b[5:]
	case hasPrefixFold(b, "wss://"):
		rest = b[6:]
	default:
		return b
	}
	for i, c := range rest {
		if c == '/' || c == '?' {
			if c == '?' {
				return append([]byte("/"), rest[i:]...)
			}
			return rest[i:]
		}
	}
	return []byte("/")
}

func hasPrefixFold(b []byte, p string) bool {
	return len(b) >= len(p) && strings.EqualFold(string(b[:len(p)]), p)
}
