//go:build unix

package sweep

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// mapAnon maps n zeroed bytes of anonymous memory outside the Go heap.
func mapAnon(n int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, err
	}
	if n >= hugePage {
		adviseHuge(b)
	}
	return b, nil
}

// addressSpaceLimit is the address-space limit (ulimit -v), bytes (0 if
// none or unknown).
func addressSpaceLimit() int64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err == nil && rl.Cur < 1<<62 {
		return int64(rl.Cur)
	}
	return 0
}

// umask is the process's file mode creation mask.
func umask() os.FileMode {
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	return os.FileMode(mask)
}

// processCPU is the process's CPU time so far (CLOCK_PROCESS_CPUTIME_ID).
func processCPU() time.Duration { return cpuClock(unix.CLOCK_PROCESS_CPUTIME_ID) }

// threadCPU is the calling thread's CPU time so far; lock the goroutine to
// its thread around a measurement.
func threadCPU() time.Duration { return cpuClock(unix.CLOCK_THREAD_CPUTIME_ID) }

// cpuClock reads a CPU-time clock: the scheduler's exact count, where
// getrusage's user and system times are sampled at clock ticks and go
// wrong over intervals of milliseconds.
func cpuClock(id int32) time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(id, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
