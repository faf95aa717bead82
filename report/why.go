package report

import (
	"fmt"
	"strings"

	"github.com/ratesweep/ratesweep/explain"
	"github.com/ratesweep/ratesweep/model"
)

// Why the picks cut whom they cut: for a scenario run, each legitimate
// client's cut requests by cause (package explain: shared key, window
// shape, burst, sustained rate), found by re-simulating that client's
// requests of replicate 0.

// whyCut returns, for each policy of ps that explain supports, each
// legitimate client's cut requests by cause in replicate 0, e.g. "80 burst,
// 40 window shape", by client name; nil for a run explain cannot rebuild
// (a log replay) and no entry for a policy it refuses.
func (r *Run) whyCut(ps []model.Policy) map[string]map[string]string {
	if r.Spec == nil || r.Spec.Scenario == nil || len(ps) == 0 {
		return nil
	}
	w, err := model.NewWorkload(r.Spec.Scenario)
	if err != nil {
		return nil
	}
	out := map[string]map[string]string{}
	for _, p := range ps {
		label := p.Canonical()
		if _, done := out[label]; done || explain.Supported(r.Spec.Scenario, p) != nil {
			continue
		}
		res, err := explain.Explain(w, p, r.Spec.Seed) // replicate 0, as the sweep realised it
		if err != nil {
			continue
		}
		byClient := map[string]string{}
		for _, c := range res.Clients {
			if c.Class != model.Legit || c.Affected == 0 {
				continue
			}
			byClient[c.Name] = causeList(c.ByCause)
		}
		out[label] = byClient
	}
	return out
}

// causeList writes requests by cause, largest first, ties in the causes'
// order: "80 burst, 40 window shape".
func causeList(by [explain.NumCauses]int64) string {
	var parts []string
	done := [explain.NumCauses]bool{}
	for range explain.NumCauses {
		best := -1
		for c := range explain.NumCauses {
			if !done[c] && by[c] > 0 && (best < 0 || by[c] > by[best]) {
				best = int(c)
			}
		}
		if best < 0 {
			break
		}
		done[best] = true
		parts = append(parts, fmt.Sprintf("%s %s", fmtNum(float64(by[best])), strings.ReplaceAll(explain.Cause(best).String(), "_", " ")))
	}
	return strings.Join(parts, ", ")
}
