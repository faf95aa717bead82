package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// lineBuffer returns what bufio.Reader.ReadSlice('\n') returns, line by
// line, whatever the buffer size, the reads' sizes and the lines' lengths,
// and lastASCII is right for every line.
func TestLineBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 300 {
		var data []byte
		for range rng.IntN(200) {
			n := rng.IntN(120)
			if rng.IntN(20) == 0 {
				n = rng.IntN(3000)
			}
			for range n {
				c := byte(' ' + rng.IntN(90))
				switch rng.IntN(400) {
				case 0:
					c = 0xc3 // a lone lead byte
				case 1:
					data = append(data, "é"...)
				}
				data = append(data, c)
			}
			if rng.IntN(30) != 0 {
				data = append(data, '\n')
			}
		}
		size := 16 + rng.IntN(600)
		var src io.Reader = bytes.NewReader(data)
		if rng.IntN(2) == 0 {
			src = iotest.OneByteReader(src)
		} else if rng.IntN(2) == 0 {
			src = iotest.HalfReader(src)
		}
		l := newLineBuffer(src, size)
		ref := bufio.NewReaderSize(bytes.NewReader(data), size)
		for {
			got, gerr := l.ReadSlice()
			want, werr := ref.ReadSlice('\n')
			if !bytes.Equal(got, want) || gerr != werr {
				t.Fatalf("trial %d (size %d): got %q, %v; want %q, %v", trial, size, got, gerr, want, werr)
			}
			if gerr == nil || gerr == bufio.ErrBufferFull || len(got) > 0 {
				isASCII := true
				for _, c := range got {
					isASCII = isASCII && c < 0x80
				}
				if a := l.lastASCII(); a && !isASCII {
					t.Fatalf("trial %d: %q said ASCII", trial, got)
				} else if !a && isASCII && gerr == nil {
					// allowed only for a line that begins inside the
					// known ASCII run and ends past it
					if !l.straddles() {
						t.Fatalf("trial %d: ASCII line %q said not ASCII", trial, got)
					}
				}
			}
			if gerr != nil && gerr != bufio.ErrBufferFull {
				break
			}
		}
	}
}

// straddles reports whether the last line began before the known ASCII
// run ended and ends after it (lastASCII answers false for it without
// looking again).
func (l *lineBuffer) straddles() bool { return l.lineStart < l.asciiEnd && l.asciiEnd < l.start }

// The line estimates of a plain and a gzip log are at or above the lines
// (columns sized once) and within a fifth of them; a gzip log of several
// members is counted instead (0).
func TestEstimateLines(t *testing.T) {
	dir := t.TempDir()
	var plain bytes.Buffer
	rng := rand.New(rand.NewPCG(1, 2))
	lines := 0
	for plain.Len() < 9<<20 {
		fmt.Fprintf(&plain, "10.0.%d.%d - - [02/Sep/2003:00:00:%02d +0000] \"GET /%d HTTP/1.1\" 200 %d\n", rng.IntN(256), rng.IntN(256), rng.IntN(60), rng.IntN(1e6), rng.IntN(1e5))
		lines++
	}
	write := func(name string, data []byte) *os.File {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	gz := func(data []byte) []byte {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write(data)
		w.Close()
		return z.Bytes()
	}
	one := gz(plain.Bytes())
	half := plain.Len() / 2
	half += bytes.IndexByte(plain.Bytes()[half:], '\n') + 1
	two := append(gz(plain.Bytes()[:half]), gz(plain.Bytes()[half:])...)
	zst := compressZstd(t, plain.Bytes())
	small := gz(plain.Bytes()[:half])
	smallLines := int64(bytes.Count(plain.Bytes()[:half], []byte{'\n'})) + 1
	for _, c := range []struct {
		name     string
		data     []byte
		min, max int64 // 0, 0: counted instead
	}{
		{"plain.log", plain.Bytes(), int64(lines), int64(lines) * 6 / 5},
		{"one.log.gz", one, int64(lines), int64(lines) * 6 / 5},
		{"two.log.gz", two, 0, 0},
		{"small.log.gz", small, smallLines, smallLines}, // within the sample: exact
		{"one.log.zst", zst, int64(lines), int64(lines) * 3 / 2},
	} {
		f := write(c.name, c.data)
		if got := estimateLines(f, int64(len(c.data))); got < c.min || got > c.max {
			t.Errorf("%s: estimated %d lines, want %d..%d (%d lines)", c.name, got, c.min, c.max, lines)
		}
	}
}

// The key index gives one index per distinct key, whatever its length
// (short keys are compared in their slot, long ones by their bytes), across
// the table's growth.
func TestKeyIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := &builder{}
	want := map[string]int32{}
	alphabet := []byte("0123456789.:ab")
	for range 50000 {
		n := rng.IntN(41)
		key := make([]byte, n)
		for i := range key {
			key[i] = alphabet[rng.IntN(len(alphabet))]
		}
		k := b.intern(key)
		if w, ok := want[string(key)]; ok && w != k {
			t.Fatalf("key %q: index %d, before %d", key, k, w)
		} else if !ok {
			if int(k) != len(want) {
				t.Fatalf("new key %q: index %d, want %d", key, k, len(want))
			}
			want[string(key)] = k
		}
		if b.raw[k] != string(key) {
			t.Fatalf("index %d names %q, not %q", k, b.raw[k], key)
		}
	}
}

// compressZstd returns data compressed with zstd.
func compressZstd(t testing.TB, data []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	w, err := zstd.NewWriter(&z)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	return z.Bytes()
}
