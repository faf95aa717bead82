package sweep

import (
	"fmt"
	"math/bits"
	"strings"
)

// GridSize counts the spec's grid in integers, before anything is sized
// from it: its points (Σ over entries of the product of their axes'
// lengths, an all_of entry's component axes included) and points rows
// (points × replicates). ok is false when either passes int64; the grid
// is then far beyond any --max-points.
func GridSize(s *Spec) (points, rows int64, ok bool) {
	for i := range s.Entries {
		n, ok := entrySize(&s.Entries[i])
		if !ok {
			return 0, 0, false
		}
		if points > 1<<63-1-n {
			return 0, 0, false
		}
		points += n
	}
	rows, ok = mul64(points, int64(max(s.Replicates, 1)))
	return points, rows, ok
}

// entrySize is the entry's points (the product of its axes' lengths);
// ok is false past int64.
func entrySize(e *Entry) (int64, bool) {
	n := int64(1)
	for _, a := range e.Axes {
		var ok bool
		if n, ok = mul64(n, int64(len(a.Values))); !ok {
			return 0, false
		}
	}
	return n, true
}

// mul64 is a × b for a, b >= 0; ok is false past int64.
func mul64(a, b int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > 1<<63-1 {
		return 0, false
	}
	return int64(lo), true
}

// MaxGridRows is the most points rows any run accepts, whatever
// --max-points says: the list of a grid's parts (64Ki points each at
// most) stays within 16Mi entries, and a run that large takes days of
// CPU.
const MaxGridRows = 1 << 40

// CheckGridSize refuses a spec whose points rows pass maxRows (0:
// DefaultMaxPoints), counted by GridSize before the grid is indexed or
// split into parts, naming --max-points (and, past int64, the entry that
// makes most of them).
func CheckGridSize(s *Spec, maxRows int64) error {
	if maxRows <= 0 {
		maxRows = DefaultMaxPoints
	}
	points, rows, ok := GridSize(s)
	if ok && rows <= maxRows && rows <= MaxGridRows {
		return nil
	}
	big, bigN, bigOK := 0, int64(0), true
	for i := range s.Entries {
		n, ok := entrySize(&s.Entries[i])
		if !ok || n > bigN {
			big, bigN, bigOK = i, n, ok
		}
		if !ok {
			break
		}
	}
	var dims []string
	for _, a := range s.Entries[big].Axes {
		dims = append(dims, fmt.Sprint(len(a.Values)))
	}
	size := fmt.Sprintf("%d points", bigN)
	if !bigOK {
		size = "more than 2^63 points"
	}
	what := fmt.Sprintf("sweep[%d] (%s) has %s (%s values on its axes)", big, s.Entries[big].Algorithm, size, strings.Join(dims, " × "))
	if !ok {
		return inputErrorf("the grid has more than 2^63 points rows, more than --max-points %d: %s; shrink the grid", maxRows, what)
	}
	if rows > MaxGridRows && rows <= maxRows {
		return inputErrorf("the grid has %d points × %d replicates = %d points rows, more than %d, the most a run takes whatever --max-points says: %s; shrink the grid or split it into several specs",
			points, s.Replicates, rows, int64(MaxGridRows), what)
	}
	return inputErrorf("the grid has %d points × %d replicates = %d points rows, more than --max-points %d; raise --max-points to run it",
		points, s.Replicates, rows, maxRows)
}
