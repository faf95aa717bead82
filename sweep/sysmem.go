package sweep

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// DefaultMaxMemory is the memory budget of a run when --max-memory is not
// given: three quarters of the least of the machine's RAM, the cgroup's
// memory limit and the address-space limit (ulimit -v), bytes; 0 when none
// of them can be read.
func DefaultMaxMemory() int64 {
	limit := int64(0)
	lower := func(n int64) {
		if n > 0 && (limit == 0 || n < limit) {
			limit = n
		}
	}
	lower(memTotal())
	lower(cgroupLimit())
	lower(addressSpaceLimit())
	return limit / 4 * 3
}

// memTotal is MemTotal of /proc/meminfo, bytes (0 if unknown).
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// cgroupLimit is the least memory limit of this process's cgroup and its
// ancestors (v2 memory.max, v1 memory.limit_in_bytes; in a container the
// mount's root is the container's cgroup), bytes (0 if none or unknown).
func cgroupLimit() int64 {
	var files []string
	add := func(dir, name string) {
		for d := dir; ; d = filepath.Dir(d) {
			files = append(files, filepath.Join(d, name))
			if d == "/sys/fs/cgroup" || d == "/sys/fs/cgroup/memory" || d == "/" || d == "." {
				return
			}
		}
	}
	add("/sys/fs/cgroup", "memory.max")
	add("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.SplitN(l, ":", 3)
			switch {
			case len(f) < 3:
			case f[0] == "0" && f[1] == "":
				add(filepath.Join("/sys/fs/cgroup", f[2]), "memory.max")
			case slices.Contains(strings.Split(f[1], ","), "memory"):
				add(filepath.Join("/sys/fs/cgroup/memory", f[2]), "memory.limit_in_bytes")
			}
		}
	}
	limit := int64(0)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && n > 0 && n < 1<<60 && (limit == 0 || n < limit) {
			limit = n
		}
	}
	return limit
}
