//go:build unix

package runfs

import "syscall"

// openNonblock makes an open of a named pipe return at once instead of
// waiting for a writer; reads of a regular file ignore it.
const openNonblock = syscall.O_NONBLOCK
