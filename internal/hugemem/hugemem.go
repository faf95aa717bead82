// Package hugemem allocates large slices whose memory the kernel may back
// with transparent huge pages (on Linux, madvise MADV_HUGEPAGE): the first
// touch of such memory then costs one page fault per 2 MB instead of one
// per 4 KB. On a virtual machine whose host backs guest memory lazily, a
// 4 KB fault can cost 20 µs, more than reading the log line the memory
// holds; a column of a log's requests is written once, front to back, so
// it loses nothing to larger pages.
package hugemem

import "unsafe"

// page is the huge page size advised for.
const page = 2 << 20

// minBytes is the smallest allocation worth advising; from alignBytes an
// allocation is placed to start and end on huge page boundaries (up to
// 4 MB of address space more, never touched unless used), below it only
// its whole huge pages are advised.
const (
	minBytes   = 1 << 20
	alignBytes = 8 << 20
)

// Make returns make([]T, n, c), its memory advised for huge pages when it
// is large.
func Make[T any](n, c int) []T {
	var zero T
	size := unsafe.Sizeof(zero)
	if c <= 0 || size == 0 || uintptr(c)*size < minBytes || !enabled {
		return make([]T, n, c)
	}
	if uintptr(c)*size < alignBytes {
		s := make([]T, n, c)
		p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
		start, end := (p+page-1)&^(page-1), (p+uintptr(c)*size)&^(page-1)
		if end > start {
			advise(start, end-start)
		}
		return s
	}
	span := (uintptr(c)*size + page - 1) &^ (page - 1)
	s := make([]T, 0, (span+page)/size+1)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	off := ((p+page-1)&^(page-1) - p + size - 1) / size // elements to the boundary
	if (p+off*size)%page != 0 {
		return make([]T, n, c) // T's size does not divide the way to it
	}
	s = s[off : off+uintptr(n) : off+uintptr(c)]
	advise(uintptr(unsafe.Pointer(unsafe.SliceData(s))), span)
	return s
}
