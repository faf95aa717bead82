package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
)

// Issue 16's bad input: each a clear error or a counted malformed line,
// never a panic.
func TestBadInputTruncatedGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for i := range 2000 {
		zw.Write([]byte(`{"ClientIP":"1.1.1.` + string(rune('0'+i%10)) + `","EdgeStartTimestamp":1767225600000000000,"EdgeResponseStatus":200}` + "\n"))
	}
	zw.Close()
	cut := buf.Bytes()[:buf.Len()/2]
	_, err := Build(context.Background(), bytes.NewReader(cut), Options{})
	if err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("truncated gzip: %v", err)
	}
}

func TestBadInputTimesGoingBack(t *testing.T) {
	log := clfLine("a", "01/Jan/2020:00:10:00", "/") +
		clfLine("a", "01/Jan/2020:00:09:30", "/") + // 30 s back: sorted
		clfLine("b", "01/Jan/2020:00:00:00", "/") + // 600 s back: malformed
		clfLine("b", "01/Jan/2020:00:10:01", "/")
	tr, err := build(t, log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Stats
	if s.Requests != 3 || s.Malformed != 1 || s.OutOfOrder != 1 || s.Samples[0].Line != 3 ||
		!strings.Contains(s.Samples[0].Msg, "time goes back 600 s behind an earlier line, more than max_backwards_s 300") {
		t.Errorf("stats %+v", s)
	}
	tr, err = build(t, log, Options{MaxBackS: -1})
	if err != nil || tr.Stats.Requests != 4 || tr.Stats.OutOfOrder != 2 {
		t.Errorf("no bound: %v %+v", err, tr.Stats)
	}
}

// hugeLine yields n bytes of one line without a newline, then a valid line.
type hugeLine struct {
	n    int64
	tail string
}

func (h *hugeLine) Read(p []byte) (int, error) {
	if h.n > 0 {
		k := min(int64(len(p)), h.n)
		for i := range p[:k] {
			p[i] = 'x'
		}
		h.n -= k
		return int(k), nil
	}
	if h.tail == "" {
		return 0, io.EOF
	}
	k := copy(p, h.tail)
	h.tail = h.tail[k:]
	return k, nil
}

// A 100 MB line is one malformed line, skipped without being held in memory.
func TestBadInputHugeLine(t *testing.T) {
	for _, format := range []Format{FormatAuto, FormatJSONL, FormatW3C} {
		tail := "\n" + clfLine("a", "01/Jan/2020:00:00:00", "/")
		opt := Options{Reader: ReaderOptions{Format: format}}
		switch format {
		case FormatJSONL:
			tail = "\n" + `{"t":1767225600,"ip":"a"}` + "\n"
			opt.Reader.CSV = CSVOptions{Columns: map[string]string{"time": "t", "ip": "ip"}}
		case FormatW3C:
			tail = "\n#Fields: date time c-ip\n2026-01-01 00:00:00 a\n"
		}
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		tr, err := Build(context.Background(), &hugeLine{n: 100 << 20, tail: tail}, opt)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%v: %v", format, err)
		}
		if tr.Stats.Malformed != 1 || tr.Requests() != 1 || tr.Stats.Reasons[reasonTooLong] != 1 {
			t.Errorf("%v: stats %+v", format, tr.Stats)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
			t.Errorf("%v: allocated %d MB reading a 100 MB line", format, grew>>20)
		}
	}
}
