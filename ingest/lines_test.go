package ingest

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
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
