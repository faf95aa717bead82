package recommend

import (
	"fmt"
	"strconv"

	"github.com/ratesweep/ratesweep/model"
)

// The constraint on the cost of legitimate requests cut (docs/costs.md):
// in runs whose requests carry costs, the cost units of legitimate
// requests cut (false_cut_cost), a count or a percentage of the
// legitimate cost offered. In a run without costs every request costs one
// unit: the bound holds the requests cut.

// costUnit is the unit of a check on cost units.
const costUnit = "cost units"

// costColumns are the points columns the cost constraint reads.
var costColumns = []string{"false_cut_cost", "offered_legit_cost"}

// costAcc gathers one point's cost totals over its replicates.
type costAcc struct{ fc, pct []float64 }

func (a *costAcc) add(r *model.Metrics) {
	a.fc = append(a.fc, float64(r.Cost.FalseCut))
	a.pct = append(a.pct, pct(float64(r.Cost.FalseCut), float64(r.Cost.OfferedLegit)))
}

func (a *costAcc) reset() { a.fc, a.pct = a.fc[:0], a.pct[:0] }

// fill sets m's cost totals when the run has them.
func (a *costAcc) fill(m *Measure) {
	if len(a.fc) == 0 {
		return
	}
	fc, p := interval(a.fc), pctInterval(a.pct)
	m.FalseCutCost, m.LegitCutCostPct = &fc, &p
}

// costCheck appends the check of the bound on the legitimate cost cut.
func (o *Options) costCheck(out []Check, m *Measure, named bool) []Check {
	b := o.MaxFalseCutCost
	if b == nil {
		return out
	}
	cnt, pctV := m.FalseCut, m.LegitCutPct // every request costs one unit
	if m.FalseCutCost != nil {
		cnt, pctV = *m.FalseCutCost, *m.LegitCutCostPct
	}
	v, unit := cnt, costUnit
	if b.Pct {
		v, unit = pctV, "pp"
	}
	c := Check{Value: v.Mean, Unit: unit, Bound: b.Value, Margin: b.Value - v.Mean}
	c.Crosses = c.Margin >= 0 && v.Hi > b.Value
	if named {
		bound := b.String()
		if !b.Pct {
			bound = strconv.FormatFloat(b.Value, 'f', -1, 64) + " " + costUnit
		}
		c.Constraint = fmt.Sprintf("false cut cost <= %s", bound)
	}
	return append(out, c)
}
