package hugemem

import (
	"syscall"
	"unsafe"
)

const hugePage = 2 << 20

// advise marks the whole 2 MB pages in [p, p+size) MADV_HUGEPAGE (errors
// are ignored: the advice is only a hint).
func advise(p unsafe.Pointer, size uintptr) {
	start := (uintptr(p) + hugePage - 1) &^ (hugePage - 1)
	end := (uintptr(p) + size) &^ (hugePage - 1)
	if end <= start {
		return
	}
	const madvHugepage = 14
	syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvHugepage)
}
