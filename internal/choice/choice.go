// Package choice is the one rule by which `recommend`, the report and
// explore.html choose the best setting among candidates: the objective
// (legitimate requests cut, or abusive requests missed), then the other of
// the two, then the less delay added to admitted requests (mean, then p99),
// then the simpler setting (fewer optional parameters off their default),
// then the one inside its swept ranges (fewer grid edges), then the earlier
// point. Values within Eps are equal.
package choice

import (
	"cmp"
	"math"

	"github.com/ratesweep/ratesweep/model"
)

// Eps is the difference below which two metric values are equal: replicate
// means of the same counts may differ in their last bits.
const Eps = 1e-9

// Keys are what orders a candidate.
type Keys struct {
	Objective float64 // the metric minimised, %
	Other     float64 // the other of legitimate cut and missed, %
	// MeanDelayS and P99DelayS are the delay added to admitted requests,
	// s (0 for an algorithm that never delays).
	MeanDelayS, P99DelayS float64
	Optional              int   // optional parameters off their default (Optional)
	Edges                 int   // parameters at an end of their swept range (EdgesOfRange)
	PointID               int64 // the earlier point wins the last tie
	// Structure, when set, fills in Optional and Edges the first time a
	// comparison needs them (they cost a policy's decoding, and most
	// candidates are decided before); it is then cleared.
	Structure func(k *Keys)
}

// Compare orders a against b: negative when a is to be chosen rather
// than b.
func Compare(a, b *Keys) int {
	if c := compareEps(a.Objective, b.Objective); c != 0 {
		return c
	}
	if c := compareEps(a.Other, b.Other); c != 0 {
		return c
	}
	return CompareTies(a, b)
}

// Better reports whether a is to be chosen rather than b.
func Better(a, b *Keys) bool { return Compare(a, b) < 0 }

// CompareTies orders two candidates equal in the objective and the other
// metric: the less delay (mean, then p99), the fewer optional parameters
// set, the fewer grid edges, the earlier point.
func CompareTies(a, b *Keys) int {
	if c := compareEps(a.MeanDelayS, b.MeanDelayS); c != 0 {
		return c
	}
	if c := compareEps(a.P99DelayS, b.P99DelayS); c != 0 {
		return c
	}
	a.settle()
	b.settle()
	if c := cmp.Compare(a.Optional, b.Optional); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Edges, b.Edges); c != 0 {
		return c
	}
	return cmp.Compare(a.PointID, b.PointID)
}

func (k *Keys) settle() {
	if f := k.Structure; f != nil {
		k.Structure = nil
		f(k)
	}
}

func compareEps(a, b float64) int {
	if math.Abs(a-b) <= Eps {
		return 0
	}
	return cmp.Compare(a, b)
}

// Optional counts p's optional parameters that differ from their default.
func Optional(p model.Policy) int {
	n := 0
	for _, name := range p.Algorithm.OptionalParams() {
		prm, _ := model.LookupParam(name)
		if v := p.Get(name); v != prm.Default && v != 0 {
			n++
		}
	}
	return n
}
