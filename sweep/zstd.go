package sweep

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// zstdWindow is the window of the encoders that compress our pages. Pages
// are about 1 MiB at most (parquet's default data page size), so a longer
// window finds no more matches; arrow-go's encoders use zstd's default of
// 8 MiB, for which each encoder keeps 16 MiB of history (live heap that
// raised the 10M-point run's peak RSS by about 30 MB, through the GC goal).
const zstdWindow = 1 << 20

// zstdCodec is arrow-go's zstd codec, whose encoders at our compression
// level (writerProps) have a 1 MiB window and are kept for reuse in a free
// list (arrow-go's sync.Pool drops them at every GC, and a new encoder
// allocates its history again). The compressed frames are standard zstd;
// decoding is arrow-go's.
type zstdCodec struct {
	compress.ErrorCodec
	level zstd.EncoderLevel

	mu   sync.Mutex
	free []*zstd.Encoder
}

func (c *zstdCodec) EncodeLevel(dst, src []byte, level int) []byte {
	if level != writerZstdLevel {
		return c.ErrorCodec.EncodeLevel(dst, src, level)
	}
	c.mu.Lock()
	var enc *zstd.Encoder
	if n := len(c.free); n > 0 {
		enc, c.free = c.free[n-1], c.free[:n-1]
	}
	c.mu.Unlock()
	if enc == nil {
		var err error
		// The options of arrow-go's encoders, but for the window.
		enc, err = zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(c.level),
			zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(zstdWindow))
		if err != nil { // not with these constant options
			return c.ErrorCodec.EncodeLevel(dst, src, level)
		}
	}
	dst = enc.EncodeAll(src, dst[:0])
	c.mu.Lock()
	c.free = append(c.free, enc)
	c.mu.Unlock()
	return dst
}

func init() {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	base, ok := codec.(compress.ErrorCodec)
	if err != nil || !ok {
		panic("sweep: arrow-go's zstd codec is missing or reports no decoding errors")
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &zstdCodec{ErrorCodec: base, level: zstd.EncoderLevelFromZstd(writerZstdLevel)})
}
