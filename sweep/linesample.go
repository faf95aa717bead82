package sweep

import (
	"bytes"
	"errors"
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
	buf := make([]byte, lineSampleBytes+1)
	n, err := io.ReadFull(r, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		whole = true
	case err != nil:
		return 0, false, false
	}
	buf = buf[:n]
	lines := bytes.Count(buf, []byte{'\n'})
	if whole && n > 0 && buf[n-1] != '\n' {
		lines++ // the last line, unterminated
	} else if !whole {
		buf = buf[:bytes.LastIndexByte(buf, '\n')+1] // complete lines only
	}
	if lines == 0 {
		return 0, false, false
	}
	return float64(len(buf)) / float64(lines), whole, true
}
