package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// compressedLog is the plain text of testdata/compressed/access.log.bz2
// (bzip2 has no writer in Go's library, so that one is committed).
const compressedLog = `203.0.113.7 - - [01/Jan/2026:00:00:00 +0000] "GET /api/items?page=2 HTTP/1.1" 200 512 "-" "curl/8.5.0"
198.51.100.4 - - [01/Jan/2026:00:00:01 +0000] "GET / HTTP/1.1" 304 0 "-" "Mozilla/5.0 (X11; Linux x86_64)"
203.0.113.7 - - [01/Jan/2026:00:00:02 +0000] "POST /login HTTP/1.1" 401 20 "-" "curl/8.5.0"
`

func compressWith(t *testing.T, c Compression, text string) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch c {
	case CompressGzip:
		w := gzip.NewWriter(&buf)
		w.Write([]byte(text))
		w.Close()
	case CompressZstd:
		w, _ := zstd.NewWriter(&buf)
		w.Write([]byte(text))
		w.Close()
	case CompressXZ:
		w, err := xz.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(text))
		w.Close()
	case CompressBzip2:
		b, err := os.ReadFile(filepath.Join("testdata", "compressed", "access.log.bz2"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	default:
		return []byte(text)
	}
	return buf.Bytes()
}

// Every compression is detected by its magic bytes and reads as the plain
// log: the same keys, times and line count (the line count of a large file
// too, which Load takes before reading).
func TestCompressedLogs(t *testing.T) {
	plain, err := Build(context.Background(), strings.NewReader(compressedLog), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Compression{CompressGzip, CompressZstd, CompressBzip2, CompressXZ} {
		t.Run(c.String(), func(t *testing.T) {
			data := compressWith(t, c, compressedLog)
			if got := sniffCompression(data); got != c {
				t.Fatalf("sniffed %v", got)
			}
			path := filepath.Join(t.TempDir(), "access.log")
			os.WriteFile(path, data, 0o644)
			tr, err := Load(context.Background(), path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Stats.Compression != c || tr.Stats.Gzipped != (c == CompressGzip) || tr.Format != FormatCombined {
				t.Errorf("compression %v gzipped %v format %v", tr.Stats.Compression, tr.Stats.Gzipped, tr.Format)
			}
			if tr.Requests() != plain.Requests() || len(tr.Keys) != len(plain.Keys) || tr.Keys[0].Name != plain.Keys[0].Name || tr.StartUnix != plain.StartUnix {
				t.Errorf("read %d requests %+v, plain %d %+v", tr.Requests(), tr.Keys, plain.Requests(), plain.Keys)
			}
			f, _ := os.Open(path)
			defer f.Close()
			if n, err := countLines(f); err != nil || n != 4 {
				t.Errorf("countLines %d %v, want 4", n, err)
			}
		})
	}
}

// A truncated compressed log is an error naming the compression, not a
// short log read in silence.
func TestTruncatedCompression(t *testing.T) {
	for _, c := range []Compression{CompressGzip, CompressZstd, CompressXZ} {
		data := compressWith(t, c, strings.Repeat(compressedLog, 50))
		_, err := Build(context.Background(), bytes.NewReader(data[:len(data)/2]), Options{})
		if err == nil || !strings.Contains(err.Error(), c.String()) {
			t.Errorf("%v: %v", c, err)
		}
	}
}

// A JSON array (gcloud logging read --format=json) is refused with the jq
// command that turns it into JSON lines.
func TestJSONArrayHint(t *testing.T) {
	for _, log := range []string{"[\n  {\"timestamp\": \"2026-01-01T00:00:00Z\"}\n]\n", `[{"ts":1},{"ts":2}]` + "\n"} {
		_, err := Build(context.Background(), strings.NewReader(log), Options{})
		if err == nil || !strings.Contains(err.Error(), "jq -c '.[]'") {
			t.Errorf("%q: %v", log, err)
		}
	}
}
