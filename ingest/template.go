package ingest

import (
	"bytes"
	"fmt"
	"net/netip"
)

// tfield is what one variable of a format string holds.
type tfield uint8

const (
	tSkip        tfield = iota
	tIP                 // the peer's address (a port is stripped)
	tXFF                // an X-Forwarded-For list
	tUser               // the authenticated user
	tTimeCLF            // dd/Mon/yyyy:HH:MM:SS +zzzz
	tTimeRFC            // RFC 3339 (nginx $time_iso8601: whole seconds)
	tTimeUnix           // Unix seconds with a decimal fraction (nginx $msec)
	tTimeAuto           // RFC 3339 or a Unix number (envoy %START_TIME%)
	tTimeHAProxy        // dd/Mon/yyyy:HH:MM:SS.mmm, no zone (HAProxy %t, %tr)
	tRequest            // "METHOD target protocol"
	tMethod
	tPath  // the request target: path and query
	tQuery // a query string, appended to the path after "?"
	tStatus
	tBytes
	tReferer
	tUserAgent
	tLimitReq // nginx $limit_req_status
	tFlags    // envoy %RESPONSE_FLAGS%, HAProxy %tsc
)

// precision ranks the time fields: the most precise one a format has is
// the request's time.
func (f tfield) precision() int {
	switch f {
	case tTimeUnix:
		return 4
	case tTimeAuto, tTimeHAProxy:
		return 3
	case tTimeRFC, tTimeCLF:
		return 1
	}
	return 0
}

// tpart is one variable of a format string and the literal text after it.
type tpart struct {
	f      tfield
	name   string // as written, for messages
	lit    []byte
	quoted bool // between double quotes: the closing quote may be escaped
	// capture is HAProxy's {…} of captured headers (%hr, %hs): a frontend
	// without captures writes nothing, nor the separator after it.
	capture bool
}

// template reads lines written by a format string: nginx log_format
// variables ($remote_addr), envoy command operators (%START_TIME%) or
// HAProxy log-format variables (%ci). Each variable's value runs to the
// literal text that follows it in the format.
type template struct {
	lead    []byte // the literal before the first variable
	parts   []tpart
	time    int // the part whose time is used
	syslog  bool
	trusted []netip.Prefix
	pathbuf []byte
}

// templateError is a format string that cannot be read.
func templateError(format, msg string, a ...any) error {
	return fmt.Errorf("format string %q: %s", format, fmt.Sprintf(msg, a...))
}

// newTemplate compiles a format string of kind f (FormatNginx,
// FormatEnvoyText, FormatHAProxy) into its parts.
func newTemplate(f Format, format string, trusted []netip.Prefix) (*template, error) {
	var toks []ftoken
	var err error
	switch f {
	case FormatNginx:
		toks, err = nginxTokens(format)
	case FormatEnvoyText:
		toks, err = envoyTokens(format)
	case FormatHAProxy:
		toks, err = haproxyTokens(format)
	default:
		return nil, fmt.Errorf("format %v has no format string", f)
	}
	if err != nil {
		return nil, templateError(format, "%v", err)
	}
	t := &template{time: -1, trusted: trusted, syslog: f == FormatHAProxy}
	for _, tk := range toks {
		if !tk.isVar {
			if len(t.parts) == 0 {
				t.lead = append(t.lead, tk.lit...)
			} else {
				p := &t.parts[len(t.parts)-1]
				p.lit = append(p.lit, tk.lit...)
			}
			continue
		}
		if n := len(t.parts); n > 0 && len(t.parts[n-1].lit) == 0 {
			return nil, templateError(format, "%s and %s are not separated by text: where one ends is unknown", t.parts[n-1].name, tk.name)
		}
		t.parts = append(t.parts, tpart{f: tk.f, name: tk.name, capture: f == FormatHAProxy && (tk.name == "%hr" || tk.name == "%hs")})
	}
	best := 0
	for i := range t.parts {
		p := &t.parts[i]
		before := t.lead
		if i > 0 {
			before = t.parts[i-1].lit
		}
		p.quoted = bytes.HasSuffix(before, []byte(`"`)) && bytes.HasPrefix(p.lit, []byte(`"`))
		if pr := p.f.precision(); pr > best {
			best, t.time = pr, i
		}
	}
	if t.time < 0 {
		return nil, templateError(format, "no time variable (%s)", timeVars[f])
	}
	return t, nil
}

// parse reads one line into rec.
func (t *template) parse(line []byte, rec *Record) error {
	rec.reset()
	if t.syslog {
		line = stripSyslog(line, t.lead)
	}
	if !bytes.HasPrefix(line, t.lead) {
		return fmt.Errorf("line does not start with %q as the format does", t.lead)
	}
	pos := len(t.lead)
	var ip, xff []byte
	for i := range t.parts {
		p := &t.parts[i]
		rest := line[pos:]
		var v []byte
		switch {
		case p.capture:
			n, err := captureLen(rest, p)
			if err != nil {
				return err
			}
			v, pos = rest[:n], pos+n+len(p.lit)
			if n == 0 {
				pos -= len(p.lit) - len(bytes.TrimLeft(p.lit, " "))
			}
		case p.f == tTimeCLF || p.f == tTimeHAProxy:
			n := 26
			if p.f == tTimeHAProxy {
				n = 24
			}
			if len(rest) < n || !bytes.HasPrefix(rest[n:], p.lit) {
				return fmt.Errorf("%s is not %s", p.name, map[bool]string{true: "dd/Mon/yyyy:HH:MM:SS.mmm", false: "dd/Mon/yyyy:HH:MM:SS +zzzz"}[p.f == tTimeHAProxy])
			}
			v, pos = rest[:n], pos+n+len(p.lit)
		case len(p.lit) == 0:
			v, pos = rest, len(line)
		case i == len(t.parts)-1:
			switch {
			case bytes.HasSuffix(rest, p.lit):
				v = rest[:len(rest)-len(p.lit)]
			case p.quoted && len(p.lit) == 1:
				// A last quoted value cut off before its closing quote
				// (seen in real logs, read so as Combined is) keeps what
				// is there.
				v = rest
			default:
				return fmt.Errorf("line does not end with %q after %s as the format does", p.lit, p.name)
			}
			pos = len(line)
		default:
			j := indexLit(rest, p.lit, p.quoted)
			if j < 0 {
				return fmt.Errorf("no %q after %s", p.lit, p.name)
			}
			v, pos = rest[:j], pos+j+len(p.lit)
		}
		if len(v) == 1 && v[0] == '-' {
			v = nil
		}
		if err := t.assign(p, i, v, rec, &ip, &xff); err != nil {
			return err
		}
	}
	rec.Host, rec.Forwarded = t.client(ip, xff), xff
	return nil
}

// captureLen is the length of HAProxy's captured headers at the start of
// rest ("{…|…}", up to the first "}": HAProxy writes a "}" in a value as
// #7D), 0 when the frontend captures none: HAProxy writes neither the
// braces nor the separating space after them (spaces in a log-format are
// separators, merged, written only after a field that wrote something).
// What follows must be the part's literal text, without its leading
// spaces when the captures are absent.
func captureLen(rest []byte, p *tpart) (int, error) {
	if len(rest) == 0 || rest[0] != '{' {
		if !bytes.HasPrefix(rest, bytes.TrimLeft(p.lit, " ")) {
			return 0, fmt.Errorf("no %q after %s (absent)", bytes.TrimLeft(p.lit, " "), p.name)
		}
		return 0, nil
	}
	k := bytes.IndexByte(rest, '}')
	if k < 0 {
		return 0, fmt.Errorf("%s: { without a closing }", p.name)
	}
	if !bytes.HasPrefix(rest[k+1:], p.lit) {
		return 0, fmt.Errorf("no %q after %s", p.lit, p.name)
	}
	return k + 1, nil
}

// indexLit is the index of lit in b; after a quoted value, a quote escaped
// by a backslash does not end it.
func indexLit(b, lit []byte, quoted bool) int {
	off := 0
	for {
		j := bytes.Index(b[off:], lit)
		if j < 0 || !quoted || lit[0] != '"' {
			if j < 0 {
				return -1
			}
			return off + j
		}
		n := 0
		for k := off + j - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return off + j
		}
		off += j + 1
	}
}

func (t *template) assign(p *tpart, i int, v []byte, rec *Record, ip, xff *[]byte) error {
	var ok bool
	var err error
	switch p.f {
	case tIP:
		*ip = stripPort(v)
	case tXFF:
		*xff = v
	case tUser:
		rec.User = v
	case tRequest:
		splitRequest(v, rec)
	case tMethod:
		rec.Method = v
	case tPath:
		rec.Path = v
	case tQuery:
		if len(v) > 0 {
			t.pathbuf = append(append(append(t.pathbuf[:0], rec.Path...), '?'), v...)
			rec.Path = t.pathbuf
		}
	case tStatus:
		if len(v) == 2 && v[0] == '-' && v[1] == '1' { // HAProxy: no response
			v = nil
		}
		if v != nil {
			if rec.Status, ok = parseStatus(v); !ok {
				return fmt.Errorf("%s %q is not 100..999 or -", p.name, excerptString(v))
			}
		}
	case tBytes:
		if v != nil {
			if rec.Bytes, ok = parseCount(v); !ok {
				return fmt.Errorf("%s %q is not a number or -", p.name, excerptString(v))
			}
		}
	case tReferer:
		rec.Referer = v
	case tUserAgent:
		rec.UserAgent = v
	case tLimitReq:
		rec.Trailer = v
	case tFlags:
		rec.Flags = v
	}
	if i != t.time {
		return nil
	}
	if v == nil {
		return fmt.Errorf("no time in %s", p.name)
	}
	switch p.f {
	case tTimeCLF:
		rec.Time, err = parseCLFTime(v)
	case tTimeRFC:
		rec.Time, rec.TimeNs, err = parseRFC3339(v)
	case tTimeUnix:
		rec.Time, rec.TimeNs, err = parseUnixDecimal(v, 0)
	case tTimeAuto:
		rec.Time, rec.TimeNs, err = parseTime(v, TimeAuto)
	case tTimeHAProxy:
		rec.Time, rec.TimeNs, err = parseHAProxyTime(v)
	}
	if err != nil {
		return fmt.Errorf("%s: %v", p.name, err)
	}
	return nil
}
