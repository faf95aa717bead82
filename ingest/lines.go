package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"unsafe"
)

// lineBuffer splits lines out of a large buffer refilled from a stream,
// like bufio.Reader.ReadSlice('\n'), and checks the bytes it reads for
// ASCII a buffer at a time: a line within a run known to be ASCII needs no
// UTF-8 validation of its own (most log lines).
type lineBuffer struct {
	r          io.Reader
	buf        []byte
	start, end int // unread bytes: buf[start:end]
	err        error
	asciiEnd   int // buf[start:asciiEnd] is all ASCII (asciiEnd >= start when set)
	lineStart  int // the last line returned: buf[lineStart:start]
}

func newLineBuffer(r io.Reader, size int) *lineBuffer {
	return &lineBuffer{r: r, buf: make([]byte, size)}
}

// ReadSlice returns the bytes up to and including the next newline, valid
// until the next call. At the end of the stream it returns the rest with
// io.EOF; with a full buffer and no newline, the buffer with
// bufio.ErrBufferFull.
func (l *lineBuffer) ReadSlice() ([]byte, error) {
	scanned := l.start
	for {
		if i := bytes.IndexByte(l.buf[scanned:l.end], '\n'); i >= 0 {
			j := scanned + i + 1
			line := l.buf[l.start:j]
			l.lineStart, l.start = l.start, j
			return line, nil
		}
		scanned = l.end
		if l.err != nil {
			line := l.buf[l.start:l.end]
			l.lineStart, l.start = l.start, l.end
			return line, l.err
		}
		if l.start == 0 && l.end == len(l.buf) {
			line := l.buf[:l.end]
			l.lineStart, l.start = 0, l.end
			return line, bufio.ErrBufferFull
		}
		// Move the unread bytes to the front and fill the rest.
		if l.start > 0 {
			n := copy(l.buf, l.buf[l.start:l.end])
			scanned -= l.start
			l.asciiEnd = max(l.asciiEnd-l.start, 0)
			l.start, l.end = 0, n
		}
		for l.end < len(l.buf) && l.err == nil {
			n, err := l.r.Read(l.buf[l.end:])
			l.end += n
			l.err = err
			if n > 0 {
				break
			}
		}
		if l.asciiEnd >= l.start && l.asciiEnd < l.end {
			l.asciiEnd += asciiPrefix(l.buf[l.asciiEnd:l.end])
		}
	}
}

// lastASCII reports whether the last line returned is all ASCII.
func (l *lineBuffer) lastASCII() bool {
	if l.start <= l.asciiEnd {
		return true
	}
	if l.lineStart >= l.asciiEnd {
		// Past a byte that is not ASCII: look again from this line on.
		l.asciiEnd = l.lineStart + asciiPrefix(l.buf[l.lineStart:l.end])
		return l.start <= l.asciiEnd
	}
	return false
}

// asciiPrefix returns the length of b's longest all-ASCII prefix.
func asciiPrefix(b []byte) int {
	const high = 0x8080808080808080
	n := 0
	if len(b) >= 64 {
		// 64 bytes a step, without bounds checks: this runs over every
		// byte of a log.
		p := unsafe.Pointer(unsafe.SliceData(b))
		for ; n+64 <= len(b); n += 64 {
			q := unsafe.Add(p, n)
			w := *(*uint64)(q) | *(*uint64)(unsafe.Add(q, 8)) | *(*uint64)(unsafe.Add(q, 16)) | *(*uint64)(unsafe.Add(q, 24)) |
				*(*uint64)(unsafe.Add(q, 32)) | *(*uint64)(unsafe.Add(q, 40)) | *(*uint64)(unsafe.Add(q, 48)) | *(*uint64)(unsafe.Add(q, 56))
			if w&high != 0 {
				break
			}
		}
	}
	for ; n+8 <= len(b); n += 8 {
		if binary.LittleEndian.Uint64(b[n:])&high != 0 {
			break
		}
	}
	for ; n < len(b); n++ {
		if b[n] >= 0x80 {
			return n
		}
	}
	return n
}
