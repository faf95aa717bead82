package report

import (
	"fmt"

	"github.com/ratesweep/ratesweep/model"
)

// Runs whose requests carry costs (docs/costs.md) have the judged numbers
// in cost units too; the report reads them and shows them beside the
// requests in the trade-off and pick tables.

// costColumns are the points columns the report reads from such runs.
var costColumns = []string{"offered_legit_cost", "offered_abusive_cost", "caught_cost", "missed_cost", "false_cut_cost"}

// readCost sets m's cost totals from the row's cost columns c (in
// costColumns' order).
func readCost(m *model.Metrics, c []int64) {
	m.Cost = model.CostMetrics{Measured: true, OfferedLegit: c[0], OfferedAbusive: c[1], Caught: c[2], Missed: c[3], FalseCut: c[4]}
}

// addCost pools one more replicate's cost totals into p (summed, as the
// requests are).
func (p *Point) addCost(m *model.Metrics) {
	if !m.Cost.Measured {
		return
	}
	c := &p.Cost
	c.Measured = true
	c.OfferedLegit += m.Cost.OfferedLegit
	c.OfferedAbusive += m.Cost.OfferedAbusive
	c.Caught += m.Cost.Caught
	c.Missed += m.Cost.Missed
	c.FalseCut += m.Cost.FalseCut
}

// costed reports whether the run's requests carry costs.
func (r *Run) costed() bool {
	pts := r.Frontier.Points()
	return len(pts) > 0 && pts[0].Cost.Measured
}

// costHeaders are a table's columns for runs whose requests carry costs.
var costHeaders = []string{"caught cost", "missed cost", "false cut cost", "legit cut cost %"}

// addCostColumns adds the cost columns to t.
func (t *Table) addCostColumns() {
	for len(t.Right) < len(t.Headers) {
		t.Right = append(t.Right, false)
	}
	for range costHeaders {
		t.Right = append(t.Right, true)
	}
	t.Headers = append(t.Headers, costHeaders...)
}

// appendCostCells adds q's cells under costHeaders to the last row ("–"
// for each when q is nil).
func (t *Table) appendCostCells(q *Point) {
	if q == nil {
		for range costHeaders {
			t.appendCell("–")
		}
		return
	}
	c := &q.Cost
	t.appendCell(fmt.Sprint(c.Caught))
	t.appendCell(fmt.Sprint(c.Missed))
	t.appendCell(fmt.Sprint(c.FalseCut))
	t.appendCell(pct2(pct(c.FalseCut, c.OfferedLegit)))
}

// costNote explains the cost columns.
const costNote = "The requests carry costs: the cost columns are the same numbers in cost units (docs/costs.md)."

// costPick is the pick sentence's clause on cost, "" when the run's
// requests carry no costs.
func costPick(p *Point) string {
	c := &p.Cost
	if !c.Measured {
		return ""
	}
	return fmt.Sprintf(" (in cost units: %.2f%% of the legitimate cost cut, %.2f%% of the abusive cost missed)", pct(c.FalseCut, c.OfferedLegit), pct(c.Missed, c.OfferedAbusive))
}
