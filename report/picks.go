package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/choice"
	"github.com/ratesweep/ratesweep/model"
)

// pickTie is what the choice rule (choice.Keys) needs of a point beyond
// its metrics: its optional parameters off their default and its grid
// edges (EdgesOfRange).
type pickTie struct {
	optional int
	edges    int
}

// keys are p's keys in the choice rule, with the legitimate cut as the
// objective: among points with equal cut and missed, the report shows the
// one the rule prefers (the least delay, the simpler, the one inside its
// swept ranges, the earlier).
func (p *Point) keys() choice.Keys {
	return choice.Keys{Objective: p.X(), Other: p.Y(), MeanDelayS: p.MeanDelayS, P99DelayS: p.P99DelayS,
		Optional: p.tie.optional, Edges: p.tie.edges, PointID: p.ID}
}

// shaping reports whether algorithm a can delay the requests it admits
// (nginx below nodelay): its delay is then shown wherever it appears.
func shaping(a model.Algorithm) bool {
	d := a.Describe()
	return d != nil && d.Shapes != nil
}

// delayCell is the delay a setting adds to the requests it admits, "mean /
// p99", e.g. "176 s / 331 s"; "none" when it adds none, "" for an algorithm
// that never delays.
func delayCell(p *Point) string {
	if !shaping(p.Policy.Algorithm) {
		return ""
	}
	if p.MeanDelayS == 0 && p.P99DelayS == 0 {
		return "none"
	}
	return seconds(p.MeanDelayS) + " / " + seconds(p.P99DelayS)
}

// seconds prints a duration in seconds to 3 significant digits.
func seconds(s float64) string { return sigDigits(s, 3) + " s" }

// sigDigits prints v with about n significant digits: whole numbers as
// they are, others rounded to n significant digits but never fewer than
// one decimal ("5.34", "0.123", "133.7"), trailing zeros dropped.
func sigDigits(v float64, n int) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	dec := 1
	if a := math.Abs(v); a > 0 {
		dec = max(1, n-1-int(math.Floor(math.Log10(a))))
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// paramValue prints a parameter's value for people: to 3 significant digits
// (a rate swept on a log scale is "5.34", not "5.33669923121").
func paramValue(v float64) string { return sigDigits(v, 3) }

// paramText is value v of parameter name as a table shows it: the name the
// registry gives an enumerated parameter's value (counts all), else the
// number (paramValue).
func paramText(name string, v float64) string {
	if prm, ok := model.LookupParam(name); ok {
		if n := prm.ParamName(v); prm.Values != nil && n != "" {
			return n
		}
	}
	return paramValue(v)
}

// delayNote is what a pick adds about delay: "" when its algorithm never
// delays.
func delayNote(p *Point) string {
	switch c := delayCell(p); c {
	case "":
		return ""
	case "none":
		return "; it adds no delay"
	default:
		return fmt.Sprintf("; it delays the requests it admits by %s on average (p99 %s)", seconds(p.MeanDelayS), seconds(p.P99DelayS))
	}
}
