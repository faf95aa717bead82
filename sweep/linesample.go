package sweep

import (
	"bytes"
	"io"
	"os"

	"github.com/ratesweep/ratesweep/ingest"
)

// The line sample: a text log's first lineSampleBytes (decompressed, when
// compressed) give its mean line length, lowered by lineSampleMargin for
// shorter lines further on.
const (
	lineSampleBytes  = 1 << 20
	lineSampleMargin = 1.25
)

// sampleLineBytes measures the lines at the start of the text log at path
// (decompressed first when it is gzip, zstd, bzip2 or xz): the bytes a line, over the complete lines of the
// sample. whole reports that the sample was the whole log, so that its
// size over the mean is its exact line count. ok is false when the file
// cannot be read or the sample holds no line break.
func sampleLineBytes(path string) (mean float64, whole, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, false
	}
	defer f.Close()
	r, _, closeZ, err := ingest.Decompress(f)
	if err != nil {
		return 0, false, false
	}
	defer closeZ()
	// Read a chunk at a time: the sample is counted, not kept.
	buf := make([]byte, 64<<10)
	var n, lines, complete int // bytes read, newlines, bytes up to the last newline
	var last byte
	for n <= lineSampleBytes {
		k, err := r.Read(buf[:min(len(buf), lineSampleBytes+1-n)])
		if k > 0 {
			if c := bytes.Count(buf[:k], []byte{'\n'}); c > 0 {
				lines += c
				complete = n + bytes.LastIndexByte(buf[:k], '\n') + 1
			}
			n += k
			last = buf[k-1]
		}
		if err == io.EOF {
			whole = true
			break
		}
		if err != nil {
			return 0, false, false
		}
	}
	if whole && n > 0 && last != '\n' {
		lines++ // the last line, unterminated
	} else if !whole {
		n = complete // complete lines only
	}
	if lines == 0 {
		return 0, false, false
	}
	return float64(n) / float64(lines), whole, true
}
