package ingest

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// want is one request of the samples in testdata/formats (SOURCE.txt).
type want struct {
	host, method, path string
	status             int
	ua                 string
	sec, ns            int64
}

var sampleRequests = []want{
	{"203.0.113.7", "GET", "/api/items?page=2", 200, "curl/8.5.0", 1767225600, 100_000_000},
	{"2001:db8::1", "POST", "/login", 401, "python-requests/2.31", 1767225600, 200_000_000},
	{"198.51.100.4", "GET", "/", 304, "Mozilla/5.0 (X11; Linux x86_64)", 1767225601, 300_000_000},
}

func readAll(t *testing.T, path string, opt ReaderOptions) ([]want, *Reader) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := NewReader(f, opt)
	if err != nil {
		t.Fatal(err)
	}
	var got []want
	for rd.Scan() {
		r := rd.Record()
		got = append(got, want{string(r.Host), string(r.Method), string(r.Path), r.Status, string(r.UserAgent), r.Time, r.TimeNs})
	}
	if err := rd.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return got, rd
}

// Every sample is detected as its format and reads as the same requests,
// times exact to the nanosecond.
func TestFormatSamples(t *testing.T) {
	cases := []struct {
		file   string
		format Format
		adjust func(i int, w *want)
	}{
		{"envoy.jsonl", FormatEnvoy, nil},
		{"caddy.jsonl", FormatCaddy, nil},
		{"traefik.jsonl", FormatTraefik, nil},
		{"cloudflare.jsonl", FormatCloudflare, nil},
		{"gcp-lb.jsonl", FormatGCPLB, nil},
		{"alb.log", FormatALB, nil},
		{"cloudfront.log", FormatW3C, func(i int, w *want) {
			w.ns = 0 // CloudFront logs whole seconds
			w.path = strings.Split(w.path, "?")[0] + map[bool]string{true: "?page=2"}[i == 0]
			if i == 2 {
				w.ua = "Mozilla/5.0%20(X11;%20Linux%20x86_64)" // as CloudFront encodes it
			}
		}},
		{"iis.log", FormatW3C, func(i int, w *want) {
			if i == 2 {
				w.ua = "Mozilla/5.0+(X11;+Linux+x86_64)" // as IIS writes spaces
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			got, rd := readAll(t, filepath.Join("testdata", "formats", c.file), ReaderOptions{})
			if rd.Format() != c.format {
				t.Errorf("detected %v, want %v", rd.Format(), c.format)
			}
			if rd.Malformed() != 0 {
				t.Errorf("%d malformed: %v", rd.Malformed(), rd.Samples())
			}
			if len(got) != len(sampleRequests) {
				t.Fatalf("%d requests, want %d: %+v", len(got), len(sampleRequests), got)
			}
			for i, w := range sampleRequests {
				if c.adjust != nil {
					c.adjust(i, &w)
				}
				if got[i] != w {
					t.Errorf("request %d:\n got %+v\nwant %+v", i, got[i], w)
				}
			}
			// Every line is accounted for.
			tr, err := Load(context.Background(), filepath.Join("testdata", "formats", c.file), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if s := tr.Stats; s.Lines != s.Requests+s.Malformed+s.Filtered+s.Blank+s.Continued {
				t.Errorf("lines %d != used %d + malformed %d + filtered %d + blank %d + continued %d", s.Lines, s.Requests, s.Malformed, s.Filtered, s.Blank, s.Continued)
			}
			// The same file read with the format named reads the same.
			again, _ := readAll(t, filepath.Join("testdata", "formats", c.file), ReaderOptions{Format: c.format})
			if len(again) != len(got) {
				t.Errorf("with --format %v: %d requests, auto: %d", c.format, len(again), len(got))
			}
		})
	}
}

func TestW3CDirectivesAreFiltered(t *testing.T) {
	tr, err := Load(context.Background(), filepath.Join("testdata", "formats", "iis.log"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Stats
	if s.Lines != 11 || s.Requests != 3 || s.Filtered != 8 || s.Malformed != 0 || s.FieldsChanges != 0 {
		t.Errorf("stats %+v", s)
	}
}

// A #Fields: header that changes mid-file applies to the lines after it; one
// without date and time makes the following lines malformed, by reason.
func TestW3CFieldsChange(t *testing.T) {
	log := "#Fields: date time c-ip cs-method cs-uri-stem sc-status\n" +
		"2026-01-01 00:00:00 1.2.3.4 GET / 200\n" +
		"#Fields: time date c-ip sc-status\n" +
		"00:00:01 2026-01-01 5.6.7.8 404\n" +
		"#Fields: c-ip cs-method\n" +
		"9.9.9.9 GET\n" +
		"9.9.9.8 GET\n"
	tr, err := build(t, log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Stats
	if s.Requests != 2 || s.Malformed != 2 || s.FieldsChanges != 2 || s.Filtered != 3 {
		t.Errorf("stats %+v", s)
	}
	if len(s.Samples) == 0 || s.Samples[0].Line != 6 || !strings.Contains(s.Samples[0].Msg, "#Fields: header at line 5 has no date and time") {
		t.Errorf("samples %+v", s.Samples)
	}
	if tr.Keys[0].Name != "1.2.3.4" && tr.Keys[1].Name != "5.6.7.8" {
		t.Errorf("keys %+v", tr.Keys)
	}
}

func TestCSVQuotedNewline(t *testing.T) {
	opt := ReaderOptions{Format: FormatCSV, CSV: CSVOptions{TimeFormat: TimeUnix,
		Columns: map[string]string{"time": "ts", "ip": "client", "method": "method", "path": "url", "status": "status", "user_agent": "agent"}}}
	got, rd := readAll(t, filepath.Join("testdata", "formats", "multiline.csv"), opt)
	if rd.Malformed() != 0 || len(got) != 3 {
		t.Fatalf("%d malformed %v, %d requests", rd.Malformed(), rd.Samples(), len(got))
	}
	for i, w := range sampleRequests {
		if got[i] != w {
			t.Errorf("request %d:\n got %+v\nwant %+v", i, got[i], w)
		}
	}
	tr0, err := Load(context.Background(), filepath.Join("testdata", "formats", "multiline.csv"), Options{Reader: opt})
	if s := tr0.Stats; err != nil || s.Lines != 5 || s.Requests != 3 || s.Filtered != 1 || s.Continued != 1 {
		t.Errorf("accounting %v %+v", err, tr0.Stats)
	}
	// A quote never closed is one malformed record at its first line, and
	// the reader ends cleanly.
	log := "ts,ip\n1,a\n2,\"b\n3,c\n"
	tr, err := build(t, log, Options{Reader: ReaderOptions{Format: FormatCSV, CSV: CSVOptions{Columns: map[string]string{"time": "ts", "ip": "ip"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Stats.Malformed != 1 || tr.Stats.Samples[0].Line != 3 || tr.Requests() != 1 {
		t.Errorf("stats %+v", tr.Stats)
	}
	// A quote inside an unquoted field is data and opens nothing.
	tr, err = build(t, "ts,ip\n1,a\"b\n2,c\n", Options{Reader: ReaderOptions{Format: FormatCSV, CSV: CSVOptions{Columns: map[string]string{"time": "ts", "ip": "ip"}}}})
	if err != nil || tr.Requests() != 2 || tr.Stats.Malformed != 0 || tr.Keys[0].Name != "a\"b" {
		t.Errorf("stray quote: %v %+v %+v", err, tr.Stats, tr.Keys)
	}
}

// JSON lines with configured field paths: dotted names, $-paths, bracketed
// names, keys that hold dots, arrays, escapes; the bad input of issue 16.
func TestJSONLFieldPaths(t *testing.T) {
	cols := map[string]string{"time": "$.t", "ip": "$.request.headers.x-forwarded-for", "method": "req.m",
		"path": "$['url.full']", "status": "s", "label": "lbl"}
	log := `{"t":"2026-01-01T00:00:00.123456789Z","request":{"headers":{"X-Forwarded-For":"1.1.1.1, 10.0.0.1"}},"req.m":"GET","url.full":"https://h/a\u00e9?x","s":200,"lbl":"code"}
{"t":1767225600123,"request":{"headers":{"x-forwarded-for":["2.2.2.2"]}},"req":{"m":"POST"},"url.full":"/b","s":"404","lbl":null}
[1,2,3]
{"t":"2026-01-01T00:00:01Z"
{"request":{}}
{"t":"2026-01-01T00:00:02Z","s":"20x"}
{"t":"2026-01-01T00:00:02Z"} trailing
`
	opt := Options{Reader: ReaderOptions{Format: FormatJSONL, CSV: CSVOptions{Columns: cols}}}
	tr, err := build(t, log, opt)
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Stats
	if s.Requests != 2 || s.Malformed != 5 {
		t.Fatalf("stats %+v", s)
	}
	for _, r := range []string{"not a JSON object", "JSON object not closed", "no time at t", `status "…" is not N..N`, "text after the JSON object"} {
		if s.Reasons[r] != 1 {
			t.Errorf("reason %q: %d (reasons %v)", r, s.Reasons[r], s.Reasons)
		}
	}
	f, _ := os.CreateTemp(t.TempDir(), "x")
	f.WriteString(log)
	f.Close()
	got, _ := readAll(t, f.Name(), opt.Reader)
	wantRecs := []want{
		{"1.1.1.1", "GET", "/a\u00e9?x", 200, "", 1767225600, 123456789},
		{"2.2.2.2", "POST", "/b", 404, "", 1767225600, 123000000},
	}
	for i, w := range wantRecs {
		if got[i] != w {
			t.Errorf("request %d:\n got %+v\nwant %+v", i, got[i], w)
		}
	}
	// Behind trusted proxies, the first untrusted hop from the right.
	trusted := opt.Reader
	trusted.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	log2 := `{"t":1,"request":{"headers":{"x-forwarded-for":"6.6.6.6, 1.1.1.1, 10.0.0.1"}}}
{"t":2,"request":{"headers":{"x-forwarded-for":"6.6.6.6, 10.0.0.2, 10.0.0.1"}}}
{"t":3,"request":{"headers":{"x-forwarded-for":"10.0.0.3, 10.0.0.1"}}}
`
	f2, _ := os.CreateTemp(t.TempDir(), "x")
	f2.WriteString(log2)
	f2.Close()
	got2, _ := readAll(t, f2.Name(), trusted)
	untrusted, _ := readAll(t, f2.Name(), opt.Reader)
	for i, w := range []string{"1.1.1.1", "6.6.6.6", "10.0.0.3"} {
		if got2[i].host != w || untrusted[i].host != []string{"6.6.6.6", "6.6.6.6", "10.0.0.3"}[i] {
			t.Errorf("xff %d: %q with trusted proxies (want %q), %q without", i, got2[i].host, w, untrusted[i].host)
		}
	}
	if tr.Keys[0].Class.String() != "abusive" && tr.Keys[1].Class.String() != "abusive" {
		t.Errorf("label column not read: %+v", tr.Keys)
	}
}

// A field path that matches no line is an error naming it; a JSON log that
// matches no preset needs format jsonl.
func TestJSONLMissingPath(t *testing.T) {
	log := `{"t":1767225600,"ip":"a"}` + "\n" + `{"t":1767225601,"ip":"b"}` + "\n"
	opt := Options{Key: []Field{FieldIP}, Reader: ReaderOptions{Format: FormatJSONL, CSV: CSVOptions{Columns: map[string]string{"time": "t", "ip": "client.ip"}}}}
	if _, err := build(t, log, opt); err == nil || !strings.Contains(err.Error(), "client.ip") {
		t.Errorf("missing path: %v", err)
	}
	if _, err := build(t, log, Options{}); err == nil || !strings.Contains(err.Error(), "format: jsonl") {
		t.Errorf("no preset: %v", err)
	}
}

func TestParseJSONPath(t *testing.T) {
	for in, want := range map[string]string{
		"a.b": "a|b", "$.a.b": "a|b", "$['a.b'].c": "a.b|c", `$["x"]`: "x", "a[\"b\"]": "a|b",
	} {
		p, err := parseJSONPath(in)
		if err != nil || strings.Join(p, "|") != want {
			t.Errorf("%q: %q %v, want %q", in, p, err, want)
		}
	}
	for _, in := range []string{"", "$", "a..b", "$['a", "[x]"} {
		if _, err := parseJSONPath(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// CSV is read as encoding/csv reads it: records written by encoding/csv
// with quotes, delimiters and newlines inside fields come back field for
// field.
func TestCSVAgreesWithEncodingCSV(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 4))
	alphabet := []string{"a", "b", " ", ",", "\"", "\n", "é", "x\"y", "\t"}
	for trial := range 50 {
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		w.Write([]string{"ts", "ip", "agent"})
		var want [][2]string
		for i := range 1 + rng.IntN(20) {
			field := func() string {
				var s strings.Builder
				for range 1 + rng.IntN(6) {
					s.WriteString(alphabet[rng.IntN(len(alphabet))])
				}
				return s.String()
			}
			ip, ua := field(), field()
			w.Write([]string{fmt.Sprint(1767225600 + i), ip, ua})
			want = append(want, [2]string{ip, ua})
		}
		w.Flush()
		// encoding/csv's own reading is the reference.
		ref, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		rd, err := NewReader(bytes.NewReader(buf.Bytes()), ReaderOptions{Format: FormatCSV,
			CSV: CSVOptions{Columns: map[string]string{"time": "ts", "ip": "ip", "user_agent": "agent"}}})
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for rd.Scan() {
			r := rd.Record()
			if i+1 >= len(ref) || string(r.Host) != ref[i+1][1] || string(r.UserAgent) != ref[i+1][2] {
				t.Fatalf("trial %d record %d: %q %q, encoding/csv %q", trial, i, r.Host, r.UserAgent, ref[min(i+1, len(ref)-1)])
			}
			i++
		}
		if rd.Err() != nil || i != len(want) || rd.Malformed() != 0 {
			t.Fatalf("trial %d: %d of %d records, %d malformed %v, err %v", trial, i, len(want), rd.Malformed(), rd.Samples(), rd.Err())
		}
	}
}
