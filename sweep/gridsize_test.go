package sweep

import (
	"errors"
	"strings"
	"testing"
)

// allOfSpec is a spec of one all_of entry of n components, each with two
// axes of 100 values: 100^(2n) × 2 points.
func allOfSpec(n int) string {
	var b strings.Builder
	b.WriteString("name: big\nscenario:\n  name: s\n  duration_s: 60\n  clients:\n    - {name: a, class: legit, segments: [[0, 60, 1]]}\nsweep:\n  - rejected_counts: [all, none]\n    all_of:\n")
	for range n {
		b.WriteString("      - {algorithm: sliding_window, window_s: {from: 1, to: 100, count: 100}, limit: {from: 1, to: 100, count: 100}}\n")
	}
	return b.String()
}

// The grid is counted in integers before anything is sized from it: four
// all_of components of 100 × 100 (2 × 10^16 points) are refused naming
// --max-points, by Run too, without indexing the grid or listing its parts
// (which took 6 GB); a grid past int64 (five components, built here past
// the parser, which refuses it) too.
func TestGridSizeBeforeAllocation(t *testing.T) {
	for _, c := range []struct {
		components int
		points     int64
		ok         bool
		msg        string
	}{
		{1, 20_000, true, ""},
		{4, 20_000_000_000_000_000, true, "20000000000000000 points rows, more than --max-points 50000000"},
		{5, 0, false, "more than 2^63 points rows, more than --max-points 50000000: sweep[0] (all_of) has more than 2^63 points (2 × 100 × 100 × 100 × 100 × 100 × 100 × 100 × 100 × 100 × 100 values on its axes)"},
	} {
		spec, err := ParseSpec([]byte(allOfSpec(min(c.components, 4))), nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.components == 5 {
			e := &spec.Entries[0]
			e.Axes = append(e.Axes, e.Axes[1:3]...)
		}
		points, rows, ok := GridSize(spec)
		if ok != c.ok || (ok && (points != c.points || rows != c.points)) {
			t.Errorf("%d components: GridSize %d, %d, %v; want %d", c.components, points, rows, ok, c.points)
		}
		err = CheckGridSize(spec, 0)
		if c.msg == "" {
			if err != nil {
				t.Errorf("%d components: %v", c.components, err)
			}
			continue
		}
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%d components: %v, want an input error with %q", c.components, err, c.msg)
		}
		_, err = Run(t.Context(), spec, Options{OutDir: t.TempDir(), MaxPoints: 1 << 62, NoOutput: true})
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "points rows") {
			t.Errorf("%d components: Run: %v", c.components, err)
		}
	}
	// Replicates multiply past int64 too.
	spec, _ := ParseSpec([]byte(allOfSpec(4)), nil)
	spec.Replicates = 1 << 50
	if _, _, ok := GridSize(spec); ok {
		t.Errorf("2 × 10^16 points × 2^50 replicates fit in int64")
	}
}
