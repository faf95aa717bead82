package choice

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
// that sit on an end of their swept range, in the entry's axis order, when
// going beyond could change the outcome. Axes with a single value are not
// ranges and never count, nor do enumerated parameters, phase_s (a phase
// is cyclic), a value at the least the parameter can take (burst 0, delay
// 0: nothing lies beyond), and a value the algorithm names (nginx's delay
// at or beyond burst is nodelay: a larger one is the same). A window as long
// as the scenario is flagged too: longer windows cannot differ. Only a
// setting (the parameter's Role in the registry) is advised to extend; a
// property of the system (service_s, lag_s) is flagged with what to
// measure, a deployment choice (nodes) with what the pick assumes.
func EdgesOfRange(spec *sweep.Spec, id int64) []Edge {
	e, _, idx, ok := spec.Locate(id)
	if !ok {
		return nil
	}
	get := func(name string) float64 { // the point's value of a parameter
		for i, ax := range e.Axes {
			if ax.Param == name {
				return ax.Values[idx[i]]
			}
		}
		return 0
	}
	d := e.Algorithm.Describe()
	var out []Edge
	for i, ax := range e.Axes {
		if len(ax.Values) < 2 {
			continue
		}
		v := ax.Values[idx[i]]
		lo, hi := slices.Min(ax.Values), slices.Max(ax.Values)
		prm, _ := model.LookupParam(ax.Param)
		named := d != nil && d.ValueName != nil && d.ValueName(ax.Param, v, get) != ""
		switch {
		case len(prm.Values) > 0, ax.Param == "phase_s": // enumerated or cyclic: no direction to extend
		case named: // nodelay: any larger delay is the same setting
		case v == lo && v <= prm.Min: // the least possible: nothing beyond
		case (v == lo || v == hi) && prm.Role != model.Setting: // not the operator's to turn
			end := "largest"
			if v == lo {
				end = "smallest"
			}
			hint := fmt.Sprintf("%s swept; %s is a property of the system, not a setting: the pick holds where it is %g %s; measure it", end, ax.Param, v, prm.Unit)
			if prm.Role == model.Deployment {
				hint = fmt.Sprintf("%s swept; %s is how the limiter is deployed, not a setting: the pick holds with %g %s", end, ax.Param, v, prm.Unit)
			}
			out = append(out, Edge{ax.Param, v, v == lo, hint})
		case v == lo:
			out = append(out, Edge{ax.Param, v, true, "smallest swept: try smaller " + ax.Param})
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
