package hugemem

import "syscall"

// enabled: Linux advises transparent huge pages.
const enabled = true

// advise marks [p, p+size), whole huge pages of memory the caller holds,
// MADV_HUGEPAGE (errors are ignored: the advice is only a hint).
func advise(p, size uintptr) {
	const madvHugepage = 14
	syscall.Syscall(syscall.SYS_MADVISE, p, size, madvHugepage)
}
