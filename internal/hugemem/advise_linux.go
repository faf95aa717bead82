package hugemem

import (
	"syscall"
	"unsafe"
)

// enabled: Linux advises transparent huge pages.
const enabled = true

// advise marks [p, p+size), whole huge pages of memory the caller holds,
// MADV_HUGEPAGE (errors are ignored: the advice is only a hint).
func advise(p, size uintptr) {
	const madvHugepage = 14
	syscall.Syscall(syscall.SYS_MADVISE, p, size, madvHugepage)
}

// mapAligned maps length bytes (a multiple of page) of anonymous memory
// starting on a huge page boundary, advised for huge pages; nil when the
// kernel refuses.
func mapAligned(length uintptr) unsafe.Pointer {
	// Map a huge page more, then unmap what lies outside the boundaries.
	b, err := syscall.Mmap(-1, 0, int(length+page), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil
	}
	base := unsafe.Pointer(unsafe.SliceData(b))
	p := uintptr(base)
	start := (p + page - 1) &^ (page - 1)
	if start > p {
		unmap(p, start-p)
	}
	if end := p + length + page; end > start+length {
		unmap(start+length, end-start-length)
	}
	advise(start, length)
	return unsafe.Add(base, start-p)
}

// unmap unmaps [p, p+length).
func unmap(p, length uintptr) {
	syscall.Syscall(syscall.SYS_MUNMAP, p, length, 0)
}
