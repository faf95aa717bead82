package ingest

import (
	"bytes"
	"context"
	"testing"
)

var fuzzSeeds = []string{
	`64.221.136.91 - - [02/Sep/2003:00:00:09 -0700] "GET / HTTP/1.1" 200 11690 "-" "Mozilla/4.0 (compatible; MSIE 6.0)"`,
	`10.0.0.1 - frank [10/Oct/2000:13:55:36 +0230] "POST /login?x=1 HTTP/1.0" 401 -`,
	`::1 - - [29/Feb/2024:23:59:59 +0000] "GET /a\"b HTTP/1.1" 404 12 "http://x/" "curl \"7\"" 0.003 "-"`,
	`h - - [01/Jan/1999:00:00:00 -1200] "-" - -`,
	`1.2.3.4 - - [20/May/2015:12:05:17 +0000] "GET /a HTTP/1.1" 200 235 "-" "Mozilla/5.0 (compatible; Googlebot/2.1`,
	"pppa006.compuserve.com\t-\t807256800\tGET\t/images/launch-logo.gif\t200\t1713\t\t",
	`1.2.3.4 - - [31/Feb/2003:00:00:09 -0700] "GET / HTTP/1.1" 200 1`,
	"\xff\xfe - - [01/Jan/2020:00:00:00 +0000] \"\x00\" 200 1 \"\\\\\" \"\\\"",
}

// within reports whether s is empty or a subslice of line.
func within(s, line []byte) bool {
	if len(s) == 0 {
		return true
	}
	if len(line) == 0 {
		return false
	}
	for i := range line {
		if &line[i] == &s[0] {
			return i+len(s) <= len(line)
		}
	}
	return false
}

// FuzzParseCombined: the line parser never panics, and what it accepts has
// fields inside the line, a valid status and a time that round-trips.
func FuzzParseCombined(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var r Record
		if err := ParseCombined(line, &r); err != nil {
			return
		}
		for _, s := range [][]byte{r.Host, r.Logname, r.User, r.Method, r.Path, r.Proto, r.Referer, r.UserAgent} {
			if !within(s, line) {
				t.Fatalf("field %q is not inside the line", s)
			}
		}
		if len(r.Host) == 0 || bytes.IndexByte(r.Host, ' ') >= 0 {
			t.Fatalf("host %q", r.Host)
		}
		if r.Status != 0 && (r.Status < 100 || r.Status > 999) || r.Bytes < 0 {
			t.Fatalf("status %d bytes %d", r.Status, r.Bytes)
		}
		// Negative years are not written, so times fit 0000..9999 ± 1 day.
		if r.Time < -62167219200-86400 || r.Time > 253402300799+86400 {
			t.Fatalf("time %d out of range", r.Time)
		}
	})
}

// FuzzBuild: a whole log, arbitrary bytes, auto-detected, never panics; when
// it succeeds its counts add up.
func FuzzBuild(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s + "\n" + s + "\n"))
	}
	f.Fuzz(func(t *testing.T, log []byte) {
		tr, err := Build(context.Background(), bytes.NewReader(log), Options{
			Reader: ReaderOptions{MaxLineBytes: 512}, Key: []Field{FieldIP, FieldPathPrefix}})
		if err != nil {
			return
		}
		var sum int64
		for i, k := range tr.Keys {
			sum += k.Requests
			ts := tr.Times(i)
			if int64(len(ts)) != k.Requests || ts[0] < 0 || ts[len(ts)-1] >= int64(tr.DurationS)*secondNs {
				t.Fatalf("key %q: %d times, span %d s: %v", k.Name, len(ts), tr.DurationS, ts)
			}
		}
		if sum != tr.Requests() || tr.Requests()+tr.Stats.Malformed > tr.Stats.Lines {
			t.Fatalf("requests %d, keys sum %d, malformed %d, lines %d", tr.Requests(), sum, tr.Stats.Malformed, tr.Stats.Lines)
		}
	})
}

// FuzzCSV: CSV logs (quoting, label column, every time format) never panic.
func FuzzCSV(f *testing.F) {
	f.Add([]byte("ts,ip,label\n1700000000.5,1.1.1.1,code\n\"1700000001\",\"a\"\"b\",\n"), uint8(0))
	f.Add([]byte("ts,ip,label\n2024-01-02T03:04:05.5+01:00,x,none\n"), uint8(2))
	f.Add([]byte("ts,ip,label\n[02/Sep/2003:00:00:09 -0700],x,legit\n"), uint8(3))
	f.Fuzz(func(t *testing.T, log []byte, tf uint8) {
		opt := Options{Reader: ReaderOptions{Format: FormatCSV, MaxLineBytes: 512, CSV: CSVOptions{
			TimeFormat: TimeFormat(tf % 7), Columns: map[string]string{"time": "ts", "ip": "ip", "label": "label"}}}}
		tr, err := Build(context.Background(), bytes.NewReader(log), opt)
		if err != nil {
			return
		}
		var sum int64
		for i, k := range tr.Keys {
			sum += k.Requests
			ts := tr.Times(i)
			if k.Requests == 0 || int64(len(ts)) != k.Requests {
				t.Fatalf("key %q: %d requests, %d times", k.Name, k.Requests, len(ts))
			}
			if ts[len(ts)-1] >= int64(tr.DurationS)*secondNs {
				t.Fatalf("time %d past the span of %d s", ts[len(ts)-1], tr.DurationS)
			}
		}
		if sum != tr.Requests() {
			t.Fatalf("keys sum to %d of %d", sum, tr.Requests())
		}
	})
}
