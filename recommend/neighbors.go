package recommend

// A choice's neighbours on the grid: the cliffs beside it and the grid's edges.

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/ratesweep/ratesweep/model"
)

// Neighbor is the choice with one parameter moved one grid step.
type Neighbor struct {
	Label       string  `json:"policy"`
	Param       string  `json:"param"`
	Value       float64 `json:"value"`
	LegitCutPct float64 `json:"legit_cut_pct"` // worst run
	MissedPct   float64 `json:"missed_pct"`    // worst run
	DLegitCut   float64 `json:"d_legit_cut_pp"`
	DMissed     float64 `json:"d_missed_pp"`
	Feasible    bool    `json:"feasible"`
	Cliff       bool    `json:"cliff"`
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// neighbors fills in the choice's neighbours: for each parameter, the
// policies equal but for that parameter at the next lower and higher value
// among the policies (of every run); and the grid-edge warnings.
func neighbors(ch *Choice, labels []string, pols []model.Policy, runs []*Run, o *Options) {
	p, err := model.ParseLabel(ch.Label)
	if err != nil {
		return
	}
	worst := func(l string) (lc, mi float64, ok bool) {
		ok = true
		for _, r := range runs {
			m := r.Measures[l]
			lc, mi = max(lc, m.LegitCutPct.Mean), max(mi, m.MissedPct.Mean)
			ok = ok && feasible(o.checks(m))
		}
		return
	}
	lc0, mi0, _ := worst(ch.Label)
	for _, prm := range model.Params {
		if !p.Algorithm.Takes(prm.Name) || prm.Values != nil {
			continue
		}
		// The values of prm among policies equal to p in every other parameter.
		var vals []float64
		at := map[float64]string{}
		for k, l := range labels {
			q := pols[k]
			if q.Algorithm != p.Algorithm {
				continue
			}
			v := q.Value(prm.Name)
			q.Set(prm.Name, p.Value(prm.Name))
			if q.Canonical() != p.Canonical() {
				continue
			}
			vals = append(vals, v)
			at[v] = l
		}
		if len(vals) < 2 {
			continue
		}
		slices.Sort(vals)
		i := slices.Index(vals, p.Value(prm.Name))
		if i < 0 {
			continue
		}
		if i == 0 && (vals[0] > prm.Min || prm.MinOpen) { // nothing lies below a parameter's least value
			ch.Edges = append(ch.Edges, edgeHint(prm, vals[0], "smallest", "below"))
		}
		if i == len(vals)-1 {
			ch.Edges = append(ch.Edges, edgeHint(prm, vals[i], "largest", "above"))
		}
		for _, j := range []int{i - 1, i + 1} {
			if j < 0 || j >= len(vals) {
				continue
			}
			l := at[vals[j]]
			lc, mi, ok := worst(l)
			n := Neighbor{Label: l, Param: prm.Name, Value: vals[j], LegitCutPct: lc, MissedPct: mi,
				DLegitCut: lc - lc0, DMissed: mi - mi0, Feasible: ok}
			n.Cliff = math.Abs(n.DLegitCut) > o.CliffPP || math.Abs(n.DMissed) > o.CliffPP
			ch.Cliff = ch.Cliff || n.Cliff
			ch.Neighbors = append(ch.Neighbors, n)
		}
	}
}

// edgeHint warns that the choice has parameter prm at v, the end (the
// "smallest" or "largest") of the values swept. A setting's range should be
// extended past it; a property of the system (a backend's service time) or
// a deployment choice (nodes) is not the limit's setting to turn, so the
// warning says what the choice assumes.
func edgeHint(prm model.Param, v float64, end, side string) string {
	if prm.Role == model.System {
		return fmt.Sprintf("%s=%s is the %s %s swept, and %s is a property of the system, not a setting: the choice holds where the system's %s is %s; measure it", prm.Name, num(v), end, prm.Name, prm.Name, prm.Name, num(v))
	}
	if prm.Role == model.Deployment {
		return fmt.Sprintf("%s=%s is the %s %s swept, and %s is how the limiter is deployed, not a setting: the choice holds with %s=%s", prm.Name, num(v), end, prm.Name, prm.Name, prm.Name, num(v))
	}
	return fmt.Sprintf("%s=%s is the %s %s swept: extend %s %s it", prm.Name, num(v), end, prm.Name, prm.Name, side)
}

// why says in words when the policy cuts a client.
func why(label string) string {
	p, err := model.ParseLabel(label)
	if err != nil {
		return ""
	}
	if d := p.Algorithm.Describe(); d != nil && d.Why != nil {
		return d.Why(p)
	}
	return ""
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
