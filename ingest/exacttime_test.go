package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/ratesweep/ratesweep/model"
	"golang.org/x/time/rate"
)

// A trace: requests (key, absolute Unix ns), sorted by time.
type traceReq struct {
	key string
	ns  int64
}

// timeFormat writes a trace as a log in one time format and says how to
// read it back.
type timeFormat struct {
	name  string
	ext   string
	nsRes bool // carries nanoseconds (else milliseconds at best)
	write func(t *testing.T, path string, tr []traceReq)
	opt   Options
}

func secFrac(ns int64, digits int) string {
	s := fmt.Sprintf("%d.%09d", ns/1e9, ns%1e9)
	return s[:len(s)-9+digits]
}

func writeLines(t *testing.T, path, head string, tr []traceReq, line func(r traceReq) string) {
	t.Helper()
	var b strings.Builder
	b.WriteString(head)
	for _, r := range tr {
		b.WriteString(line(r))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func csvFormat(name, tf string, nsRes bool, cell func(ns int64) string) timeFormat {
	f, _ := ParseTimeFormat(tf)
	return timeFormat{name: name, ext: "csv", nsRes: nsRes,
		write: func(t *testing.T, path string, tr []traceReq) {
			writeLines(t, path, "ip,ts\n", tr, func(r traceReq) string { return r.key + "," + cell(r.ns) })
		},
		opt: Options{Reader: ReaderOptions{Format: FormatCSV, CSV: CSVOptions{TimeFormat: f, Columns: map[string]string{"time": "ts", "ip": "ip"}}}}}
}

func lineFormat(name string, nsRes bool, head string, line func(r traceReq) string) timeFormat {
	return timeFormat{name: name, ext: "log", nsRes: nsRes,
		write: func(t *testing.T, path string, tr []traceReq) { writeLines(t, path, head, tr, line) }}
}

func rfc(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

func parquetFormat(name string, typ arrow.DataType, tf TimeFormat, cell func(b array.Builder, ns int64)) timeFormat {
	return timeFormat{name: name, ext: "parquet",
		write: func(t *testing.T, path string, tr []traceReq) {
			schema := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: typ}, {Name: "ip", Type: arrow.BinaryTypes.String}}, nil)
			b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
			defer b.Release()
			for _, r := range tr {
				cell(b.Field(0), r.ns)
				b.Field(1).(*array.StringBuilder).Append(r.key)
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			fw, err := pqarrow.NewFileWriter(schema, f, nil, pqarrow.DefaultWriterProps())
			if err != nil {
				t.Fatal(err)
			}
			if err := fw.Write(rec); err != nil {
				t.Fatal(err)
			}
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
		},
		opt: Options{Reader: ReaderOptions{Format: FormatParquet, CSV: CSVOptions{TimeFormat: tf, Columns: map[string]string{"time": "ts", "ip": "ip"}}}}}
}

// timeFormats are every way ratesweep reads a time: CSV (decimal seconds,
// ms, µs, ns, RFC 3339), JSON lines (numbers and text, presets), AWS ALB,
// W3C, Parquet (int64 ms, float64 s, timestamps).
var timeFormats = []timeFormat{
	csvFormat("csv unix decimal", "unix", true, func(ns int64) string { return secFrac(ns, 9) }),
	csvFormat("csv unix ms", "unix_ms", false, func(ns int64) string { return fmt.Sprint(ns / 1e6) }),
	csvFormat("csv unix ms decimal", "unix_ms", true, func(ns int64) string { return fmt.Sprintf("%d.%06d", ns/1e6, ns%1e6) }),
	csvFormat("csv unix us", "unix_us", false, func(ns int64) string { return fmt.Sprint(ns / 1e3) }),
	csvFormat("csv unix ns", "unix_ns", true, func(ns int64) string { return fmt.Sprint(ns) }),
	csvFormat("csv rfc3339", "rfc3339", true, rfc),
	lineFormat("caddy (ts: decimal s)", true, "", func(r traceReq) string {
		return fmt.Sprintf(`{"level":"info","ts":%s,"request":{"remote_ip":%q,"method":"GET","uri":"/"},"status":200}`, secFrac(r.ns, 9), r.key)
	}),
	lineFormat("cloudflare (unixnano)", true, "", func(r traceReq) string {
		return fmt.Sprintf(`{"ClientIP":%q,"EdgeStartTimestamp":%d,"EdgeResponseStatus":200}`, r.key, r.ns)
	}),
	lineFormat("gcp-lb (rfc3339)", true, "", func(r traceReq) string {
		return fmt.Sprintf(`{"httpRequest":{"remoteIp":%q,"status":200},"timestamp":%q}`, r.key, rfc(r.ns))
	}),
	lineFormat("traefik", true, "", func(r traceReq) string {
		return fmt.Sprintf(`{"ClientHost":%q,"StartUTC":%q}`, r.key, rfc(r.ns))
	}),
	lineFormat("envoy (ms exponent)", false, "", func(r traceReq) string {
		return fmt.Sprintf(`{"downstream_remote_address":"%s:1234","start_time":%s}`, r.key, strconv.FormatFloat(float64(r.ns/1e6), 'e', -1, 64))
	}),
	lineFormat("alb (µs)", false, "", func(r traceReq) string {
		ts := time.Unix(0, r.ns).UTC().Format("2006-01-02T15:04:05.000000Z")
		return fmt.Sprintf(`https %s app/x/1 %s:5 - -1 -1 -1 200 - 1 2 "GET https://h:443/ HTTP/1.1" "ua" - - arn "t" "h" "c" 0 %s "forward" "-" "-" "-" "-" "-" "-"`, ts, r.key, ts)
	}),
	lineFormat("w3c (fractional time)", true, "#Version: 1.0\n#Fields: date time c-ip cs-method cs-uri-stem sc-status\n", func(r traceReq) string {
		return time.Unix(0, r.ns).UTC().Format("2006-01-02 15:04:05.999999999") + " " + r.key + " GET / 200"
	}),
	parquetFormat("parquet int64 ms", arrow.PrimitiveTypes.Int64, TimeUnixMs, func(b array.Builder, ns int64) { b.(*array.Int64Builder).Append(ns / 1e6) }),
	parquetFormat("parquet float64 s", arrow.PrimitiveTypes.Float64, TimeUnix, func(b array.Builder, ns int64) {
		b.(*array.Float64Builder).Append(float64(ns/1e6) / 1e3) // the nearest float to the ms time
	}),
	parquetFormat("parquet timestamp ns", &arrow.TimestampType{Unit: arrow.Nanosecond}, TimeUnix, func(b array.Builder, ns int64) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ns)) }),
}

// loadTrace writes tr in format f, reads it back and returns every key's
// realised times (spread none) as absolute Unix ns.
func loadTrace(t *testing.T, f timeFormat, tr []traceReq) map[string][]int64 {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log."+f.ext)
	f.write(t, path, tr)
	traffic, err := Load(context.Background(), path, f.opt)
	if err != nil {
		t.Fatalf("%s: %v", f.name, err)
	}
	if traffic.Stats.Malformed != 0 {
		t.Fatalf("%s: %d malformed: %v", f.name, traffic.Stats.Malformed, traffic.Stats.Samples)
	}
	out := map[string][]int64{}
	for i, ts := range traffic.Realise(SpreadNone, 0, 0, nil) {
		abs := make([]int64, len(ts))
		for j, v := range ts {
			abs[j] = traffic.StartUnix*secondNs + v
		}
		out[traffic.Keys[i].Name] = abs
	}
	return out
}

// decide runs every key's times through ratesweep's token bucket decider
// (times since the log's first second, as the replay sees them) and through
// golang.org/x/time/rate on its own clock (the absolute times), and fails
// where they disagree. It returns the admitted requests.
func decide(t *testing.T, name string, keys map[string][]int64, r float64, b int) int {
	t.Helper()
	start := int64(1 << 62)
	for _, ts := range keys {
		start = min(start, ts[0]/secondNs*secondNs)
	}
	admitted := 0
	for k, ts := range keys {
		d, err := model.NewDecider(model.Policy{Algorithm: model.TokenBucket, Rate: r, Capacity: int64(b)})
		if err != nil {
			t.Fatal(err)
		}
		lim := rate.NewLimiter(rate.Limit(r), b)
		for j, ns := range ts {
			got, want := d.Allow(ns-start), lim.AllowN(time.Unix(0, ns), 1)
			if got != want {
				t.Fatalf("%s: key %s request %d at %d ns: ratesweep %v, x/time/rate %v", name, k, j, ns, got, want)
			}
			if got {
				admitted++
			}
		}
	}
	return admitted
}

// Issue 13's minimal case: one key, 100 requests exactly every 100 ms from
// epoch_ms 1767225600000; token_bucket rate 10, capacity 1, spread none
// admits all 100 in every time format, as x/time/rate does. (Read through a
// float64, unix_ms admitted 60.)
func TestExactTimesMinimalCase(t *testing.T) {
	var tr []traceReq
	for i := range int64(100) {
		tr = append(tr, traceReq{"10.0.0.1", (1767225600000 + 100*i) * 1e6})
	}
	for _, f := range timeFormats {
		keys := loadTrace(t, f, tr)
		if n := decide(t, f.name, keys, 10, 1); n != 100 {
			t.Errorf("%s: %d admitted, want 100", f.name, n)
		}
	}
}

// Every time format of the same random trace gives the same times to the
// nanosecond (ms traces for every format, ns traces for those that carry
// ns), hence identical decisions, and they equal x/time/rate's.
func TestExactTimesEveryFormatProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 13))
	traces := 12
	if testing.Short() {
		traces = 4
	}
	for trace := range traces {
		nsTrace := trace%2 == 1
		var tr []traceReq
		keys := 1 + rng.IntN(4)
		at := (1700000000 + rng.Int64N(100000000)) * secondNs
		for range 50 + rng.IntN(150) {
			step := rng.Int64N(400) * 1e6 // ms grid
			if nsTrace {
				step += rng.Int64N(1e6)
			}
			at += step
			tr = append(tr, traceReq{fmt.Sprintf("10.0.0.%d", rng.IntN(keys)), at})
		}
		r := []float64{1, 2, 5, 10, 20, 50}[rng.IntN(6)]
		b := 1 + rng.IntN(5)
		var ref map[string][]int64
		var refName string
		var refAdmitted int
		for _, f := range timeFormats {
			if nsTrace && !f.nsRes {
				continue
			}
			got := loadTrace(t, f, tr)
			n := decide(t, f.name, got, r, b)
			if ref == nil {
				ref, refName, refAdmitted = got, f.name, n
				// The reference is the trace itself.
				want := map[string][]int64{}
				for _, q := range tr {
					want[q.key] = append(want[q.key], q.ns)
				}
				for k := range want {
					if !slices.Equal(want[k], got[k]) {
						t.Fatalf("trace %d, %s: key %s times differ from the trace", trace, f.name, k)
					}
				}
				continue
			}
			for k := range ref {
				if !slices.Equal(ref[k], got[k]) {
					t.Fatalf("trace %d: key %s times differ between %s and %s", trace, k, refName, f.name)
				}
			}
			if n != refAdmitted {
				t.Fatalf("trace %d: %s admits %d, %s %d", trace, f.name, n, refName, refAdmitted)
			}
		}
	}
}

func TestParseUnixDecimal(t *testing.T) {
	cases := []struct {
		in      string
		scale   int
		sec, ns int64
	}{
		{"1767225600.1", 0, 1767225600, 100_000_000},
		{"1767225600100", 3, 1767225600, 100_000_000},
		{"1767225600.123456789999", 0, 1767225600, 123_456_789},
		{"1.7672256001e9", 0, 1767225600, 100_000_000},
		{"1.7672256001E+12", 3, 1767225600, 100_000_000},
		{"17672256001e-1", 0, 1767225600, 100_000_000},
		{"0.000000001", 0, 0, 1},
		{"000123.5", 0, 123, 500_000_000},
		{"5.", 0, 5, 0},
		{".5", 0, 0, 500_000_000},
		{"1767225600123456789", 9, 1767225600, 123_456_789},
		{"1767225600123456.7", 6, 1767225600, 123_456_700},
		{"0", 0, 0, 0},
	}
	for _, c := range cases {
		sec, ns, err := parseUnixDecimal([]byte(c.in), c.scale)
		if err != nil || sec != c.sec || ns != c.ns {
			t.Errorf("%q scale %d: %d s %d ns %v, want %d s %d ns", c.in, c.scale, sec, ns, err, c.sec, c.ns)
		}
	}
	for in, want := range map[string]int{"1767225600": 0, "1767225600.5": 0, "1767225600123": 3, "1767225600123456": 6,
		"1767225600123456789": 9, "1.7672256001e+12": 3, "1.767e9": 0, "0.0017672256e12": 0, "0.0017672256e15": 3, "17672256001234e-4": 0} {
		if got := guessScale([]byte(in)); got != want {
			t.Errorf("guessScale(%q) = %d, want %d", in, got, want)
		}
	}
	for _, in := range []string{"", "-1", "+1", "1.2.3", "abc", "1e", "1e99999", "NaN", "Inf", "1 2", "99999999999999", "0x10", "."} {
		if _, _, err := parseUnixDecimal([]byte(in), 0); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
