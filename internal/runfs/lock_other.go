//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package runfs

import "os"

func openLock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}

// lockFile locks nothing where no advisory lock is known: writers are then
// not kept apart.
func lockFile(f *os.File, shared bool) error { return nil }

func isReadOnly(err error) bool { return false }
