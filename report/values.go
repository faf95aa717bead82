package report

// What the report holds of a run: curves, heat maps, parameter values and the selected points.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// AlgoSummary is one algorithm's share of the run.
type AlgoSummary struct {
	Algorithm model.Algorithm
	Points    int64
	Frontier  Frontier
}

// ParamValue is a parameter held fixed, e.g. window_s = 60.
type ParamValue struct {
	Name  string
	Value float64
	Label string // replaces "name value unit" when set, e.g. "nodelay"
}

func (p ParamValue) String() string {
	if p.Label != "" {
		return p.Label
	}
	prm, _ := model.LookupParam(p.Name)
	if n := prm.ParamName(p.Value); prm.Values != nil && n != "" {
		return fmt.Sprintf("%s %s", p.Name, n)
	}
	if prm.Unit == "" {
		return fmt.Sprintf("%s %g", p.Name, p.Value)
	}
	return fmt.Sprintf("%s %g %s", p.Name, p.Value, shortUnit(prm.Unit))
}

// slug is a file-name part, e.g. "delay0", "nodelay" or "counts_all".
func (p ParamValue) slug() string {
	if p.Label != "" {
		return strings.ReplaceAll(p.Label, " ", "_")
	}
	if prm, _ := model.LookupParam(p.Name); prm.Values != nil && prm.ParamName(p.Value) != "" {
		return p.Name + "_" + prm.ParamName(p.Value) // an enumerated value by its name: counts_all
	}
	return fmt.Sprintf("%s%g", p.Name, p.Value)
}

// fixedValue is entry e's value v of parameter name, held fixed on a plot,
// named as the algorithm names it against every swept value of the others
// (nginx's delay at or above every swept burst is labelled "nodelay").
func fixedValue(e *sweep.Entry, name string, v float64) ParamValue {
	pv := ParamValue{Name: name, Value: v}
	if d := e.Algorithm.Describe(); d != nil && d.ValueName != nil {
		most := func(other string) float64 {
			m := 0.0
			for _, ax := range e.Axes {
				if ax.Param == other {
					m = slices.Max(ax.Values)
				}
			}
			return m
		}
		if n := d.ValueName(name, v, most); n != "" {
			pv.Label = n
		}
	}
	return pv
}

func shortUnit(u string) string {
	switch u {
	case "requests":
		return "req"
	}
	return u
}

// acc pools the outcomes of the points that fall into one curve slot or one
// heat-map cell.
type acc struct {
	falseCut, offLegit, missed, offAbusive int64
	n                                      int64
}

func (a *acc) add(p *Point) {
	a.falseCut += p.FalseCut
	a.offLegit += p.OfferedLegit
	a.missed += p.Missed
	a.offAbusive += p.OfferedAbusive
	a.n++
}

func (a *acc) xy() (x, y float64, ok bool) {
	return pct(a.falseCut, a.offLegit), pct(a.missed, a.offAbusive), a.n > 0
}

// Curve is one algorithm with all parameters but one held fixed: the swept
// parameter traces a line on the trade-off plot.
type Curve struct {
	Algorithm model.Algorithm
	Param     string       // the parameter swept along the curve
	Fixed     []ParamValue // the others
	Total     int          // values of Param in the spec
	Values    []float64    // values of Param kept (thinned evenly when Total is large)
	acc       []acc
}

// CurvePoint is one point of a curve.
type CurvePoint struct {
	Value float64 // the swept parameter's value
	X, Y  float64 // legit cut %, missed %
}

// Points returns the curve's points that the run contains, in swept order.
func (c *Curve) Points() []CurvePoint {
	var out []CurvePoint
	for i := range c.acc {
		if x, y, ok := c.acc[i].xy(); ok {
			out = append(out, CurvePoint{c.Values[i], x, y})
		}
	}
	return out
}

// Label names the curve, e.g. "sliding window, window_s 60 s".
func (c *Curve) Label() string {
	s := algoLabel(c.Algorithm)
	for _, f := range c.Fixed {
		s += ", " + f.String()
	}
	return s
}

func algoLabel(a model.Algorithm) string { return a.Title() }

// Heat is one sweep entry's grid of two swept parameters, each cell pooling
// the points binned into it.
type Heat struct {
	Algorithm      model.Algorithm
	XParam, YParam string
	XValues        []float64 // the spec's values of XParam (binned into NX bins)
	YValues        []float64
	NX, NY         int
	Fixed          []ParamValue // further parameters held fixed
	cells          []acc        // cells[y*NX+x]
}

// Cell returns the pooled legit cut % and missed % of bin (x, y).
func (h *Heat) Cell(x, y int) (legitCut, missed float64, ok bool) {
	return h.cells[y*h.NX+x].xy()
}

// binRange returns the range of values in bin b of n bins over vals.
func binRange(vals []float64, n, b int) (lo, hi float64) {
	first := (b*len(vals) + n - 1) / n
	last := ((b+1)*len(vals)+n-1)/n - 1
	return vals[first], vals[last]
}

func binOf(idx, total, n int) int { return idx * n / total }

// Selected is a point shown with per-client bars and a timeline.
type Selected struct {
	Point
	Why     string       // e.g. "lesson: fixed window 60 s", "frontier knee"
	Slug    string       // file-name stem
	Clients []ClientStat // in scenario order; nil when the clients file is missing
}

// slug is a file-name stem for a policy, e.g. "sliding_window-limit600-window_s60".
func slug(p model.Policy) string {
	if p.Stack != nil {
		s := p.Algorithm.String() + "-" + p.Stack.RejectedCounts.String()
		for _, c := range p.Stack.Components {
			s += "-" + slug(c)
			if c.Key != model.KeyClient {
				s += "-" + c.Key.String()
			}
		}
		return s
	}
	s := p.Algorithm.String()
	for _, n := range p.Algorithm.Params() {
		s += "-" + ParamValue{Name: n, Value: p.Get(n)}.slug()
	}
	return s
}
