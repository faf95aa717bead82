package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/ratesweep/ratesweep/model"
)

// maxBarClients bounds the bars of a selected point's per-client figure:
// a run of many clients (or a log's many keys) shows the ones cut most.
const maxBarClients = 40

// barClients returns the clients a per-client figure draws, in their own
// order: all of cs, or the maxBarClients with the most requests cut (ties
// in cs's order) and a sentence on the others, summed by class.
func barClients(cs []ClientStat) ([]ClientStat, string) {
	if len(cs) <= maxBarClients {
		return cs, ""
	}
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(cs[b].Cut, cs[a].Cut) })
	shown := idx[:maxBarClients]
	slices.Sort(shown)
	var sum [2]struct {
		n          int
		offered, c float64
	}
	for _, i := range idx[maxBarClients:] {
		k := 0
		if cs[i].Class != model.Legit {
			k = 1
		}
		sum[k].n++
		sum[k].offered += cs[i].Offered
		sum[k].c += cs[i].Cut
	}
	out := make([]ClientStat, len(shown))
	for j, i := range shown {
		out[j] = cs[i]
	}
	note := fmt.Sprintf(" Only the %d clients with the most requests cut are shown (of %d);", maxBarClients, len(cs))
	for k, class := range []string{"legitimate", "abusive"} {
		if s := sum[k]; s.n > 0 {
			note += fmt.Sprintf(" the other %d %s clients together offered %s requests, %s cut;", s.n, class,
				fmtNum(math.Round(s.offered)), fmtNum(math.Round(s.c)))
		}
	}
	return out, note[:len(note)-1] + "."
}

// topCutRows keeps, of the lesson's per-client table t (columns: client,
// class, requests, one cut per window shape, stage), the maxBarClients
// rows with the most requests cut under any shape, in their order, and
// says so under the table; a table of fewer rows is returned as it is.
func topCutRows(t *Table) *Table {
	if len(t.Rows) <= maxBarClients {
		return t
	}
	most := make([]float64, len(t.Rows))
	for i, row := range t.Rows {
		for _, cell := range row[3 : len(row)-1] {
			v, _ := strconv.ParseFloat(cell, 64)
			most[i] = max(most[i], v)
		}
	}
	idx := make([]int, len(t.Rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(most[b], most[a]) })
	keep := idx[:maxBarClients]
	slices.Sort(keep)
	out := *t
	out.Rows = make([][]string, len(keep))
	for j, i := range keep {
		out.Rows[j] = t.Rows[i]
	}
	out.Note = fmt.Sprintf("Only the %d clients with the most requests cut under any shape are listed (of %d). %s", maxBarClients, len(t.Rows), t.Note)
	return &out
}
