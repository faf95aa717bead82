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

// algoIndex is an algorithm's colour index: its position among the
// algorithms the spec sweeps.
func (r *Run) algoIndex(a model.Algorithm) int {
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
	var targets []float64
	if lo > 0 && hi/lo >= 20 {
		for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
			for _, m := range []float64{1, 2, 5} {
				if v := m * math.Pow(10, e); v >= lo && v <= hi {
					targets = append(targets, v)
				}
			}
		}
	} else {
		step := niceStep(hi-lo, 5)
		for v := math.Ceil(lo/step) * step; v <= hi; v += step {
			targets = append(targets, v)
		}
	}
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
	lesson := func(a model.Algorithm) bool {
		return a == model.FixedWindow || a == model.SlidingWindow || a == model.TokenBucket
	}
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
	for _, a := range []model.Algorithm{model.FixedWindow, model.SlidingWindow, model.TokenBucket} {
		delete(seen, a)
	}
	if len(seen) == 0 {
		return nil
	}
	return r.tradeoffFigure("tradeoff-all", curves, "Every algorithm, one curve each: false cuts vs missed abuse",
		"Every algorithm of the run, one curve each (the one through a 60 s window or 10 requests/s where the run has it); colours repeat with another dash. ")
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

// tradeoffFigure draws curves, the frontier over every point and the
// lesson's reference settings, under a title; note opens the caption.
func (r *Run) tradeoffFigure(name string, curves []*Curve, title, note string) *Figure {
	headline := r.headline()
	f := &Figure{Name: name, W: 11 * vg.Inch, H: 6.8 * vg.Inch,
		Title: title + " (" + headline + ")"}
	p := plot.New()
	p.Title.Text = title + "\n" + headline
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "legitimate requests cut (% of all legitimate requests)   → worse"
	p.Y.Label.Text = "abusive requests missed (% of all abusive requests)   → worse"
	p.X.Tick.Marker, p.Y.Tick.Marker = pctTicks{}, pctTicks{}
	p.Add(plotter.NewGrid())
	leg := plot.NewLegend()
	leg.Left, leg.Top = true, true
	leg.TextStyle.Font.Size = vg.Points(9)
	leg.ThumbnailWidth = vg.Points(28)

	// Curves, grouped by algorithm: one colour per algorithm, one dash and
	// glyph per fixed secondary value.
	xmax, ymax := 0.0, 0.0
	track := func(x, y float64) {
		xmax, ymax = max(xmax, x), max(ymax, y)
	}
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
	for _, c := range curves {
		pts := c.Points()
		if len(pts) == 0 {
			continue
		}
		k := nth[c.Algorithm]
		nth[c.Algorithm]++
		first := k == 0
		if name == "tradeoff-all" {
			k = r.algoIndex(c.Algorithm) / paletteSize // same colour: another dash
		}
		if first {
			head := algoLabel(c.Algorithm)
			if len(pts) > 1 {
				head += fmt.Sprintf(" — along each curve: %s %s–%s", c.Param, fmtNum(pts[0].Value), fmtNum(pts[len(pts)-1].Value))
			}
			leg.Add(head)
		}
		ls, gs := curveStyle(algoColor(r.algoIndex(c.Algorithm)), k)
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
		label := "   " + c.Label()
		if i := strings.Index(label, ", "); i >= 0 {
			label = "   " + label[i+2:]
		}
		if len(pts) > 1 && !slices.Contains(swept, c.Param) {
			swept = append(swept, c.Param)
		}
		leg.Add(label, thumbs...)
	}

	// The frontier: a staircase (from each frontier point, the best missed %
	// holds until the next point's legit cut %).
	fp := r.Frontier.Points()
	fxys := make(plotter.XYs, len(fp))
	for i, q := range fp {
		fxys[i] = plotter.XY{X: q.X(), Y: q.Y()}
		track(q.X(), q.Y())
	}
	if len(fp) > 0 {
		fl, _ := plotter.NewLine(fxys)
		fl.StepStyle = plotter.PostStep
		fl.LineStyle = draw.LineStyle{Color: color.RGBA{0, 0, 0, 150}, Width: vg.Points(3.5)}
		p.Add(fl)
		leg.Add(fmt.Sprintf("Pareto frontier over all %s points (%d settings)", groupDigits(r.Points), len(fp)), fl)
	}

	// The lesson's reference points.
	var refs []string
	var refThumbs [][]plot.Thumbnailer
	for _, ref := range r.Refs {
		col := algoColor(r.algoIndex(ref.Policy.Algorithm))
		xy := plotter.XYs{{X: ref.X(), Y: ref.Y()}}
		track(ref.X(), ref.Y())
		ring, _ := plotter.NewScatter(xy)
		ring.GlyphStyle = draw.GlyphStyle{Color: colBlack, Radius: vg.Points(7.5), Shape: draw.RingGlyph{}}
		dot, _ := plotter.NewScatter(xy)
		dot.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(5.5), Shape: draw.CircleGlyph{}}
		p.Add(ring, dot)
		// Smaller copies for the legend row.
		lring, ldot := *ring, *dot
		lring.GlyphStyle.Radius, ldot.GlyphStyle.Radius = vg.Points(4.5), vg.Points(3.2)
		refs = append(refs, fmt.Sprintf("   %s: %.1f%% cut, %.1f%% missed", lessonName(ref.Policy), ref.X(), ref.Y()))
		refThumbs = append(refThumbs, []plot.Thumbnailer{&lring, &ldot})
	}

	if len(refs) > 0 {
		leg.Add("the lesson's reference settings")
		for i := range refs {
			leg.Add(refs[i], refThumbs[i]...)
		}
	}

	// Linear axes from 0 % so that settings with no false cut (0 %) sit on
	// the y axis instead of being dropped by a log scale.
	p.X.Min, p.X.Max = 0, math.Max(1, xmax*1.04)
	p.Y.Min, p.Y.Max = 0, math.Max(1, math.Min(100, ymax)*1.02)

	leg.Add("Numbers at markers: the swept " + strings.Join(swept, " / "))
	leg.Add("Curves show a few values of each algorithm's")
	leg.Add("second parameter; the frontier uses every point.")
	leg.Add("Both axes linear from 0 %: lower left is better.")

	f.Caption = note + "Each curve is one algorithm with its second parameter fixed (" + curveSummary(r, curves) +
		"); moving along a curve changes the swept parameter, whose value is printed at the markers. " +
		"The thick black staircase is the Pareto frontier over all " + groupDigits(r.Points) +
		" settings in the run: no setting is both to the left of and below it. Rings mark the lesson's three " +
		"reference settings (600 requests per 60 s fixed and sliding window, token bucket 10/s with capacity 900) " +
		"when the run contains them. Both axes are linear and start at 0 %, so settings that cut no legitimate " +
		"request lie on the y axis; lower left is better."
	f.draw = func(c draw.Canvas) {
		legW := vg.Length(0.34)
		p.Draw(sub(c, 0, 1-float64(legW), 0, 1))
		lc := sub(c, 1-float64(legW)+0.01, 1, 0, 0.93)
		leg.Draw(lc)
	}
	return f
}

// curveRange is the extent of the plotted data (for spacing labels).
func (r *Run) curveRange(curves []*Curve) (x, y float64) {
	x, y = 1, 1
	for _, c := range curves {
		for _, q := range c.Points() {
			x, y = max(x, q.X), max(y, q.Y)
		}
	}
	for _, q := range r.Frontier.Points() {
		x = max(x, q.X())
	}
	return x, y
}

// curveSummary says which secondary values the curves show, per algorithm.
func curveSummary(r *Run, curves []*Curve) string {
	type key struct {
		a model.Algorithm
		p string
	}
	vals := map[key][]string{}
	total := map[key]int{}
	var order []key
	for ei := range r.Spec.Entries {
		e := &r.Spec.Entries[ei]
		for _, c := range curves {
			if c.Algorithm != e.Algorithm || len(c.Fixed) == 0 {
				continue
			}
			k := key{c.Algorithm, c.Fixed[0].Name}
			v := fmtNum(c.Fixed[0].Value)
			if !slices.Contains(vals[k], v) {
				if _, ok := vals[k]; !ok {
					order = append(order, k)
				}
				vals[k] = append(vals[k], v)
			}
			for _, ax := range e.Axes {
				if ax.Param == k.p {
					total[k] = max(total[k], len(ax.Values))
				}
			}
		}
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%s: %s ∈ {%s}, %d of %d values", algoLabel(k.a), k.p,
			strings.Join(vals[k], ", "), len(vals[k]), max(total[k], len(vals[k]))))
	}
	if len(parts) == 0 {
		return "no second parameter"
	}
	return strings.Join(parts, "; ")
}

// lessonName is the lesson's name for a reference policy, e.g. "fixed window 600/60 s".
func lessonName(p model.Policy) string {
	switch p.Algorithm {
	case model.FixedWindow, model.SlidingWindow:
		return fmt.Sprintf("%s %d/%d s", algoLabel(p.Algorithm), p.Limit, p.WindowS)
	case model.TokenBucket:
		return fmt.Sprintf("token bucket %g/s, capacity %d", p.Rate, p.Capacity)
	}
	return p.String()
}
