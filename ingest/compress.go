package ingest

import (
	"bufio"
	"bytes"
	"compress/bzip2"

	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Compression is how a log's bytes are compressed, detected by their magic
// bytes.
type Compression uint8

const (
	CompressNone Compression = iota
	CompressGzip
	CompressZstd
	CompressBzip2
	CompressXZ
)

var compressionNames = []string{"", "gzip", "zstd", "bzip2", "xz"}

func (c Compression) String() string { return compressionNames[c] }

// compressionMagic are each compression's leading bytes.
var compressionMagic = []struct {
	c     Compression
	magic []byte
}{
	{CompressGzip, []byte{0x1f, 0x8b}},
	{CompressZstd, []byte{0x28, 0xb5, 0x2f, 0xfd}},
	{CompressBzip2, []byte("BZh")},
	{CompressXZ, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}},
}

// sniffCompression names the compression whose magic bytes head b.
func sniffCompression(head []byte) Compression {
	for _, m := range compressionMagic {
		if bytes.HasPrefix(head, m.magic) {
			return m.c
		}
	}
	return CompressNone
}

// decompress wraps br in the decoder of its compression, detected by its
// magic bytes; a plain stream comes back as it is (CompressNone).
func decompress(br *bufio.Reader) (io.Reader, Compression, func() error, error) {
	head, _ := br.Peek(6)
	c := sniffCompression(head)
	nop := func() error { return nil }
	switch c {
	case CompressGzip:
		// klauspost's inflater: the standard library's output, a third
		// less CPU.
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, c, nil, fmt.Errorf("gzip: %v", err)
		}
		return zr, c, zr.Close, nil
	case CompressZstd:
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, c, nil, fmt.Errorf("zstd: %v", err)
		}
		return zr, c, func() error { zr.Close(); return nil }, nil
	case CompressBzip2:
		return bzip2.NewReader(br), c, nop, nil
	case CompressXZ:
		zr, err := xz.NewReader(br)
		if err != nil {
			return nil, c, nil, fmt.Errorf("xz: %v", err)
		}
		return zr, c, nop, nil
	}
	return br, c, nop, nil
}

// Decompress wraps r in the decoder of its compression (gzip, zstd, bzip2
// or xz, detected by its magic bytes), as the log readers do; a plain
// stream comes back as it is, with CompressNone. close releases the
// decoder.
func Decompress(r io.Reader) (dr io.Reader, c Compression, close func() error, err error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	return decompress(br)
}
