package sweep

import (
	"slices"

	"github.com/ratesweep/ratesweep/model"
)

// checkStateSlots refuses a spec whose worst point would need more limiter
// slots (keys × nodes with local state) than model.MaxStateSlots.
func checkStateSlots(spec *Spec, wl *model.Workload) error {
	for i, e := range spec.Entries {
		worst := model.Policy{Algorithm: e.Algorithm}
		keys := []float64{0}
		for _, ax := range e.Axes {
			switch ax.Param {
			case "nodes":
				worst.Nodes = int(slices.Max(ax.Values))
			case "state":
				worst.State = model.State(slices.Min(ax.Values))
			case "key":
				keys = ax.Values
			}
		}
		for _, k := range keys {
			worst.Key = model.Key(k)
			if n := wl.StateSlots(worst); n > model.MaxStateSlots {
				return inputErrorf("sweep[%d]: %s needs %d limiter slots (keys × nodes with local state); at most %d", i, worst, n, model.MaxStateSlots)
			}
		}
	}
	return nil
}
