package report

import (
	"github.com/ratesweep/ratesweep/internal/choice"
	"github.com/ratesweep/ratesweep/sweep"
)

// Edge is a swept parameter at an end of its range (choice.Edge).
type Edge = choice.Edge

// EdgesOfRange returns the parameters of grid point id of spec that sit on
// an end of their swept range (choice.EdgesOfRange).
func EdgesOfRange(spec *sweep.Spec, id int64) []Edge { return choice.EdgesOfRange(spec, id) }
