package ingest

// The JSON scanner under the JSON lines parser: one pass over a line, the
// wanted paths' values picked as it goes.

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

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
