package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sampleLines adds every line of the format samples as seeds.
func sampleLines(f *testing.F, glob string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "formats", glob))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
	}
}

// FuzzJSONL: the JSON lines parser never panics, accepts a line only when
// encoding/json finds it valid, never calls a valid object "not JSON", and
// reads the same top-level and nested string values as encoding/json.
func FuzzJSONL(f *testing.F) {
	sampleLines(f, "*.jsonl")
	for _, s := range []string{`{"t":"2026-01-01T00:00:00Z","a":{"b":"x\u00e9\"y"}}`, `{"t":1.5e9,"a":{"b":["p","q"]}}`,
		`{"t":1767225600,"a.b":"flat","a":{"b":"nested"}}`, `{"t":1,"a":{"B":"case"}}`, `{}`, `[]`, `{"t":"x"} {}`, `{"t":"\ud83d\ude00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		p, err := newJSONParser(CSVOptions{TimeFormat: TimeAuto, Columns: map[string]string{"time": "t", "ip": "a.b", "label": "l"}})
		if err != nil {
			t.Fatal(err)
		}
		p.ipList, p.stripIP, p.urlPath = false, false, false
		var rec Record
		perr := p.parse(line, &rec)
		_, notJSON := perr.(jsonError)
		valid := json.Valid(line)
		if perr == nil && !valid {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		trimmed := bytes.TrimLeft(line, " \t\r\n")
		if valid && len(trimmed) > 0 && trimmed[0] == '{' && notJSON {
			if !strings.Contains(perr.Error(), "nested too deeply") {
				t.Fatalf("valid object %q: %v", line, perr)
			}
		}
		if perr != nil && !p.found[0] || !valid || len(trimmed) == 0 || trimmed[0] != '{' {
			return
		}
		var obj map[string]any
		if json.Unmarshal(line, &obj) != nil {
			return
		}
		// Compare where names are unambiguous (no other key folds to them).
		if v, ok := obj["t"].(string); ok && unambiguous(obj, "t") && p.found[0] && string(p.vals[0]) != v && !bytes.ContainsRune([]byte(v), 0xFFFD) {
			t.Fatalf("time %q, encoding/json %q", p.vals[0], v)
		}
		if a, ok := obj["a"].(map[string]any); ok && unambiguous(obj, "a") && unambiguous(obj, "a.b") {
			if v, ok := a["b"].(string); ok && unambiguous(a, "b") && string(p.vals[1]) != v && !strings.ContainsRune(v, 0xFFFD) {
				t.Fatalf("a.b %q, encoding/json %q", p.vals[1], v)
			}
		}
	})
}

// unambiguous reports whether exactly one key of m folds to name and no
// key holding dots could also match it.
func unambiguous(m map[string]any, name string) bool {
	n := 0
	for k := range m {
		if strings.EqualFold(k, name) {
			n++
		}
		if strings.Contains(k, ".") && strings.HasPrefix(strings.ToLower(name), strings.ToLower(strings.SplitN(k, ".", 2)[0])) {
			n += 2
		}
	}
	return n == 1
}

// FuzzW3C: W3C logs (directives, changing #Fields:, tabs or spaces) never
// panic; when they build, the counts add up.
func FuzzW3C(f *testing.F) {
	for _, file := range []string{"iis.log", "cloudfront.log"} {
		data, err := os.ReadFile(filepath.Join("testdata", "formats", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("#Fields: date time c-ip sc-status\n2026-01-01 00:00:00 a 200\n#Fields: time c-ip\n00:00:01 b\n#Fields: date time c-ip\n2026-01-01 00:00:01.5 b\n"))
	f.Add([]byte("2026-01-01 00:00:00 a 200\n#Fields:\n\n#Fields: date time\n2026-13-01 25:00:00\n"))
	f.Fuzz(func(t *testing.T, log []byte) {
		tr, err := Build(context.Background(), bytes.NewReader(log), Options{Reader: ReaderOptions{Format: FormatW3C, MaxLineBytes: 512},
			Key: []Field{FieldIP, FieldStatus}})
		if err != nil {
			return
		}
		s := tr.Stats
		if s.Requests+s.Malformed+s.Filtered+s.Blank > s.Lines {
			t.Fatalf("requests %d + malformed %d + filtered %d + blank %d > lines %d", s.Requests, s.Malformed, s.Filtered, s.Blank, s.Lines)
		}
		for i := range tr.Keys {
			ts := tr.Times(i)
			if ts[len(ts)-1] >= int64(tr.DurationS)*secondNs {
				t.Fatalf("time %d past the span of %d s", ts[len(ts)-1], tr.DurationS)
			}
		}
	})
}

// FuzzALB: the AWS ALB line parser never panics and accepts only lines with
// a known type, a time and a status.
func FuzzALB(f *testing.F) {
	sampleLines(f, "alb.log")
	f.Fuzz(func(t *testing.T, line []byte) {
		var r Record
		if ParseALB(line, &r) != nil {
			return
		}
		if r.Status != 0 && (r.Status < 100 || r.Status > 999) || r.Time < 0 || r.Time > maxUnix || r.TimeNs < 0 || r.TimeNs >= secondNs {
			t.Fatalf("status %d time %d.%09d", r.Status, r.Time, r.TimeNs)
		}
	})
}

// FuzzTemplates: lines read by a format string (nginx, envoy, HAProxy) and
// HAProxy's httplog parser never panic, and an accepted line has a time in
// range and a key that is not "-".
func FuzzTemplates(f *testing.F) {
	for _, g := range []string{"envoy*.log", "haproxy*.log", "nginx*.log"} {
		sampleLines(f, g)
	}
	f.Add([]byte(`1767225600.100 10.0.0.2 "1.2.3.4, 10.0.0.3" GET /a?b 200 "ua \"q\""`))
	for _, l := range strings.Split(haproxyRealLines, "\n") {
		f.Add([]byte(l))
	}
	p, _ := ParseTrustedProxy("10.0.0.0/8")
	tms := []*template{}
	for _, c := range []struct {
		f Format
		s string
	}{
		{FormatNginx, NginxCombinedFormat + " $limit_req_status $msec"},
		{FormatNginx, `$msec $remote_addr "$http_x_forwarded_for" $request_method $request_uri $status "$http_user_agent"`},
		{FormatEnvoyText, EnvoyDefaultFormat},
		{FormatHAProxy, `%ci [%tr] %HM %HU %ST %{+Q}[req.hdr(user-agent)]`},
		{FormatHAProxy, HAProxyHTTPFormat}, // %hr %hs: captures that may be absent
	} {
		tm, err := newTemplate(c.f, c.s, []netip.Prefix{p})
		if err != nil {
			f.Fatal(err)
		}
		tms = append(tms, tm)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var rec Record
		check := func(what string, err error) {
			if err == nil && (rec.Time < 0 || rec.Time > maxUnix || rec.TimeNs < 0 || rec.TimeNs >= 1e9 || string(rec.Host) == "-") {
				t.Errorf("%s accepted %q: time %d.%09d host %q", what, line, rec.Time, rec.TimeNs, rec.Host)
			}
		}
		for i, tm := range tms {
			check(fmt.Sprint("template ", i), tm.parse(line, &rec))
		}
		check("haproxy", ParseHAProxy(line, &rec))
		Detect(line)
	})
}
