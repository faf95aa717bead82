package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/model"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// algoOrder is an algorithm's position among the algorithms the spec
// sweeps (legend order).
func (r *Run) algoOrder(a model.Algorithm) int {
	var seen []model.Algorithm
	for _, e := range r.Spec.Entries {
		if !slices.Contains(seen, e.Algorithm) {
			seen = append(seen, e.Algorithm)
		}
	}
	return max(0, slices.Index(seen, a))
}

// headline names the run and scenario for figure titles.
func (r *Run) headline() string {
	if r.Spec.Scenario == nil {
		return fmt.Sprintf("run %q, log %q", r.Spec.Name, r.Spec.WorkloadName())
	}
	return fmt.Sprintf("run %q, scenario %q", r.Spec.Name, r.Spec.Scenario.Name)
}

// curveStyle is the line and glyph of the k-th curve of an algorithm.
func curveStyle(col color.Color, k int) (draw.LineStyle, draw.GlyphStyle) {
	ls := draw.LineStyle{Color: col, Width: vg.Points(1.6), Dashes: dashes[k%len(dashes)]}
	gs := draw.GlyphStyle{Color: col, Radius: vg.Points(3.2), Shape: glyphs[k%len(glyphs)]}
	return ls, gs
}

// labelIndices picks the curve points to label with their swept value: those
// nearest to round values (1, 2, 5 × 10^k when the values span a factor of 20
// or more, else multiples of a round step), about five to eight per curve.
func labelIndices(pts []CurvePoint) []int {
	if len(pts) <= 6 {
		out := make([]int, len(pts))
		for i := range out {
			out[i] = i
		}
		return out
	}
	lo, hi := pts[0].Value, pts[len(pts)-1].Value
	if lo > hi {
		lo, hi = hi, lo
	}
	targets := roundValues(lo, hi, lo > 0 && hi/lo >= 20, 5)
	var out []int
	for _, v := range targets {
		best := 0
		for i, p := range pts {
			if math.Abs(p.Value-v) < math.Abs(pts[best].Value-v) {
				best = i
			}
		}
		out = append(out, best)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TradeoffFigure draws legit cut % against missed %: one curve per algorithm
// and value of its secondary parameter, labelled with the swept value, the
// Pareto frontier over every point on top, and the lesson's reference points.
func (r *Run) TradeoffFigure() *Figure {
	var curves []*Curve
	for _, c := range r.Curves {
		if lesson(c.Algorithm) {
			curves = append(curves, c)
		}
	}
	if len(curves) == 0 || len(curves) == len(r.Curves) {
		return r.tradeoffFigure("tradeoff", r.Curves, "Raising a limit trades false cuts for missed abuse", "")
	}
	return r.tradeoffFigure("tradeoff", curves, "Raising a limit trades false cuts for missed abuse: the lesson's three shapes",
		"Only the lesson's three window shapes are drawn here (the figure tradeoff-all has every algorithm); the frontier still covers every point. ")
}

// TradeoffAllFigure draws one curve per algorithm, for runs with more
// algorithms than the lesson's three (nil otherwise): the curve through the
// lesson's setting of the second parameter (60 s windows, 10 requests/s)
// where the run has it, else the algorithm's first curve.
func (r *Run) TradeoffAllFigure() *Figure {
	var curves []*Curve
	seen := map[model.Algorithm]int{}
	for _, c := range r.Curves {
		i, ok := seen[c.Algorithm]
		switch {
		case !ok:
			seen[c.Algorithm] = len(curves)
			curves = append(curves, c)
		case lessonSetting(c) && !lessonSetting(curves[i]):
			curves[i] = c
		}
	}
	for a := range seen {
		if lesson(a) {
			delete(seen, a)
		}
	}
	if len(seen) == 0 {
		return nil
	}
	return r.tradeoffFigure("tradeoff-all", curves, "Every algorithm, one curve each: false cuts vs missed abuse",
		"Every algorithm of the run, one curve each (the one through a 60 s window or 10 requests/s where the run has it), each in its own colour. ")
}

// lessonSetting reports whether a curve's fixed parameter is the lesson's
// (a 60 s window or 10 requests/s).
func lessonSetting(c *Curve) bool {
	for _, f := range c.Fixed {
		if (f.Name == "window_s" && f.Value == 60) || (f.Name == "rate" && f.Value == 10) {
			return true
		}
	}
	return false
}

// pointTitle is a point's tooltip: algorithm, parameters and its three numbers.
func pointTitle(p *Point) string {
	return fmt.Sprintf("%s %s — caught %s, missed %s (%.1f%%), false cut %s (%.1f%%)",
		p.Policy.Algorithm, paramsCell(p.Policy), groupDigits(p.Caught), groupDigits(p.Missed), p.Y(),
		groupDigits(p.FalseCut), p.X())
}

// tradeoffFigure draws curves, the frontier over every point (coloured by
// the algorithm each stretch comes from) and the lesson's reference
// settings, under a title, with the legend below the plot; note opens the
// caption.
func (r *Run) tradeoffFigure(name string, curves []*Curve, title, note string) *Figure {
	headline := r.headline()
	f := &Figure{Name: name, W: 11 * vg.Inch, Title: title + " (" + headline + ")"}
	// Curves grouped by algorithm in the spec's order (an algorithm swept in
	// several entries, like fixed_window's phase_s, stays in its group).
	curves = slices.Clone(curves)
	slices.SortStableFunc(curves, func(a, b *Curve) int { return r.algoOrder(a.Algorithm) - r.algoOrder(b.Algorithm) })

	p := plot.New()
	p.Title.Text = title + "\n" + headline
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "legitimate requests cut (% of all legitimate requests)   → worse"
	p.Y.Label.Text = "abusive requests missed (% of all abusive requests)   → worse"
	p.X.Tick.Marker, p.Y.Tick.Marker = pctTicks{}, pctTicks{}
	p.Add(plotter.NewGrid())
	hover := &hoverLayer{f: f}

	xmax, ymax := 0.0, 0.0
	track := func(x, y float64) {
		xmax, ymax = max(xmax, x), max(ymax, y)
	}
	var groups []legendGroup
	nth := map[model.Algorithm]int{}
	var swept []string
	var placed []vg.Point // label anchors so far, in fractions of the axes
	xr, yr := r.curveRange(curves)
	free := func(x, y float64) bool {
		q := vg.Point{X: vg.Length(x / xr), Y: vg.Length(y / yr)}
		for _, o := range placed {
			if math.Abs(float64(o.X-q.X)) < 0.045 && math.Abs(float64(o.Y-q.Y)) < 0.03 {
				return false
			}
		}
		placed = append(placed, q)
		return true
	}
	// The frontier first, under the curves, so that no marker hides under it.
	fg := r.addFrontier(p, hover, xr, yr)
	oneEach := name == "tradeoff-all"
	for _, c := range curves {
		pts := c.Points()
		if len(pts) == 0 {
			continue
		}
		k := nth[c.Algorithm]
		nth[c.Algorithm]++
		if k == 0 || groups[len(groups)-1].head != algoLabel(c.Algorithm) {
			g := legendGroup{head: algoLabel(c.Algorithm)}
			if len(pts) > 1 {
				g.sub = fmt.Sprintf("along each curve: %s %s–%s", c.Param, fmtNum(pts[0].Value), fmtNum(pts[len(pts)-1].Value))
			}
			groups = append(groups, g)
		} else if g := &groups[len(groups)-1]; len(pts) > 1 && !strings.Contains(g.sub, c.Param) {
			g.sub += fmt.Sprintf("; %s %s–%s", c.Param, fmtNum(pts[0].Value), fmtNum(pts[len(pts)-1].Value))
		}
		ls, gs := curveStyle(algoColor(c.Algorithm), k)
		if oneEach {
			gs.Shape = draw.CircleGlyph{} // filled: every algorithm's marker shows its colour
		}
		xys := make(plotter.XYs, len(pts))
		for i, q := range pts {
			xys[i] = plotter.XY{X: q.X, Y: q.Y}
			track(q.X, q.Y)
		}
		var thumbs []plot.Thumbnailer
		if len(pts) > 1 {
			l, _ := plotter.NewLine(xys)
			l.LineStyle = ls
			p.Add(l)
			thumbs = append(thumbs, l)
		}
		var mxys plotter.XYs
		var lbls []string
		for _, j := range labelIndices(pts) {
			if free(xys[j].X, xys[j].Y) {
				mxys = append(mxys, xys[j])
				lbls = append(lbls, fmtNum(pts[j].Value))
				hover.add(xys[j].X, xys[j].Y, hoverMark{Algorithm: c.Algorithm.String(), Kind: "curve",
					Title: fmt.Sprintf("%s, %s %s: %.1f%% of legitimate requests cut, %.1f%% of abusive missed",
						c.Label(), c.Param, fmtNum(pts[j].Value), pts[j].X, pts[j].Y)})
			}
		}
		if len(mxys) == 0 { // keep one marker so the curve matches its legend entry
			mxys, lbls = xys[len(xys)/2:len(xys)/2+1], []string{""}
		}
		s, _ := plotter.NewScatter(mxys)
		s.GlyphStyle = gs
		p.Add(s)
		thumbs = append(thumbs, s)
		if len(pts) > 1 {
			lb, _ := plotter.NewLabels(plotter.XYLabels{XYs: mxys, Labels: lbls})
			for i := range lb.TextStyle {
				lb.TextStyle[i].Font.Size = vg.Points(7.5)
				lb.TextStyle[i].Color = gs.Color
			}
			lb.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(2)}
			p.Add(lb)
		}
		label := c.Label()
		if i := strings.Index(label, ", "); i >= 0 {
			label = label[i+2:]
		} else {
			label = "(no second parameter)"
		}
		if len(pts) > 1 && !slices.Contains(swept, c.Param) {
			swept = append(swept, c.Param)
		}
		g := &groups[len(groups)-1]
		g.entries = append(g.entries, legendEntry{label, thumbs})
	}

	for _, q := range r.Frontier.Points() {
		track(q.X(), q.Y())
	}
	for _, ref := range r.Refs {
		track(ref.X(), ref.Y())
	}
	rg := r.addRefs(p, hover)
	pg := r.addPicks(p, hover)
	p.Add(hover)
	groups = append(groups, fg)
	if len(rg.entries) > 0 {
		groups = append(groups, rg)
	}
	if len(pg.entries) > 0 {
		groups = append(groups, pg)
	}

	// Linear axes from 0 % so that settings with no false cut (0 %) sit on
	// the y axis instead of being dropped by a log scale.
	p.X.Min, p.X.Max = 0, math.Max(1, xmax*1.04)
	p.Y.Min, p.Y.Max = 0, math.Max(1, math.Min(100, ymax)*1.02)

	margin := vg.Points(10)
	cols, legH := legendLayout(groups, f.W-2*margin)
	plotH := 5.6 * vg.Inch
	f.H = plotH + legH + vg.Points(16)

	rings := "" // only when the run holds a lesson setting
	if len(rg.entries) > 0 {
		rings = "Rings mark the lesson's three reference settings (600 requests per 60 s fixed and sliding window, " +
			"token bucket 10/s with capacity 900) when the run contains them. "
	}
	f.Caption = note + "Each curve is one algorithm with its second parameter fixed (" + curveSummary(r, curves) +
		"); moving along a curve changes the swept parameter (" + strings.Join(swept, ", ") + "), whose value is printed at the markers. " +
		"The thick staircase is the Pareto frontier over all " + groupDigits(r.Points) +
		" settings in the run: no setting is both to the left of and below it; each stretch has the colour of the algorithm it comes from, " +
		"also when that algorithm has no curve here. " + rings +
		"Both axes are linear and start at 0 %, so settings that cut no legitimate " +
		"request lie on the y axis; lower left is better. In the page, hovering a marker or a frontier corner names the setting."
	if len(pg.entries) > 0 {
		f.Caption += " Squares ringed in black mark the best settings (section \"Best settings\"); the legend and their tooltips name the targets that pick them."
	}
	f.draw = func(c draw.Canvas) {
		top := c.Max.Y
		pc := c
		pc.Min.Y = top - plotH
		p.Draw(draw.Crop(pc, margin, -margin, 0, -vg.Points(4)))
		lc := c
		lc.Max.Y = top - plotH - vg.Points(10)
		drawLegend(draw.Crop(lc, margin+vg.Points(30), -margin, 0, 0), cols)
	}
	return f
}

// lessonName is the lesson's name for a reference policy, e.g. "fixed window 600/60 s".
func lessonName(p model.Policy) string {
	if d := p.Algorithm.Describe(); d != nil && d.Lesson {
		switch d.Family {
		case model.WindowFamily:
			return fmt.Sprintf("%s %d/%d s", algoLabel(p.Algorithm), p.Limit, p.WindowS)
		case model.BucketFamily:
			return fmt.Sprintf("%s %g/s, capacity %d", algoLabel(p.Algorithm), p.Rate, p.Capacity)
		}
	}
	return p.String()
}

// lesson reports whether a is one of the lesson's three algorithms.
func lesson(a model.Algorithm) bool {
	d := a.Describe()
	return d != nil && d.Lesson
}

// plotWidthPt is about the width of the trade-off plot's data area, points.
const plotWidthPt = 690

// labelWidth is a frontier name's width (8 pt type, with its offset) as a
// fraction of the plot's width.
func labelWidth(s string) float64 {
	return (textStyle(vg.Points(8)).Width(s).Points() + 8) / plotWidthPt
}

// nameAnchor is where a stretch's name ends (right-aligned, below): the
// first corner of seg at least w to the right of its start, so that the
// name lies under the stretch itself; the stretch's end when it is shorter.
func nameAnchor(seg plotter.XYs, w float64) plotter.XY {
	for _, q := range seg[1:] {
		if q.X-seg[0].X >= w {
			return q
		}
	}
	return seg[len(seg)-1]
}
