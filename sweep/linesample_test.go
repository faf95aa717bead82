package sweep

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// writeShortCSV writes a CSV log of lines requests, each line 17 to 22
// bytes (a time and an address), plain or gzipped.
func writeShortCSV(t *testing.T, lines int, gz bool) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("time,addr\n")
	for i := range lines {
		fmt.Fprintf(&b, "%d,10.%d.%d.%d\n", 1700000000+i/50, i%3, i%250, i%7)
	}
	data, name := b.Bytes(), "short.csv"
	if gz {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(data)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		data, name = z.Bytes(), "short.csv.gz"
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A log of lines shorter than the shortest plausible (a CSV of times and
// addresses, about 20 bytes a line) is counted from its first lines: the
// request bound covers every line it holds, plain or gzipped, larger than
// the sample or read whole, and stays within the sampling margin.
func TestShortLineLogEstimate(t *testing.T) {
	for _, c := range []struct {
		lines int
		gz    bool
	}{{300_000, false}, {300_000, true}, {20_000, false}, {20_000, true}} {
		path := writeShortCSV(t, c.lines, c.gz)
		reqs, how := logRequests(path)
		if reqs < float64(c.lines) || reqs > lineSampleMargin*1.05*float64(c.lines+1) {
			t.Errorf("%d lines (gzip %v): estimated %.0f requests (%s)", c.lines, c.gz, reqs, how)
		}
		if !strings.Contains(how, "sampled") {
			t.Errorf("%d lines (gzip %v): %q does not say the line length was sampled", c.lines, c.gz, how)
		}
	}
	// Lines longer than the shortest plausible keep it as the bound.
	long, size := writeGzipMembers(t, 2, 100)
	if reqs, how := logRequests(long); reqs != float64(size)/logLineBytes || strings.Contains(how, "sampled") {
		t.Errorf("long lines: %.0f requests (%s), want %d bytes / %d", reqs, how, size, logLineBytes)
	}
	// A sample without a line break (one huge line, or a binary file)
	// keeps the shortest plausible line too.
	huge := filepath.Join(t.TempDir(), "huge.log")
	if err := os.WriteFile(huge, bytes.Repeat([]byte("x"), lineSampleBytes+10), 0o644); err != nil {
		t.Fatal(err)
	}
	if reqs, how := logRequests(huge); reqs != float64(lineSampleBytes+10)/logLineBytes || strings.Contains(how, "sampled") {
		t.Errorf("one huge line: %.0f requests (%s)", reqs, how)
	}
	if _, _, ok := sampleLineBytes(filepath.Join(t.TempDir(), "absent")); ok {
		t.Error("sampled a missing file")
	}
}

// A zstd or xz log is bounded by its decompressed size, not its compressed
// one (which undercounted a zstd log about 7×): the request bound covers
// every line, for lines of common length and for short ones.
func TestCompressedLogEstimate(t *testing.T) {
	for _, lineLen := range []int{20, 64} {
		var b bytes.Buffer
		const lines = 200_000
		for i := range lines {
			line := fmt.Sprintf("%d,10.%d.%d.%d,", 1700000000+i/50, i%3, i%250, i%7)
			b.WriteString(line + strings.Repeat("x", max(0, lineLen-len(line)-1)) + "\n")
		}
		for _, c := range []struct {
			name string
			enc  func([]byte) ([]byte, error)
		}{
			{"zst", func(p []byte) ([]byte, error) {
				w, err := zstd.NewWriter(nil)
				if err != nil {
					return nil, err
				}
				return w.EncodeAll(p, nil), w.Close()
			}},
			{"xz", func(p []byte) ([]byte, error) {
				var z bytes.Buffer
				w, err := xz.NewWriter(&z)
				if err != nil {
					return nil, err
				}
				if _, err := w.Write(p); err != nil {
					return nil, err
				}
				err = w.Close()
				return z.Bytes(), err
			}},
		} {
			data, err := c.enc(b.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "access.log."+c.name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			reqs, how := logRequests(path)
			if reqs < lines || reqs > 2*lines {
				t.Errorf("%s, %d-byte lines: estimated %.0f requests for %d (%s)", c.name, lineLen, reqs, lines, how)
			}
		}
	}
}
