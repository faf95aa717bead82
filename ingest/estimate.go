package ingest

// Estimating a log's lines before it is read, to size its columns.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// countLinesAbove is the log file size above which Load counts lines first.
const countLinesAbove = 4 << 20

// countLines counts the newlines of a log (decompressed if gzip), or a
// Parquet file's rows (from its footer).
func countLines(f *os.File) (int64, error) {
	var magic [4]byte
	if n, _ := io.ReadFull(f, magic[:]); n == 4 && string(magic[:]) == "PAR1" {
		return parquetRows(f), nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	r, c, closeZ, err := decompress(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		return 0, err
	}
	defer closeZ()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n + 1, nil
		}
		if err != nil {
			if c == CompressNone {
				return 0, err
			}
			return 0, fmt.Errorf("%s: %v", c, err)
		}
	}
}

// estimateLines estimates the lines of a plain log of size bytes from
// the lines in 16 samples of 64 KB spread over it, with a margin of a
// tenth (a compressed log: estimateCompressedLines), or returns 0 when f
// is Parquet or the samples are too few. Capacity beyond the lines is
// never touched, so it costs address space, not memory; a log whose later
// lines are much shorter than its samples grows its columns once.
func estimateLines(f *os.File, size int64) int64 {
	const samples, chunk = 16, 64 << 10
	var head [6]byte
	if n, _ := f.ReadAt(head[:], 0); n < len(head) || string(head[:4]) == "PAR1" {
		return 0
	}
	if c := sniffCompression(head[:]); c != CompressNone {
		return estimateCompressedLines(f, size, c)
	}
	buf := make([]byte, chunk)
	var bytesRead, newlines int64
	for i := range int64(samples) {
		n, err := f.ReadAt(buf, (size-chunk)*i/(samples-1))
		if err != nil && err != io.EOF {
			return 0
		}
		bytesRead += int64(n)
		newlines += int64(bytes.Count(buf[:n], []byte{'\n'}))
	}
	if newlines < 100 {
		return 0
	}
	return size*newlines/bytesRead*11/10 + 4096
}

// estimateCompressedLines estimates the lines of a compressed log of size
// bytes from its first 8 MB decompressed: their lines, and the
// uncompressed size their compression ratio predicts, with a margin of a
// fifth. A gzip log's trailer gives its uncompressed size modulo 2³²
// (ISIZE): the multiple of 2³² nearest the prediction makes it exact, with
// a margin of a tenth, unless it is far from the prediction (several
// members: its lines are counted instead, 0). A log shorter than the sample
// has its lines counted exactly.
func estimateCompressedLines(f *os.File, size int64, c Compression) int64 {
	const sample = 8 << 20
	in := &countingReader{r: io.NewSectionReader(f, 0, size)}
	zr, _, closeZ, err := decompress(bufio.NewReaderSize(in, 4096))
	if err != nil {
		return 0
	}
	defer closeZ()
	buf := make([]byte, 64<<10)
	var n, newlines int64
	for n < sample {
		k, err := zr.Read(buf[:min(int64(len(buf)), sample-n)])
		n += int64(k)
		newlines += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return newlines + 1
		}
		if err != nil {
			return 0
		}
	}
	if newlines < 100 {
		return 0
	}
	expected := float64(size) * float64(n) / float64(in.n)
	if c != CompressGzip {
		return int64(expected)*newlines/n*6/5 + 4096
	}
	var tail [4]byte
	if k, _ := f.ReadAt(tail[:], size-4); k < 4 {
		return 0
	}
	isize := int64(binary.LittleEndian.Uint32(tail[:]))
	const wrap = 1 << 32
	total := isize + int64(math.Round((expected-float64(isize))/wrap))*wrap
	if total < n || float64(total) < expected*0.7 || float64(total) > expected*1.4 {
		return 0 // the trailer is not this stream's size
	}
	return total*newlines/n*11/10 + 4096
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
