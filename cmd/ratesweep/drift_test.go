package main

import (
	"fmt"
	"strings"
	"testing"
)

// export --run says on stderr what exporting the nearest point costs, in
// points of legitimate requests cut and abuse missed, and --max-drift turns
// a drift beyond it into exit 1 (the configuration is still written).
func TestExportDrift(t *testing.T) {
	dir := tinyRun(t, "drift")
	asked := "sliding_window window_s=10 limit=50" // nginx exports the run's nearest token bucket
	code, stdout, stderr := runCLI(t, "export", "--to", "nginx", "--run", dir, asked)
	if code != 0 || stdout == "" || !strings.Contains(stderr, asked+" is exported as ") {
		t.Fatalf("exit %d, stderr %q: want 0 and the drift on stderr", code, stderr)
	}
	var dc, dm float64
	line := stderr[strings.Index(stderr, " is exported as "):]
	if _, err := fmt.Sscanf(line[strings.Index(line, ": ")+2:], "%f points of legitimate requests cut, %f points of abuse missed", &dc, &dm); err != nil {
		t.Fatalf("drift line %q: %v", line, err)
	}
	if dc == 0 && dm == 0 {
		t.Fatalf("no drift (%q): the case does not test --max-drift", line)
	}
	if code, stdout, stderr := runCLI(t, "export", "--to", "nginx", "--run", dir, "--max-drift", "0", asked); code != 1 || stdout == "" || !strings.Contains(stderr, "beyond --max-drift 0") {
		t.Errorf("--max-drift 0: exit %d, stderr %q: want 1, the configuration written", code, stderr)
	}
	if code, _, stderr := runCLI(t, "export", "--to", "nginx", "--run", dir, "--max-drift", "100", asked); code != 0 {
		t.Errorf("--max-drift 100: exit %d, stderr %q: want 0", code, stderr)
	}
	if code, _, _ := runCLI(t, "export", "--to", "nginx", "--max-drift", "1", asked); code != 2 {
		t.Errorf("--max-drift without --run: exit %d, want 2", code)
	}
	// A policy the target expresses exactly: no drift line.
	if code, _, stderr := runCLI(t, "export", "--to", "nginx", "--run", dir, "--max-drift", "0", "token_bucket rate=5 capacity=100"); code != 0 || strings.Contains(stderr, "is exported as") {
		t.Errorf("exact export: exit %d, stderr %q", code, stderr)
	}
}
