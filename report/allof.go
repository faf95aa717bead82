package report

import (
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// stackPolicy is the policy of all_of point id: its components are in no
// parameter column, so it comes from the grid of the spec in the run's
// metadata (the same grid the sweep wrote the point's label from).
func stackPolicy(spec *sweep.Spec, id int64) model.Policy {
	return sweep.NewGrid(spec).Policy(id)
}
