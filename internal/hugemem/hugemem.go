// Package hugemem allocates large slices whose memory the kernel may back
// with transparent huge pages (on Linux, madvise MADV_HUGEPAGE): the first
// touch of such memory then costs one page fault per 2 MB instead of one
// per 4 KB. On a virtual machine whose host backs guest memory lazily, a
// 4 KB fault can cost 20 µs, more than reading the log line the memory
// holds; a column of a log's requests is written once, front to back, so
// it loses nothing to larger pages.
package hugemem

import "unsafe"

// minBytes is the smallest allocation worth advising: it must span at
// least one whole 2 MB page.
const minBytes = 4 << 20

// Make returns make([]T, n, c), its memory advised for huge pages when it
// is large.
func Make[T any](n, c int) []T {
	s := make([]T, n, c)
	var zero T
	if size := uintptr(c) * unsafe.Sizeof(zero); c > 0 && size >= minBytes {
		advise(unsafe.Pointer(unsafe.SliceData(s)), size)
	}
	return s
}
