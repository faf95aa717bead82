package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
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

var timeVars = map[Format]string{
	FormatNginx:     "$msec, $time_iso8601 or $time_local",
	FormatEnvoyText: "%START_TIME%",
	FormatHAProxy:   "%t, %tr, %T or %Ts",
}

// ftoken is a literal or a variable of a format string.
type ftoken struct {
	isVar bool
	lit   string
	name  string
	f     tfield
}

// nginxVars are the nginx variables a log_format may hold that ratesweep
// reads; any other variable is skipped.
var nginxVars = map[string]tfield{
	"remote_addr": tIP, "realip_remote_addr": tIP,
	"http_x_forwarded_for": tXFF, "proxy_add_x_forwarded_for": tXFF,
	"remote_user": tUser,
	"time_local":  tTimeCLF, "time_iso8601": tTimeRFC, "msec": tTimeUnix,
	"request": tRequest, "request_method": tMethod, "request_uri": tPath,
	"uri": tPath, "document_uri": tPath, "args": tQuery, "query_string": tQuery,
	"status": tStatus, "body_bytes_sent": tBytes, "bytes_sent": tBytes,
	"http_referer": tReferer, "http_user_agent": tUserAgent,
	"limit_req_status": tLimitReq,
}

// nginxTokens splits an nginx log_format string: $name or ${name}
// variables (letters, digits and _) between literal text.
func nginxTokens(s string) ([]ftoken, error) {
	var out []ftoken
	lit := strings.Builder{}
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			lit.WriteByte(s[i])
			continue
		}
		j, name := i+1, ""
		if j < len(s) && s[j] == '{' {
			k := strings.IndexByte(s[j:], '}')
			if k < 0 {
				return nil, errors.New("${ without a closing }")
			}
			name, i = s[j+1:j+k], j+k
		} else {
			for j < len(s) && (isWordByte(s[j])) {
				j++
			}
			name, i = s[i+1:j], j-1
		}
		if name == "" {
			return nil, errors.New("$ without a variable name")
		}
		if lit.Len() > 0 {
			out = append(out, ftoken{lit: lit.String()})
			lit.Reset()
		}
		out = append(out, ftoken{isVar: true, name: "$" + name, f: nginxVars[name]})
	}
	if lit.Len() > 0 {
		out = append(out, ftoken{lit: lit.String()})
	}
	return out, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// envoyTokens splits an envoy format string: %OPERATOR%, %OPERATOR(arg)%
// and %OPERATOR(arg):N% command operators between literal text ("%%" is a
// percent sign).
func envoyTokens(s string) ([]ftoken, error) {
	var out []ftoken
	lit := strings.Builder{}
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			lit.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			lit.WriteByte('%')
			i++
			continue
		}
		// The operator runs to the next % outside parentheses.
		j, depth := i+1, 0
		for ; j < len(s); j++ {
			if s[j] == '(' {
				depth++
			} else if s[j] == ')' {
				depth--
			} else if s[j] == '%' && depth == 0 {
				break
			}
		}
		if j == len(s) {
			return nil, fmt.Errorf("%s without a closing %%", s[i:])
		}
		op := s[i+1 : j]
		i = j
		if lit.Len() > 0 {
			out = append(out, ftoken{lit: lit.String()})
			lit.Reset()
		}
		out = append(out, ftoken{isVar: true, name: "%" + op + "%", f: envoyField(op)})
	}
	if lit.Len() > 0 {
		out = append(out, ftoken{lit: lit.String()})
	}
	return out, nil
}

// envoyField is what an envoy command operator holds.
func envoyField(op string) tfield {
	if k := strings.LastIndexByte(op, ')'); k >= 0 {
		op = op[:k+1] // %REQ(USER-AGENT):10%: the length is of no matter
	} else if k := strings.IndexByte(op, ':'); k >= 0 {
		op = op[:k]
	}
	name, arg, _ := strings.Cut(op, "(")
	arg = strings.ToLower(strings.TrimSuffix(arg, ")"))
	switch name {
	case "START_TIME":
		return tTimeAuto
	case "DOWNSTREAM_REMOTE_ADDRESS", "DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT",
		"DOWNSTREAM_DIRECT_REMOTE_ADDRESS", "DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT":
		return tIP
	case "RESPONSE_CODE":
		return tStatus
	case "RESPONSE_FLAGS":
		return tFlags
	case "BYTES_SENT":
		return tBytes
	case "REQ":
		switch arg {
		case ":method":
			return tMethod
		case ":path", "x-envoy-original-path?:path", "x-envoy-original-path", ":path?x-envoy-original-path":
			return tPath
		case "x-forwarded-for":
			return tXFF
		case "user-agent":
			return tUserAgent
		case "referer", "referrer":
			return tReferer
		}
	}
	return tSkip
}

// haproxyVars are the HAProxy log-format variables ratesweep reads.
var haproxyVars = map[string]tfield{
	"ci": tIP, "t": tTimeHAProxy, "tr": tTimeHAProxy, "T": tTimeCLF, "Ts": tTimeUnix,
	"r": tRequest, "HM": tMethod, "HU": tPath, "ST": tStatus, "B": tBytes, "tsc": tFlags,
	"[src]": tIP, "[req.hdr(x-forwarded-for)]": tXFF, "[req.fhdr(x-forwarded-for)]": tXFF,
	"[req.hdr(user-agent)]": tUserAgent, "[req.fhdr(user-agent)]": tUserAgent,
	"[req.hdr(referer)]": tReferer, "[capture.req.hdr(0)]": tSkip,
}

// haproxyTokens splits an HAProxy log-format string: %name, %{flags}name
// and %[sample fetch] between literal text ("%%" is a percent sign; a
// backslash escapes a space).
func haproxyTokens(s string) ([]ftoken, error) {
	var out []ftoken
	lit := strings.Builder{}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			lit.WriteByte(s[i+1])
			i++
			continue
		case s[i] != '%':
			lit.WriteByte(s[i])
			continue
		case i+1 < len(s) && s[i+1] == '%':
			lit.WriteByte('%')
			i++
			continue
		}
		j := i + 1
		quoted := false
		if j < len(s) && s[j] == '{' {
			k := strings.IndexByte(s[j:], '}')
			if k < 0 {
				return nil, errors.New("%{ without a closing }")
			}
			quoted = strings.Contains(s[j:j+k], "+Q")
			j += k + 1
		}
		var name string
		if j < len(s) && s[j] == '[' {
			k := strings.IndexByte(s[j:], ']')
			if k < 0 {
				return nil, errors.New("%[ without a closing ]")
			}
			name, i = s[j:j+k+1], j+k
		} else {
			k := j
			for k < len(s) && (s[k] >= 'a' && s[k] <= 'z' || s[k] >= 'A' && s[k] <= 'Z') {
				k++
			}
			name, i = s[j:k], k-1
		}
		if name == "" {
			return nil, errors.New("% without a variable name")
		}
		if quoted {
			lit.WriteByte('"')
		}
		if lit.Len() > 0 {
			out = append(out, ftoken{lit: lit.String()})
			lit.Reset()
		}
		out = append(out, ftoken{isVar: true, name: "%" + name, f: haproxyVars[name]})
		if quoted {
			lit.WriteByte('"')
		}
	}
	if lit.Len() > 0 {
		out = append(out, ftoken{lit: lit.String()})
	}
	return out, nil
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

// client is the address the proxy believes: of the X-Forwarded-For hops
// and then the peer's address, the last one that is not a trusted proxy
// (the first untrusted hop from the right), or the first hop when all
// are trusted. Without trusted proxies it is the peer's address, or the
// last X-Forwarded-For hop when the format has no peer address.
func (t *template) client(ip, xff []byte) []byte {
	if len(t.trusted) == 0 || len(xff) == 0 {
		if len(ip) > 0 || len(xff) == 0 {
			return ip
		}
		return lastHop(xff)
	}
	if len(ip) > 0 && !isTrusted(ip, t.trusted) {
		return ip
	}
	if h := forwardedClient(xff, t.trusted); len(h) > 0 {
		return h
	}
	return ip
}

// forwardedClient is the client an X-Forwarded-For list names for a server
// behind the trusted proxies: the first hop from the right that is not a
// trusted proxy, or the first hop when all are (its port stripped). With no
// trusted proxies it is the last hop, the address the nearest proxy saw:
// the hops to its left are what the client claims.
func forwardedClient(xff []byte, trusted []netip.Prefix) []byte {
	for len(xff) > 0 {
		h := lastHop(xff)
		i := bytes.LastIndexByte(xff, ',')
		if i < 0 || !isTrusted(h, trusted) {
			return h
		}
		xff = xff[:i]
	}
	return nil
}

// lastHop is the last address of an X-Forwarded-For list, its port
// stripped.
func lastHop(xff []byte) []byte {
	if i := bytes.LastIndexByte(xff, ','); i >= 0 {
		xff = xff[i+1:]
	}
	return stripPort(bytes.TrimSpace(xff))
}

// isTrusted reports whether addr is among the trusted proxies.
func isTrusted(addr []byte, trusted []netip.Prefix) bool {
	if len(trusted) == 0 {
		return false
	}
	a, err := netip.ParseAddr(string(addr))
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ParseTrustedProxy parses an address or a CIDR prefix.
func ParseTrustedProxy(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, fmt.Errorf("%q is not an address or a CIDR prefix such as 10.0.0.0/8", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or a CIDR prefix such as 10.0.0.0/8", s)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// parseHAProxyTime parses HAProxy's accept date, dd/Mon/yyyy:HH:MM:SS.mmm,
// written without a zone: read as UTC.
func parseHAProxyTime(b []byte) (sec, ns int64, err error) {
	if len(b) != 24 || b[20] != '.' {
		return 0, 0, errors.New("time is not dd/Mon/yyyy:HH:MM:SS.mmm")
	}
	var clf [26]byte
	copy(clf[:], b[:20])
	copy(clf[20:], " +0000")
	if sec, err = parseCLFTime(clf[:]); err != nil {
		return 0, 0, err
	}
	if sec < 0 || sec > maxUnix {
		return 0, 0, errors.New("time is before 1970 or after 9999")
	}
	ms, ok := digits(b[21:24])
	if !ok {
		return 0, 0, errors.New("time has a non-digit where a digit belongs")
	}
	return sec, int64(ms) * 1_000_000, nil
}

// stripSyslog drops a syslog header ("Feb  6 12:14:14 host haproxy[14389]: ",
// RFC 3164, with or without its <PRI>) before a message that starts as lead
// does; a line without one is returned as it is.
func stripSyslog(line, lead []byte) []byte {
	if len(lead) > 0 && bytes.HasPrefix(line, lead) {
		return line
	}
	head := line[:min(len(line), 256)]
	i := bytes.Index(head, []byte("]: "))
	if i < 0 {
		return line
	}
	j := bytes.LastIndexByte(head[:i], '[')
	if j < 1 || head[j-1] == ' ' {
		return line
	}
	if _, ok := digits(head[j+1 : i]); !ok || j+1 == i {
		return line
	}
	return line[i+3:]
}
