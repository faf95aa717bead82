package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

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
