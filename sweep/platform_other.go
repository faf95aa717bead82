//go:build !unix

package sweep

import (
	"errors"
	"os"
	"time"
)

// mapAnon fails where there is no mmap: the pool then allocates from the
// Go heap.
func mapAnon(int) ([]byte, error) { return nil, errors.ErrUnsupported }

// addressSpaceLimit is 0: no ulimit -v here.
func addressSpaceLimit() int64 { return 0 }

// umask is 0: files are created with the mode the system gives them.
func umask() os.FileMode { return 0 }

// processCPU is 0 where no CPU-time clock is read (the figures of
// FloorStats are then wall time only).
func processCPU() time.Duration { return 0 }

// threadCPU is 0 where no CPU-time clock is read.
func threadCPU() time.Duration { return 0 }
