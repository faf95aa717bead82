package ingest

import (
	"bytes"
	"errors"
	"fmt"
)

// EnvoyDefaultFormat is envoy's default access log format string.
const EnvoyDefaultFormat = `[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" ` +
	`%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% ` +
	`%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" ` +
	`"%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"`

// NginxCombinedFormat is nginx's predefined combined log_format, the
// format of format: nginx without nginx_log_format.
const NginxCombinedFormat = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`

// HAProxyHTTPFormat is the log-format of HAProxy's option httplog.
const HAProxyHTTPFormat = `%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r`

// ParseHAProxy parses one line of HAProxy's default HTTP log (option
// httplog), with or without the syslog header before it:
//
//	[Feb  6 12:14:14 localhost haproxy[14389]: ]10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 [{captures} {captures} ]"GET /index.html HTTP/1.1"
//
// The time is the accept date, to the millisecond, which HAProxy writes
// without a zone: it is read as UTC. The key ip is the client address
// without its port; the status -1 (no response) reads as "-"; the
// termination state (%tsc, four characters) is Flags.
func ParseHAProxy(line []byte, rec *Record) error {
	rec.reset()
	at := haproxyDate(line)
	if at < 0 {
		return errors.New("no client address and [dd/Mon/yyyy:HH:MM:SS.mmm] accept date")
	}
	client := line[bytes.LastIndexByte(line[:at], ' ')+1 : at]
	c := bytes.LastIndexByte(client, ':')
	if c <= 0 {
		return errors.New("client is not address:port")
	}
	rec.Host = bytes.TrimSuffix(bytes.TrimPrefix(client[:c], []byte("[")), []byte("]"))
	var err error
	if rec.Time, rec.TimeNs, err = parseHAProxyTime(line[at+2 : at+26]); err != nil {
		return err
	}
	rest := skipSpaces(line[at+27:])
	var f [5][]byte // frontend, backend/server, timers, status, bytes
	for i := range f {
		var ok bool
		if f[i], rest, ok = token(rest); !ok {
			return fmt.Errorf("%d fields after the date, an HTTP log line has at least 10", i)
		}
	}
	st := f[3]
	if string(st) == "-1" {
		st = []byte("-")
	}
	var ok bool
	if rec.Status, ok = parseStatus(st); !ok {
		return fmt.Errorf("status %q is not 100..999 or -1 (a TCP log? give format: haproxy only for option httplog)", excerptString(f[3]))
	}
	if rec.Bytes, ok = parseCount(f[4]); !ok {
		return errors.New("bytes is not a number")
	}
	// The captured cookies and the termination state (%CC %CS %tsc), when
	// the line has them before its captures and request.
	if cc, r, ok := token(rest); ok && len(cc) > 0 && cc[0] != '"' && cc[0] != '{' {
		if cs, r, ok := token(r); ok && len(cs) > 0 && cs[0] != '"' && cs[0] != '{' {
			if tsc, _, ok := token(r); ok && len(tsc) == 4 && tsc[0] != '"' && tsc[0] != '{' {
				rec.Flags = tsc
			}
		}
	}
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		return errors.New(`no "request" at the end of the line`)
	}
	req, _, err := quoted(rest[q:])
	if err != nil {
		return errors.New("request: " + err.Error())
	}
	splitRequest(req, rec)
	return nil
}

// haproxyDate is the index of the " [" that opens an accept date
// (dd/Mon/yyyy:HH:MM:SS.mmm]), or -1.
func haproxyDate(line []byte) int {
	for off := 0; ; {
		i := bytes.Index(line[off:], []byte(" ["))
		if i < 0 {
			return -1
		}
		i += off
		d := line[i+2:]
		if len(d) >= 25 && d[2] == '/' && d[6] == '/' && d[11] == ':' && d[14] == ':' && d[17] == ':' && d[20] == '.' && d[24] == ']' {
			return i
		}
		off = i + 2
	}
}
