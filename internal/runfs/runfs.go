// Package runfs guards what ratesweep writes into a run directory: an
// advisory lock keeps a second writer out while the first is live, and
// files are written so that a symbolic link never redirects them out of the
// directory.
package runfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockName is the lock file a writer holds in a run directory. It exists
// only while a writer is live (or after one was killed: the lock itself
// dies with its process).
const LockName = ".ratesweep.lock"

// ErrLocked is returned when another process holds a run directory's lock.
var ErrLocked = errors.New("in use by another ratesweep process")

// LockedError says which directory is in use, and by whom when known.
type LockedError struct {
	Dir string
	PID int // 0 when unknown (shared holders do not record themselves)
}

func (e *LockedError) Error() string {
	who := "another ratesweep process"
	if e.PID > 0 {
		who += fmt.Sprintf(" (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s is in use by %s: a run, merge, report or check --update writes to it; wait until it finishes, or choose another directory", e.Dir, who)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// Lock is a held lock on a run directory. The zero value and nil hold
// nothing; Release is then a no-op.
type Lock struct {
	f      *os.File
	path   string
	shared bool
}

// Acquire takes dir's lock without waiting: exclusive for a writer that
// owns the directory, shared for writers that may share it (the shards of
// one run). A held lock the other way round is a *LockedError. dir must
// exist; a lock file that is a symbolic link is refused. A directory this
// process may not write is not locked (the Lock holds nothing): a writer of
// it fails at its first write anyway.
func Acquire(dir string, shared bool) (*Lock, error) {
	path := filepath.Join(dir, LockName)
	for range 3 {
		f, err := openLock(path)
		if errors.Is(err, os.ErrPermission) || isReadOnly(err) {
			return &Lock{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cannot lock %s: %w", dir, err)
		}
		if err := lockFile(f, shared); err != nil {
			pid := 0
			if b := make([]byte, 16); true {
				n, _ := f.ReadAt(b, 0)
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b[:n])))
			}
			f.Close()
			if errors.Is(err, ErrLocked) {
				return nil, &LockedError{Dir: dir, PID: pid}
			}
			return nil, fmt.Errorf("cannot lock %s: %w", dir, err)
		}
		// An exclusive holder unlinks the file before it unlocks: a lock
		// taken on such an unlinked file protects nothing, so try again.
		if !samePath(f, path) {
			f.Close()
			continue
		}
		if !shared {
			f.Truncate(0)
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return &Lock{f: f, path: path, shared: shared}, nil
	}
	return nil, &LockedError{Dir: dir}
}

// Release gives the lock up. The last holder removes the lock file.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	if !l.shared || lockFile(l.f, false) == nil {
		if samePath(l.f, l.path) {
			os.Remove(l.path)
		}
	}
	err := l.f.Close() // closing drops the lock
	l.f = nil
	return err
}

func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}
