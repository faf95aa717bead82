package sweep

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Our zstd encoders compress pages exactly as arrow-go's own encoders do
// (same bytes up to the page size; above it the frame names a shorter
// window), and their frames decode back to the page.
func TestZstdCodecMatchesArrow(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	ours, ok := codec.(*zstdCodec)
	if !ok {
		t.Fatalf("registered zstd codec is %T, want *zstdCodec", codec)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 100, 4096, 100_000, zstdWindow, 3 * zstdWindow} {
		// Page-like data: slowly varying int64s.
		src := make([]byte, 0, n)
		v := int64(0)
		for len(src) < n {
			v += rng.Int64N(5) - 1
			src = binary.LittleEndian.AppendUint64(src, uint64(v))
		}
		src = src[:n]
		for range 3 { // reused encoders give the same bytes
			got := ours.EncodeLevel(nil, src, writerZstdLevel)
			if want := ours.ErrorCodec.EncodeLevel(nil, src, writerZstdLevel); n <= zstdWindow && !bytes.Equal(got, want) {
				t.Fatalf("%d bytes: our frame (%d bytes) differs from arrow-go's (%d bytes)", n, len(got), len(want))
			}
			back, err := ours.DecodeWithError(nil, got)
			if err != nil || !bytes.Equal(back, src) {
				t.Fatalf("%d bytes: decode: %v, equal %v", n, err, bytes.Equal(back, src))
			}
		}
	}
}
