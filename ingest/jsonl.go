package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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

// jsonScanner walks one JSON text.
type jsonScanner struct {
	b []byte
	i int
}

const maxJSONDepth = 512

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// object reads an object at s.i; active[k] is how many segments of path k
// the enclosing keys matched (-1: path k does not continue here). active is
// passed by value (9 bytes): a pointer to it would put every key's array on
// the heap.
func (s *jsonScanner) object(p *jsonParser, active [len9]int8, depth int) error {
	if depth > maxJSONDepth {
		return jsonError("JSON nested too deeply")
	}
	s.i++ // '{'
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	var keyBuf [64]byte
	for {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return jsonError("JSON object: expected a string key")
		}
		key, _, err := s.str(keyBuf[:0])
		if err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return jsonError("JSON object: expected ':' after a key")
		}
		s.i++
		s.ws()
		// Which paths does this key lead into or end at?
		var next [len9]int8
		leaf, descend := -1, false
		for k := range p.paths {
			next[k] = -1
			if p.paths[k] == nil || active[k] < 0 {
				continue
			}
			d := int(active[k])
			if m := p.paths[k].match(key, d); m > 0 {
				if d+m == len(p.paths[k]) {
					leaf = k
				} else {
					next[k] = int8(d + m)
					descend = true
				}
			}
		}
		switch {
		case leaf >= 0:
			if err := s.leaf(p, leaf, depth); err != nil {
				return err
			}
			// A second path ending at the same key shares the value.
			for k := leaf + 1; k < len(p.paths); k++ {
				if p.paths[k] != nil && active[k] >= 0 && p.paths[k].match(key, int(active[k])) == len(p.paths[k])-int(active[k]) {
					p.vals[k], p.found[k] = p.vals[leaf], true
				}
			}
		case descend && s.i < len(s.b) && s.b[s.i] == '{':
			if err := s.object(p, next, depth+1); err != nil {
				return err
			}
		default:
			if err := s.skip(depth); err != nil {
				return err
			}
		}
		s.ws()
		if s.i >= len(s.b) {
			return jsonError("JSON object not closed")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return jsonError("JSON object: expected ',' or '}'")
		}
	}
}

// leaf reads the value of field k: a string (unescaped), a number or literal
// (as written), null (absent), or an array's first element.
func (s *jsonScanner) leaf(p *jsonParser, k int, depth int) error {
	if s.i >= len(s.b) {
		return jsonError("JSON: missing value")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		v, decoded, err := s.str(p.scratch[k][:0])
		if err != nil {
			return err
		}
		if decoded {
			p.scratch[k] = v[:0] // reuse the decoding buffer next line
		}
		p.vals[k], p.found[k], p.isStr[k] = v, true, true
	case c == '[':
		start := s.i
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] != ']' && (s.b[s.i] == '"' || s.b[s.i] == '-' || s.b[s.i] >= '0' && s.b[s.i] <= '9') {
			if err := s.leaf(p, k, depth+1); err != nil {
				return err
			}
		}
		s.i = start
		return s.skip(depth)
	case c == '{':
		return fmt.Errorf("field %s is an object, not a value", p.paths[k])
	case c == 'n':
		if err := s.skip(depth); err != nil {
			return err
		}
		p.found[k] = true
	default:
		start := s.i
		if err := s.skip(depth); err != nil {
			return err
		}
		p.vals[k], p.found[k] = s.b[start:s.i], true
	}
	return nil
}

// str reads a string at s.i. Without escapes it aliases the line; with
// escapes it is decoded into buf (decoded is true).
func (s *jsonScanner) str(buf []byte) (v []byte, decoded bool, err error) {
	s.i++ // '"'
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			v := s.b[start:s.i]
			s.i++
			return v, false, nil
		}
		if c == '\\' {
			buf = append(buf[:0], s.b[start:s.i]...)
			v, err := s.escaped(buf)
			return v, true, err
		}
		if c < 0x20 {
			return nil, false, jsonError("JSON string with a control character")
		}
		s.i++
	}
	return nil, false, jsonError("JSON string not closed")
}

func (s *jsonScanner) escaped(buf []byte) ([]byte, error) {
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return buf, nil
		case c < 0x20:
			return nil, jsonError("JSON string with a control character")
		case c != '\\':
			buf = append(buf, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			break
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, jsonError("JSON string: bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					s.i += 2
					if r2, ok = s.hex4(); !ok {
						return nil, jsonError("JSON string: bad \\u escape")
					}
				}
				r = utf16.DecodeRune(r, r2)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, jsonError("JSON string: bad escape")
		}
	}
	return nil, jsonError("JSON string not closed")
}

func (s *jsonScanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	s.i += 4
	return r, true
}

// skip passes over one value, checking its syntax.
func (s *jsonScanner) skip(depth int) error {
	if depth > maxJSONDepth {
		return jsonError("JSON nested too deeply")
	}
	if s.i >= len(s.b) {
		return jsonError("JSON: missing value")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		var tmp [0]byte
		_, err := s.strSkip(tmp[:])
		return err
	case c == '{':
		var none [len9]int8
		for k := range none {
			none[k] = -1
		}
		var q jsonParser // no paths: every key is skipped
		return s.object(&q, none, depth+1)
	case c == '[':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return nil
		}
		for {
			s.ws()
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) {
				return jsonError("JSON array not closed")
			}
			if s.b[s.i] == ']' {
				s.i++
				return nil
			}
			if s.b[s.i] != ',' {
				return jsonError("JSON array: expected ',' or ']'")
			}
			s.i++
		}
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return jsonError("JSON: unexpected character")
}

// strSkip passes over a string, validating escapes.
func (s *jsonScanner) strSkip(buf []byte) ([]byte, error) {
	s.i++
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return buf, nil
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, jsonError("JSON string not closed")
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				s.i += 2
				if _, ok := s.hex4(); !ok {
					return nil, jsonError("JSON string: bad \\u escape")
				}
			default:
				return nil, jsonError("JSON string: bad escape")
			}
		case c < 0x20:
			return nil, jsonError("JSON string with a control character")
		default:
			s.i++
		}
	}
	return nil, jsonError("JSON string not closed")
}

func (s *jsonScanner) lit(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return jsonError("JSON: unexpected literal")
	}
	s.i += len(w)
	return nil
}

// number passes over a JSON number (RFC 8259 grammar).
func (s *jsonScanner) number() error {
	bad := jsonError("JSON: malformed number")
	if s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return bad
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return bad
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return bad
		}
	}
	return nil
}
