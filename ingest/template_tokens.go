package ingest

// The three formats' variables: nginx's log_format, envoy's command
// operators, HAProxy's log-format aliases, as a template's tokens.

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

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
