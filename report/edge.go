package report

import (
	"fmt"
	"slices"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// Edge is a swept parameter whose value at a grid point is the smallest or
// the largest its sweep entry tried: the best setting may lie beyond the
// range, so the sweep should be extended that way.
type Edge struct {
	Param string
	Value float64
	Low   bool   // the smallest value swept (else the largest)
	Hint  string // e.g. "largest swept: try larger window_s"
}

func (e Edge) String() string { return fmt.Sprintf("%s=%g %s", e.Param, e.Value, e.Hint) }

// EdgesOfRange returns the parameters of grid point id (a point_id of spec)
// that sit on an end of their swept range, in the entry's axis order. Axes
// with a single value are not ranges and never count, nor do enumerated
// parameters and phase_s (a phase is cyclic). A window as long as
// the scenario is flagged too: longer windows cannot differ.
func EdgesOfRange(spec *sweep.Spec, id int64) []Edge {
	var first int64
	for ei := range spec.Entries {
		e := &spec.Entries[ei]
		size := e.Size()
		if id < first || id >= first+size {
			first += size
			continue
		}
		// Decode the axis indices (the last axis varies fastest).
		idx := make([]int, len(e.Axes))
		rest := id - first
		for i := len(e.Axes) - 1; i >= 0; i-- {
			n := int64(len(e.Axes[i].Values))
			idx[i] = int(rest % n)
			rest /= n
		}
		var out []Edge
		for i, ax := range e.Axes {
			if len(ax.Values) < 2 {
				continue
			}
			v := ax.Values[idx[i]]
			lo, hi := slices.Min(ax.Values), slices.Max(ax.Values)
			prm, _ := model.LookupParam(ax.Param)
			switch {
			case len(prm.Values) > 0, ax.Param == "phase_s": // enumerated or cyclic: no direction to extend
			case v == lo:
				hint := "smallest swept: try smaller " + ax.Param
				if v <= prm.Min {
					hint = "smallest swept, and the least possible"
				}
				out = append(out, Edge{ax.Param, v, true, hint})
			case v == hi:
				hint := "largest swept: try larger " + ax.Param
				if sc := spec.Scenario; ax.Param == "window_s" && sc != nil && v >= float64(sc.DurationS) {
					hint = fmt.Sprintf("largest swept, and as long as the %d s scenario: one budget for the whole run", sc.DurationS)
				}
				out = append(out, Edge{ax.Param, v, false, hint})
			}
		}
		return out
	}
	return nil
}
