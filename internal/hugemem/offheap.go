package hugemem

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// Word is an element type Alloc may hold: plain numbers (the garbage
// collector does not look into memory outside its heap).
type Word interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

// mappings are the live regions Alloc mapped: start address → length.
var mappings sync.Map

// mappedBytes is the length of the live mappings.
var mappedBytes atomic.Int64

// Mapped is the memory Alloc holds outside the Go heap, bytes (address
// space: what was never touched is not resident).
func Mapped() int64 { return mappedBytes.Load() }

// Alloc returns a zeroed slice of n elements and capacity c (n ≤ c) for
// memory with a known end of life: on Linux, from c·size(T) of 1 MB up,
// anonymous memory mapped outside the Go heap on huge page boundaries, so
// that every 2 MB of it costs one page fault and Free gives it back at
// once; elsewhere, and when smaller, Make's. Nothing may refer to the slice
// after Free.
func Alloc[T Word](n, c int) []T {
	var zero T
	size := uintptr(unsafe.Sizeof(zero))
	if c <= 0 || uintptr(c)*size < minBytes || !enabled {
		return Make[T](n, c)
	}
	length := (uintptr(c)*size + page - 1) &^ (page - 1)
	p := mapAligned(length)
	if p == nil {
		return Make[T](n, c) // no such mapping: the heap's
	}
	mappings.Store(uintptr(p), length)
	mappedBytes.Add(int64(length))
	return unsafe.Slice((*T)(p), c)[:n]
}

// Free releases s's memory if Alloc mapped it (a slice from the Go heap is
// left to the collector). s must be the slice Alloc returned, or a
// reslice of it starting at the same element.
func Free[T Word](s []T) {
	if cap(s) == 0 {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	if length, ok := mappings.LoadAndDelete(p); ok {
		unmap(p, length.(uintptr))
		mappedBytes.Add(-int64(length.(uintptr)))
	}
}
