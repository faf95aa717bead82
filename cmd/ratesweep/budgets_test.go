package main

import (
	"strings"
	"testing"
)

// allOfGrid is a spec of one all_of entry of four components, each with
// two axes of 100 values: 2 × 10^16 points.
const allOfGrid = `name: big
scenario:
  name: s
  duration_s: 60
  clients:
    - {name: a, class: legit, segments: [[0, 60, 1]]}
sweep:
  - rejected_counts: [all, none]
    all_of:
      - {algorithm: sliding_window, window_s: {from: 1, to: 100, count: 100}, limit: {from: 1, to: 100, count: 100}}
      - {algorithm: sliding_window, window_s: {from: 1, to: 100, count: 100}, limit: {from: 1, to: 100, count: 100}}
      - {algorithm: sliding_window, window_s: {from: 1, to: 100, count: 100}, limit: {from: 1, to: 100, count: 100}}
      - {algorithm: sliding_window, window_s: {from: 1, to: 100, count: 100}, limit: {from: 1, to: 100, count: 100}}
`

// An all_of grid of 2 × 10^16 points is counted before anything is
// allocated: run and run --dry-run exit 2 at once naming --max-points
// (they passed 6 GB listing its parts), and raising --max-points past
// what any run takes does not let it through.
func TestAdversarialAllOfGridCounted(t *testing.T) {
	spec := writeFile(t, t.TempDir(), "big.yaml", allOfGrid)
	out := t.TempDir()
	for _, args := range [][]string{
		{"run", spec, "--dry-run"},
		{"run", spec, "--out", out},
		{"run", spec, "--dry-run", "--shard", "0/2"},
		{"run", spec, "--dry-run", "--max-points", "100000000000000000"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "20000000000000000 points rows") || !strings.Contains(stderr, "--max-points") || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming --max-points", args, code, stderr)
		}
	}
}
