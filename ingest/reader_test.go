package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/internal/yamlx"
)

func clfLine(host, ts, path string) string {
	return host + ` - - [` + ts + ` +0000] "GET ` + path + ` HTTP/1.1" 200 10 "-" "ua"` + "\n"
}

func build(t *testing.T, log string, opt Options) (*Traffic, error) {
	t.Helper()
	return Build(context.Background(), strings.NewReader(log), opt)
}

func TestMalformedLinesCountedAndSampled(t *testing.T) {
	var b strings.Builder
	b.WriteString(clfLine("a", "01/Jan/2020:00:00:00", "/"))
	for i := range 7 {
		b.WriteString("garbage line " + string(rune('A'+i)) + "\n")
	}
	b.WriteString("\r\n\n")
	b.WriteString(clfLine("b", "01/Jan/2020:00:00:01", "/x"))
	tr, err := build(t, b.String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Stats
	if tr.Requests() != 2 || s.Malformed != 7 || len(s.Samples) != MaxSamples || s.Lines != 11 {
		t.Fatalf("requests %d malformed %d samples %d lines %d", tr.Requests(), s.Malformed, len(s.Samples), s.Lines)
	}
	if s.Samples[0].Line != 2 || !strings.Contains(s.Samples[0].Excerpt, "garbage line A") {
		t.Errorf("first sample %+v", s.Samples[0])
	}
	// --strict: the first malformed line is an error naming the line.
	_, err = build(t, b.String(), Options{Reader: ReaderOptions{Strict: true}})
	var ye *yamlx.Error
	if !errors.As(err, &ye) || ye.Line != 2 || !strings.Contains(ye.Msg, "strict") {
		t.Fatalf("strict: %v", err)
	}
}

func TestEmptyAndAllBadLogs(t *testing.T) {
	for _, c := range []struct{ log, want string }{
		{"", "no requests in the log"},
		{"\n\n\r\n", "no requests in the log"},
		{clfLine("a", "01/Jan/2020:00:00:00", "/") + "junk\n", ""},
		{"host\tlogname\ttime\tmethod\turl\tresponse\tbytes\treferer\tuseragent\n", "no requests in the log"},
		{"h\t-\t1\tGET\t/\t200\t1\t\t\nh\t-\tnot-a-time\tGET\t/\t200\t1\t\t\n", ""},
		{"h\t-\tx\tGET\t/\t200\t1\t\t\n", "cannot detect the log format"},
	} {
		_, err := build(t, c.log, Options{})
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.log, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.log, err, c.want)
		}
	}
	_, err := build(t, clfLine("a", "01/Jan/2020:00:00:00", "/")[:20]+"\njunk\n", Options{Reader: ReaderOptions{Format: FormatCombined}})
	if err == nil || !strings.Contains(err.Error(), "no valid requests: 2 malformed lines (first at line 1") {
		t.Errorf("all malformed: %v", err)
	}
}

// A 10 MB line is skipped without being held, with and without a newline.
func TestHugeLine(t *testing.T) {
	huge := strings.Repeat("x", 10<<20)
	ok := clfLine("a", "01/Jan/2020:00:00:00", "/")
	for _, log := range []string{ok + huge + "\n" + ok, ok + huge} {
		tr, err := build(t, log, Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := tr.Stats
		if s.Malformed != 1 || s.Samples[0].Line != 2 || !strings.Contains(s.Samples[0].Msg, "exceeds the limit") || len(s.Samples[0].Excerpt) > 200 {
			t.Errorf("malformed %d, samples %+v", s.Malformed, s.Samples)
		}
	}
	// A 10 MB line that is one valid request parses when allowed.
	long := strings.Replace(ok, "GET /", "GET /"+huge, 1)
	tr, err := build(t, long, Options{Reader: ReaderOptions{MaxLineBytes: 11 << 20}})
	if err != nil || tr.Requests() != 1 {
		t.Fatalf("long valid line: %v", err)
	}
}

func TestInvalidUTF8AndOutOfOrder(t *testing.T) {
	log := clfLine("a\xff", "01/Jan/2020:00:01:00", "/\xfe") +
		clfLine("b", "01/Jan/2020:00:00:00", "/") +
		clfLine("a\xff", "01/Jan/2020:00:00:30", "/") +
		clfLine("b", "01/Jan/2020:00:02:00", "/")
	tr, err := build(t, log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Stats
	if s.InvalidUTF8 != 2 || s.OutOfOrder != 2 || s.MaxBackS != 60 || s.FirstBack != 2 {
		t.Errorf("stats %+v", s)
	}
	if tr.DurationS != 121 {
		t.Errorf("duration %d, want 121", tr.DurationS)
	}
	for i := range tr.Keys {
		if ts := tr.Times(i); ts[0] > ts[1] {
			t.Errorf("key %q not sorted: %v", tr.Keys[i].Name, ts)
		}
	}
	if tr.Keys[0].Name != "a\uFFFD" {
		t.Errorf("key name %q, want valid UTF-8", tr.Keys[0].Name)
	}
}

func TestGzipAndCorruptGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(clfLine("a", "01/Jan/2020:00:00:00", "/")))
	zw.Close()
	tr, err := build(t, buf.String(), Options{})
	if err != nil || !tr.Stats.Gzipped || tr.Requests() != 1 {
		t.Fatalf("gzip: %v", err)
	}
	cut := buf.Bytes()[:buf.Len()-6]
	if _, err := build(t, string(cut), Options{}); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("truncated gzip: %v", err)
	}
	if _, err := build(t, "\x1f\x8bjunk", Options{}); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("bad gzip header: %v", err)
	}
}

func TestCSV(t *testing.T) {
	log := "ts,client,url,ua,verdict\n" +
		"1700000000.25,1.1.1.1,/a,\"curl, \"\"x\"\"\",legit\n" +
		"1700000000.75,1.1.1.1,/b,ua,code\n" +
		"1700000002,2.2.2.2,/a,ua,\n" +
		"1700000003,2.2.2.2,/a,ua\n" +
		"1700000004,2.2.2.2,/a,ua,evil\n" +
		"1700000005,9.9.9.9,/a,ua,evil\n"
	opt := Options{Reader: ReaderOptions{Format: FormatCSV, CSV: CSVOptions{
		Columns: map[string]string{"time": "ts", "ip": "client", "path": "url", "user_agent": "ua", "label": "verdict"}}}}
	tr, err := build(t, log, opt)
	if err != nil {
		t.Fatal(err)
	}
	// A rejected line adds no key.
	if tr.Requests() != 3 || tr.Stats.Malformed != 3 || len(tr.Keys) != 2 || !tr.SubSecond {
		t.Fatalf("requests %d malformed %d subsecond %v: %+v", tr.Requests(), tr.Stats.Malformed, tr.SubSecond, tr.Stats.Samples)
	}
	if got := tr.Times(0); got[0] != 250_000_000 || got[1] != 750_000_000 {
		t.Errorf("times %v", got)
	}
	if k := tr.Keys[0]; k.Name != "1.1.1.1" || k.ByStage != [4]int64{1, 0, 1, 0} || !k.Mixed() {
		t.Errorf("key %+v", k)
	}
	if !strings.Contains(tr.Stats.Samples[1].Msg, "label") {
		t.Errorf("sample %+v", tr.Stats.Samples[1])
	}
	opt.Reader.CSV.Columns["time"] = "nope"
	if _, err := build(t, log, opt); err == nil || !strings.Contains(err.Error(), `no column "nope"`) {
		t.Errorf("missing column: %v", err)
	}
}

// A wrong timestamp decades away makes a long, sparse span, not a huge
// allocation; times past 2262 are malformed.
func TestSparseLongSpan(t *testing.T) {
	log := clfLine("a", "01/Jan/1970:00:00:00", "/") + clfLine("a", "01/Jan/2200:00:00:00", "/") +
		clfLine("b", "01/Jan/2200:00:00:00", "/") + clfLine("c", "01/Jan/9999:00:00:00", "/")
	tr, err := build(t, log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Requests() != 3 || tr.Stats.Malformed != 1 || !strings.Contains(tr.Stats.Samples[0].Msg, "outside 1970..2262") {
		t.Fatalf("requests %d, samples %+v", tr.Requests(), tr.Stats.Samples)
	}
	p := tr.Profile(3, 60)
	if p.PeakS != 2 || p.P99S != 0 || p.PeakW != 2 || p.DurationS != tr.DurationS || tr.DurationS < 7e9 {
		t.Errorf("profile %+v", p)
	}
	if _, err := tr.Scenario("x"); err == nil {
		t.Error("fluid scenario of 230 years")
	}
}

// Junk (and a byte order mark) before the first recognisable line is
// malformed, not fatal; a log of junk only is an error.
func TestDetectAfterJunk(t *testing.T) {
	log := "\xef\xbb\xbfgarbage\n# comment\n" + clfLine("a", "01/Jan/2020:00:00:00", "/")
	tr, err := build(t, log, Options{})
	if err != nil || tr.Format != FormatCombined || tr.Requests() != 1 || tr.Stats.Malformed != 2 || tr.Stats.Samples[0].Excerpt != "«garbage»" {
		t.Fatalf("%v %+v", err, tr)
	}
	tr, err = build(t, "\xef\xbb\xbf"+clfLine("a", "01/Jan/2020:00:00:00", "/"), Options{})
	if err != nil || tr.Stats.Malformed != 0 {
		t.Fatalf("byte order mark: %v", err)
	}
	if _, err := build(t, strings.Repeat("junk\n", 200), Options{}); err == nil || !strings.Contains(err.Error(), "first 100 lines") {
		t.Errorf("all junk: %v", err)
	}
	if _, err := build(t, "junk\n", Options{Reader: ReaderOptions{Strict: true}}); err == nil || !strings.Contains(err.Error(), "log format not recognised") {
		t.Errorf("strict junk: %v", err)
	}
}
