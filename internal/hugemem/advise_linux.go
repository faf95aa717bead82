package hugemem

import (
	"syscall"
	"unsafe"
)

// enabled: Linux advises transparent huge pages.
const enabled = true

// advise marks [p, p+size), whole huge pages, MADV_HUGEPAGE (errors are
// ignored: the advice is only a hint).
func advise(p unsafe.Pointer, size uintptr) {
	const madvHugepage = 14
	syscall.Syscall(syscall.SYS_MADVISE, uintptr(p), size, madvHugepage)
}
