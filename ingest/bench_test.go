package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// combinedLog returns the two real Combined logs, decompressed, repeated to
// at least 1,000,000 lines, and the line count.
func combinedLog(b *testing.B) ([]byte, int) {
	b.Helper()
	var one []byte
	for _, p := range []string{"antlr_org_20030902/access.log.gz", "elastic_apache_logs/apache_logs.gz"} {
		f, err := os.Open(filepath.Join("..", "configs", "examples", "logs", p))
		if err != nil {
			b.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			b.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		one = append(one, data...)
	}
	n := bytes.Count(one, []byte("\n"))
	reps := (1_000_000 + n - 1) / n
	return bytes.Repeat(one, reps), n * reps
}

// reportLines reports lines per wall-clock second and per CPU second (the
// per-core speed, less sensitive to other load on a shared machine; it
// includes the garbage collector's CPU).
func reportLines(b *testing.B, lines int, cpu0 float64) {
	n := float64(lines) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "lines/s")
	if cpu := cpuSeconds() - cpu0; cpu > 0 {
		b.ReportMetric(n/cpu, "lines/cpu-s")
	}
}

// BenchmarkParseCombined is the line parser alone.
func BenchmarkParseCombined(b *testing.B) {
	data, lines := combinedLog(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var r Record
	cpu0 := cpuSeconds()
	for b.Loop() {
		rest := data
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			if err := ParseCombined(rest[:i], &r); err != nil {
				b.Fatal(err)
			}
			rest = rest[i+1:]
		}
	}
	reportLines(b, lines, cpu0)
}

// BenchmarkReadCombined is the streaming Reader: line splitting and parsing.
func BenchmarkReadCombined(b *testing.B) {
	data, lines := combinedLog(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu0 := cpuSeconds()
	for b.Loop() {
		rd, err := NewReader(bytes.NewReader(data), ReaderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rd.Scan() {
			n++
		}
		if rd.Err() != nil || n != lines {
			b.Fatalf("%d lines, %v", n, rd.Err())
		}
	}
	reportLines(b, lines, cpu0)
}

// BenchmarkBuildCombined is the whole ingest: reading, keying by ip,
// compiling the Traffic (sorting by key and time).
func BenchmarkBuildCombined(b *testing.B) {
	data, lines := combinedLog(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu0 := cpuSeconds()
	for b.Loop() {
		// The log repeats real logs end to end, so its times jump back at
		// each copy: no bound on going backwards (the default, 300 s, would
		// count most copies as malformed).
		tr, err := Build(context.Background(), bytes.NewReader(data), Options{MaxBackS: -1})
		if err != nil {
			b.Fatal(err)
		}
		if tr.Requests() != int64(lines) {
			b.Fatalf("built %d requests from %d lines", tr.Requests(), lines)
		}
	}
	reportLines(b, lines, cpu0)
}

// benchRead streams data through a Reader with opt and reports lines per
// second and per CPU second.
func benchRead(b *testing.B, data []byte, lines int, opt ReaderOptions) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu0 := cpuSeconds()
	for b.Loop() {
		rd, err := NewReader(bytes.NewReader(data), opt)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rd.Scan() {
			n++
		}
		if rd.Err() != nil || n != lines {
			b.Fatalf("%d lines of %d, %v (%v)", n, lines, rd.Err(), rd.Samples())
		}
	}
	reportLines(b, lines, cpu0)
}

// BenchmarkReadNginxFormat is the real Combined logs read as format nginx
// by nginx's combined log_format (the format string reader).
func BenchmarkReadNginxFormat(b *testing.B) {
	data, lines := combinedLog(b)
	benchRead(b, data, lines, ReaderOptions{Format: FormatNginx, Template: NginxCombinedFormat})
}

// BenchmarkReadGzipCombined and BenchmarkReadZstdCombined are the Reader
// over the compressed log: decompression and parsing.
func BenchmarkReadGzipCombined(b *testing.B) {
	data, lines := combinedLog(b)
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(data)
	w.Close()
	benchRead(b, z.Bytes(), lines, ReaderOptions{})
}

func BenchmarkReadZstdCombined(b *testing.B) {
	data, lines := combinedLog(b)
	z := compressZstd(b, data)
	benchRead(b, z, lines, ReaderOptions{})
}
