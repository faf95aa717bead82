package sweep

import "testing"

// The default budget is 3/4 of RAM or less (the memory-limit test in
// cmd/ratesweep checks that it follows ulimit -v).
func TestDefaultMaxMemory(t *testing.T) {
	ram := memTotal()
	if ram == 0 {
		t.Skip("no /proc/meminfo")
	}
	if m := DefaultMaxMemory(); m <= 0 || m > ram/4*3 {
		t.Fatalf("DefaultMaxMemory = %d, RAM %d", m, ram)
	}
}
