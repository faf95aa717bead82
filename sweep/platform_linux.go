package sweep

import "golang.org/x/sys/unix"

// adviseHuge asks for transparent huge pages: fewer faults where the kernel
// has them on request; nothing changes where it has not.
func adviseHuge(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
