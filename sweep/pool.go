package sweep

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferPool is the Parquet writer's memory.Allocator. arrow-go grows its
// encoders' and pages' buffers by doubling and frees them when a page or a
// column chunk is done: about 1 GB for the large grid. From the Go heap,
// that memory was zeroed, garbage collected, and faulted in page by page as
// the heap grew to twice its live size.
//
// The pool maps its buffers outside the Go heap, in size classes (powers of
// two from 64 KiB to 256 MiB), and keeps the freed ones for the next
// request of their class: the writer runs on as many bytes as it holds at
// its peak, none of which the collector scans or doubles. Pages of a class
// that a request does not touch are never faulted in. Requests below the
// smallest class (and above the largest) go to the Go heap. Buffers are
// zeroed as the Go allocator's are.
type bufferPool struct {
	mu   sync.Mutex
	free [poolMaxShift - poolLeastShift + 1][]unsafe.Pointer
	// minShift is the smallest class pooled: poolMinShift (tests lower it
	// to poolLeastShift).
	minShift int
	mapped   map[unsafe.Pointer]*pooled // the pool's buffers
	// poison, for tests, fills freed buffers with 0xA5, so that a buffer
	// used after it was freed shows in the output.
	poison bool
	// Counts, for tests: buffers mapped, taken back, handed out again,
	// and freed twice (ignored).
	maps, frees, reuses, doubleFrees int
}

// pooled is one buffer of the pool.
type pooled struct {
	class int8
	free  bool
}

const (
	poolMinShift   = 16 // 64 KiB
	poolLeastShift = 12 // 4 KiB, the page
	poolMaxShift   = 28 // 256 MiB
	hugePage       = 2 << 20
)

// writerPool is the allocator of every Parquet file ratesweep writes.
var writerPool = newBufferPool()

func newBufferPool() *bufferPool {
	return &bufferPool{mapped: map[unsafe.Pointer]*pooled{}, minShift: poolMinShift}
}

var (
	_           memory.Allocator = (*bufferPool)(nil)
	goAllocator                  = memory.NewGoAllocator()
)

// class is the size class of size bytes, or -1 when it is not pooled.
func (p *bufferPool) class(size int) int {
	s := bits.Len(uint(size - 1))
	if size <= 1<<(p.minShift-1) || s > poolMaxShift {
		return -1
	}
	return max(s, p.minShift) - poolLeastShift
}

// Allocate returns size zeroed bytes, 64-byte aligned.
func (p *bufferPool) Allocate(size int) []byte {
	c := p.class(size)
	if c < 0 {
		return goAllocator.Allocate(size)
	}
	n := 1 << (c + poolLeastShift)
	p.mu.Lock()
	if k := len(p.free[c]); k > 0 {
		ptr := p.free[c][k-1]
		p.free[c] = p.free[c][:k-1]
		p.mapped[ptr].free = false
		p.reuses++
		p.mu.Unlock()
		b := unsafe.Slice((*byte)(ptr), n)[:size]
		clear(b)
		return b
	}
	p.mu.Unlock()
	b, err := mapAnon(n)
	if err != nil {
		return goAllocator.Allocate(size)
	}
	p.mu.Lock()
	p.mapped[unsafe.Pointer(&b[0])] = &pooled{class: int8(c)}
	p.maps++
	p.mu.Unlock()
	return b[:size]
}

// Reallocate resizes b to size bytes, keeping its contents; new bytes are zero.
func (p *bufferPool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free takes back a buffer of the pool; others are left to the collector.
func (p *bufferPool) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	ptr := unsafe.Pointer(unsafe.SliceData(b))
	p.mu.Lock()
	defer p.mu.Unlock()
	pb, ok := p.mapped[ptr]
	switch {
	case !ok:
		return
	case pb.free:
		p.doubleFrees++
		return
	}
	if p.poison {
		full := unsafe.Slice((*byte)(ptr), 1<<(int(pb.class)+poolLeastShift))
		for i := range full {
			full[i] = 0xA5
		}
	}
	pb.free = true
	p.frees++
	p.free[pb.class] = append(p.free[pb.class], ptr)
}
