//go:build !unix

package runfs

// openNonblock is 0 where opens do not block on named pipes' writers.
const openNonblock = 0
