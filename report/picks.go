package report

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// pickTie orders settings with exactly the same legitimate cut and missed
// abuse, so that the one a table or pick shows never depends on grid
// order: the least delay added to admitted requests first (an nginx
// setting that queues against its nodelay twin), then the simpler
// setting (fewer optional parameters off their default), then the one
// inside its swept ranges (fewer edges: nothing to extend), then point_id.
type pickTie struct {
	optional int // optional parameters off their default
	edges    int // EdgesOfRange
}

// compareTies orders two points with equal x and y: negative when a is to
// be shown rather than b.
func compareTies(a, b *Point) int {
	if c := cmp.Compare(a.MeanDelayS, b.MeanDelayS); c != 0 {
		return c
	}
	if c := cmp.Compare(a.P99DelayS, b.P99DelayS); c != 0 {
		return c
	}
	if c := cmp.Compare(a.tie.optional, b.tie.optional); c != 0 {
		return c
	}
	return cmp.Compare(a.tie.edges, b.tie.edges)
}

// optionalSet counts p's optional parameters that differ from their default
// (the parameters paramsCell prints beyond the required ones).
func optionalSet(p model.Policy) int {
	n := 0
	for _, name := range p.Algorithm.OptionalParams() {
		prm, _ := model.LookupParam(name)
		if v := p.Get(name); v != prm.Default && v != 0 {
			n++
		}
	}
	return n
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
