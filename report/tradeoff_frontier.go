package report

// The frontier and the lesson's reference settings on the trade-off figures,
// and the curves' summaries.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/model"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// frontierRun is a stretch of consecutive frontier points of one algorithm.
type frontierRun struct {
	alg    model.Algorithm
	lo, hi int // indices into the frontier, inclusive
}

func frontierRuns(fp []FrontierPoint) []frontierRun {
	var runs []frontierRun
	for i, q := range fp {
		if n := len(runs); n > 0 && runs[n-1].alg == q.Policy.Algorithm {
			runs[n-1].hi = i
			continue
		}
		runs = append(runs, frontierRun{q.Policy.Algorithm, i, i})
	}
	return runs
}

// addFrontier draws the frontier on p as a staircase (from each frontier
// point, the best missed % holds until the next point's legit cut %): a dark
// underlay with each stretch in the colour of the algorithm it comes from,
// the long ones named. xr and yr are the axes' extents. It returns the
// frontier's legend group.
func (r *Run) addFrontier(p *plot.Plot, hover *hoverLayer, xr, yr float64) legendGroup {
	fp := r.Frontier.Points()
	fg := legendGroup{head: fmt.Sprintf("Pareto frontier over all %s points (%d settings)", groupDigits(r.Points), len(fp)),
		sub: "each stretch in the colour of its algorithm"}
	if len(fp) == 0 {
		return fg
	}
	fxys := make(plotter.XYs, len(fp))
	for i, q := range fp {
		fxys[i] = plotter.XY{X: q.X(), Y: q.Y()}
		sh := q.Shown()
		hover.add(q.X(), q.Y(), hoverMark{Algorithm: q.Policy.Algorithm.String(), Kind: "frontier",
			Title: "frontier: " + pointTitle(&sh.Point)})
	}
	under, _ := plotter.NewLine(fxys)
	under.StepStyle = plotter.PostStep
	under.LineStyle = draw.LineStyle{Color: colBlack, Width: vg.Points(5.5)}
	p.Add(under)

	type stretch struct {
		alg  model.Algorithm
		seg  plotter.XYs
		span float64 // length in fractions of the axes
	}
	var stretches []stretch
	count := map[model.Algorithm]int{}
	xlo, xhi := map[model.Algorithm]float64{}, map[model.Algorithm]float64{}
	var order []model.Algorithm
	longest := map[model.Algorithm]int{} // index into stretches
	for _, run := range frontierRuns(fp) {
		// The stretch: its points, then the step to the next point's x.
		seg := slices.Clone(fxys[run.lo : run.hi+1])
		if run.hi+1 < len(fxys) {
			seg = append(seg, plotter.XY{X: fxys[run.hi+1].X, Y: fxys[run.hi].Y})
		}
		if len(seg) == 1 {
			seg = append(seg, seg[0])
		}
		l, _ := plotter.NewLine(seg)
		l.StepStyle = plotter.PostStep
		l.LineStyle = draw.LineStyle{Color: algoColor(run.alg), Width: vg.Points(3)}
		p.Add(l)
		stretches = append(stretches, stretch{run.alg, seg, (seg[len(seg)-1].X-seg[0].X)/xr + math.Abs(seg[len(seg)-1].Y-seg[0].Y)/yr})
		k, ok := longest[run.alg]
		if !ok {
			order = append(order, run.alg)
			xlo[run.alg] = fxys[run.lo].X
		}
		xhi[run.alg] = fxys[run.hi].X
		if !ok || stretches[len(stretches)-1].span > stretches[k].span {
			longest[run.alg] = len(stretches) - 1
		}
		count[run.alg] += run.hi - run.lo + 1
	}
	// Named: each algorithm's longest stretch and any other long one, in
	// the empty room below the staircase (it descends to the right), under
	// the stretch itself: near the y axis, below and right of its first
	// corner; elsewhere below and left of the first corner that lies a
	// label's width into the stretch, so that the line above the name is
	// its own stretch, never the one before. A stretch narrower than its
	// name is named in the legend only.
	var left, right plotter.XYLabels
	for i, st := range stretches {
		if st.span < 0.01 || (st.span < 0.08 && longest[st.alg] != i) {
			continue
		}
		if w := labelWidth(algoLabel(st.alg)) * xr; st.seg[len(st.seg)-1].X-st.seg[0].X < w {
			continue // narrower than its name: named in the legend only, never under another stretch
		}
		ls, at := &right, st.seg[0]
		if st.seg[0].X <= 0.07*xr {
			ls = &left
		} else {
			at = nameAnchor(st.seg, labelWidth(algoLabel(st.alg))*xr)
		}
		ls.XYs = append(ls.XYs, at)
		ls.Labels = append(ls.Labels, algoLabel(st.alg))
		// For the page's tests: which stretch the name is meant for.
		hover.add(at.X, at.Y, hoverMark{Algorithm: st.alg.String(), Kind: "frontier-name", Title: algoLabel(st.alg)})
	}
	for _, side := range []struct {
		ls     plotter.XYLabels
		align  text.XAlignment
		offset vg.Point
	}{
		{right, draw.XRight, vg.Point{X: -vg.Points(5), Y: -vg.Points(6)}},
		{left, draw.XLeft, vg.Point{X: vg.Points(5), Y: -vg.Points(18)}},
	} {
		if len(side.ls.XYs) == 0 {
			continue
		}
		lb, _ := plotter.NewLabels(side.ls)
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font.Size = vg.Points(8)
			lb.TextStyle[i].Color = colBlack
			lb.TextStyle[i].YAlign = draw.YTop
			lb.TextStyle[i].XAlign = side.align
		}
		lb.Offset = side.offset
		p.Add(lb)
	}
	for _, a := range order {
		under := &plotter.Line{LineStyle: draw.LineStyle{Color: colBlack, Width: vg.Points(5.5)}}
		over := &plotter.Line{LineStyle: draw.LineStyle{Color: algoColor(a), Width: vg.Points(3)}}
		fg.entries = append(fg.entries, legendEntry{fmt.Sprintf("%s: %d settings, %.1f–%.1f%% cut", algoLabel(a), count[a], xlo[a], xhi[a]),
			[]plot.Thumbnailer{under, over}})
	}
	return fg
}

// addRefs marks the lesson's reference settings on p with rings and
// returns their legend group.
func (r *Run) addRefs(p *plot.Plot, hover *hoverLayer) legendGroup {
	rg := legendGroup{head: "the lesson's reference settings"}
	for _, ref := range r.Refs {
		col := algoColor(ref.Policy.Algorithm)
		xy := plotter.XYs{{X: ref.X(), Y: ref.Y()}}
		ring, _ := plotter.NewScatter(xy)
		ring.GlyphStyle = draw.GlyphStyle{Color: colBlack, Radius: vg.Points(7.5), Shape: draw.RingGlyph{}}
		dot, _ := plotter.NewScatter(xy)
		dot.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(5.5), Shape: draw.CircleGlyph{}}
		p.Add(ring, dot)
		hover.add(ref.X(), ref.Y(), hoverMark{Algorithm: ref.Policy.Algorithm.String(), Kind: "reference",
			Title: "the lesson's " + lessonName(ref.Policy) + ": " + pointTitle(&ref)})
		// Smaller copies for the legend row.
		lring, ldot := *ring, *dot
		lring.GlyphStyle.Radius, ldot.GlyphStyle.Radius = vg.Points(4.5), vg.Points(3.2)
		rg.entries = append(rg.entries, legendEntry{fmt.Sprintf("%s: %.1f%% cut, %.1f%% missed", lessonName(ref.Policy), ref.X(), ref.Y()),
			[]plot.Thumbnailer{&lring, &ldot}})
	}
	return rg
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
