package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"

	"github.com/ratesweep/ratesweep/model"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// heatGrid adapts one metric of a Heat to plotter.GridXYZ in bin coordinates.
type heatGrid struct {
	h      *Heat
	missed bool
}

func (g heatGrid) Dims() (c, r int) { return g.h.NX, g.h.NY }
func (g heatGrid) X(c int) float64  { return float64(c) }
func (g heatGrid) Y(r int) float64  { return float64(r) }
func (g heatGrid) Z(c, r int) float64 {
	x, y, ok := g.h.Cell(c, r)
	switch {
	case !ok:
		return math.NaN()
	case g.missed:
		return y
	}
	return x
}

// viridis is a perceptually uniform colour map whose luminance rises
// monotonically from dark purple to yellow (never white, so it cannot be
// mistaken for the background).
func viridis() palette.ColorMap {
	hex := []uint32{0x440154, 0x482878, 0x3E4A89, 0x31688E, 0x26828E, 0x1F9E89, 0x35B779, 0x6DCD59, 0xB4DE2C, 0xFDE725}
	cs := make([]color.Color, len(hex))
	for i, h := range hex {
		cs[i] = color.RGBA{uint8(h >> 16), uint8(h >> 8), uint8(h), 0xFF}
	}
	cm, err := moreland.NewLuminance(cs)
	if err != nil {
		panic(err) // the control points above are fixed
	}
	return cm
}

// cellHeat draws a grid as filled vector rectangles in bin coordinates (cell
// (c, r) covers [c-0.5, c+0.5] × [r-0.5, r+0.5]), so the PNG and the SVG have
// the same geometry and no renderer can stretch or blur the cells. Runs of
// equal colour along a row are merged into one outline, and the cells of
// one colour are one path.
type cellHeat struct {
	g        plotter.GridXYZ
	cm       palette.ColorMap
	Min, Max float64
	NaN      color.Color
}

func newCellHeat(g plotter.GridXYZ, cm palette.ColorMap) *cellHeat {
	h := &cellHeat{g: g, cm: cm, Min: math.Inf(1), Max: math.Inf(-1), NaN: color.RGBA{0xE0, 0xE0, 0xE0, 0xFF}}
	nc, nr := g.Dims()
	for c := range nc {
		for r := range nr {
			if v := g.Z(c, r); !math.IsNaN(v) {
				h.Min, h.Max = math.Min(h.Min, v), math.Max(h.Max, v)
			}
		}
	}
	if math.IsInf(h.Min, 0) { // no data at all
		h.Min, h.Max = 0, 100
	}
	if h.Max <= h.Min {
		h.Max = h.Min + 1
	}
	cm.SetMin(h.Min)
	cm.SetMax(h.Max)
	return h
}

// color is cell (c, r)'s colour, 8 bits per channel.
func (h *cellHeat) color(c, r int) color.RGBA {
	v := h.g.Z(c, r)
	if !math.IsNaN(v) {
		if cc, err := h.cm.At(math.Min(h.Max, math.Max(h.Min, v))); err == nil {
			return color.RGBAModel.Convert(cc).(color.RGBA)
		}
	}
	return color.RGBAModel.Convert(h.NaN).(color.RGBA)
}

// Plot implements plot.Plotter. It fills one path per colour (a page
// holds thousands of cells, hundreds of colours). Where two cells of
// different colours meet, the one whose colour is drawn first reaches a
// point under the other, so that anti-aliased edges leave no seams: every
// cell shows its own colour over exactly its own box, whatever the order
// of the colours.
func (h *cellHeat) Plot(c draw.Canvas, plt *plot.Plot) {
	nc, nr := h.g.Dims()
	trX, trY := plt.Transforms(&c)
	group := make([]int, nc*nr) // cell (c, r) → its colour's index in cols
	var cols []color.RGBA
	index := map[color.RGBA]int{}
	for r := range nr {
		for ci := range nc {
			col := h.color(ci, r)
			g, ok := index[col]
			if !ok {
				g = len(cols)
				index[col] = g
				cols = append(cols, col)
			}
			group[r*nc+ci] = g
		}
	}
	// later: cell (ci, r) exists and its colour is drawn after colour g.
	later := func(ci, r, g int) bool {
		return ci >= 0 && ci < nc && r >= 0 && r < nr && group[r*nc+ci] > g
	}
	// The reach stays inside the neighbouring cell.
	const overlap = vg.Length(1)
	ovX := min(overlap, vg.Length(math.Abs(float64(trX(1)-trX(0)))))
	ovY := min(overlap, vg.Length(math.Abs(float64(trY(1)-trY(0)))))
	paths := make([]vg.Path, len(cols))
	for r := range nr {
		y0, y1 := trY(float64(r)-0.5), trY(float64(r)+0.5)
		for c0 := 0; c0 < nc; {
			// A run of one colour whose neighbours above, and below, are
			// all drawn later or all not.
			g := group[r*nc+c0]
			up, down := later(c0, r+1, g), later(c0, r-1, g)
			c1 := c0 + 1
			for c1 < nc && group[r*nc+c1] == g && later(c1, r+1, g) == up && later(c1, r-1, g) == down {
				c1++
			}
			left, right := later(c0-1, r, g), later(c1, r, g)
			x0, x1 := trX(float64(c0)-0.5), trX(float64(c1)-0.5)
			X0, X1, Y0, Y1 := x0, x1, y0, y1
			if left {
				X0 -= ovX
			}
			if right {
				X1 += ovX
			}
			if down {
				Y0 -= ovY
			}
			if up {
				Y1 += ovY
			}
			// A corner reaches into the diagonal cell only when that cell
			// is drawn later too; else the outline steps around it.
			nBL := left && down && !later(c0-1, r-1, g)
			nBR := right && down && !later(c1, r-1, g)
			nTR := right && up && !later(c1, r+1, g)
			nTL := left && up && !later(c0-1, r+1, g)
			p := &paths[g]
			pt := func(x, y vg.Length) vg.Point { return vg.Point{X: x, Y: y} }
			if nBL {
				p.Move(pt(x0, Y0))
			} else {
				p.Move(pt(X0, Y0))
			}
			if nBR {
				p.Line(pt(x1, Y0))
				p.Line(pt(x1, y0))
				p.Line(pt(X1, y0))
			} else {
				p.Line(pt(X1, Y0))
			}
			if nTR {
				p.Line(pt(X1, y1))
				p.Line(pt(x1, y1))
				p.Line(pt(x1, Y1))
			} else {
				p.Line(pt(X1, Y1))
			}
			if nTL {
				p.Line(pt(x0, Y1))
				p.Line(pt(x0, y1))
				p.Line(pt(X0, y1))
			} else {
				p.Line(pt(X0, Y1))
			}
			if nBL {
				p.Line(pt(X0, y0))
				p.Line(pt(x0, y0))
			}
			p.Close()
			c0 = c1
		}
	}
	for g, p := range paths {
		c.SetColor(cols[g])
		c.Fill(p)
	}
}

// DataRange implements plot.DataRanger: cells are centred on their index.
func (h *cellHeat) DataRange() (xmin, xmax, ymin, ymax float64) {
	nc, nr := h.g.Dims()
	return -0.5, float64(nc) - 0.5, -0.5, float64(nr) - 0.5
}

// colorBar is a horizontal colour scale drawn as vector rectangles (gonum's
// ColorBar is a raster image, which browsers may not stretch to its box).
type colorBar struct {
	cm       palette.ColorMap
	min, max float64
}

// colorBarSteps is the number of rectangles of a colour bar.
const colorBarSteps = 120

func (b colorBar) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	step := (b.max - b.min) / colorBarSteps
	for i := range colorBarSteps {
		v := b.min + (float64(i)+0.5)*step
		col, err := b.cm.At(math.Min(b.max, math.Max(b.min, v)))
		if err != nil {
			continue
		}
		x1 := trX(b.min + float64(i+1)*step)
		if i < colorBarSteps-1 {
			x1 += 1
		}
		c.SetColor(col)
		c.Fill(vg.Rectangle{Min: vg.Point{X: trX(b.min + float64(i)*step), Y: trY(0)}, Max: vg.Point{X: x1, Y: trY(1)}}.Path())
	}
}

func (b colorBar) DataRange() (xmin, xmax, ymin, ymax float64) { return b.min, b.max, 0, 1 }

// binTicks labels a binned axis. Few values: every one, at its cell. Many:
// round values (1, 2, 5 × 10^k on a geometric axis, multiples of a round
// step on a linear one) placed by interpolating between the neighbouring
// values, linearly or on a log scale, so a geometric sweep reads as a log
// axis.
type binTicks struct {
	vals []float64
	n    int
	// names names the values of an enumerated parameter (model.Param
	// Values): ticks then show the names, not the numbers.
	names []string
}

// label is value v as a tick shows it.
func (t binTicks) label(v float64) string {
	if i := int(v); float64(i) == v && i >= 0 && i < len(t.names) {
		return t.names[i]
	}
	return fmtNum(v)
}

// paramNames are the value names of parameter name when it is enumerated.
func paramNames(name string) []string {
	prm, _ := model.LookupParam(name)
	return prm.Values
}

// maxEveryTick is the most values an axis labels one by one.
const maxEveryTick = 12

// geometric reports whether sorted positive values grow by a roughly constant
// factor over at least a factor of 20 (a log-spaced sweep).
func geometric(vals []float64) bool {
	n := len(vals)
	if n < 3 || vals[0] <= 0 || !slices.IsSorted(vals) || vals[n-1]/vals[0] < 20 {
		return false
	}
	// The middle value is nearer the geometric than the arithmetic mean.
	mid := vals[n/2]
	g := vals[0] * math.Pow(vals[n-1]/vals[0], float64(n/2)/float64(n-1))
	a := vals[0] + (vals[n-1]-vals[0])*float64(n/2)/float64(n-1)
	return math.Abs(math.Log(mid/g)) < math.Abs(math.Log(mid/a))
}

// position is value v's coordinate on a binned axis (bin b is centred on b),
// or false when v is outside the values.
func (t binTicks) position(v float64, geo bool) (float64, bool) {
	vals := t.vals
	n := len(vals)
	i := sort.SearchFloat64s(vals, v) // first >= v
	var idx float64
	switch {
	case i < n && vals[i] == v:
		idx = float64(i)
	case i == 0 || i == n:
		return 0, false
	default:
		lo, hi := vals[i-1], vals[i]
		f := (v - lo) / (hi - lo)
		if geo {
			f = math.Log(v/lo) / math.Log(hi/lo)
		}
		idx = float64(i-1) + f
	}
	return (idx+0.5)*float64(t.n)/float64(n) - 0.5, true
}

func (t binTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	if t.n <= maxEveryTick {
		for b := range t.n {
			lo, hi := binRange(t.vals, t.n, b)
			l := t.label(lo)
			if hi != lo {
				l += "–" + t.label(hi)
			}
			out = append(out, plot.Tick{Value: float64(b), Label: l})
		}
		return out
	}
	if !slices.IsSorted(t.vals) {
		// Unsorted values: label a few bins evenly.
		for _, b := range thin(t.n, 6) {
			lo, _ := binRange(t.vals, t.n, b)
			out = append(out, plot.Tick{Value: float64(b), Label: t.label(lo)})
		}
		return out
	}
	geo := geometric(t.vals)
	for _, v := range roundValues(t.vals[0], t.vals[len(t.vals)-1], geo, 6) {
		if x, ok := t.position(v, geo); ok {
			out = append(out, plot.Tick{Value: x, Label: t.label(v)})
		}
	}
	return out
}

// paramAxisLabel names a parameter with its unit for an axis of a's plots.
func paramAxisLabel(a model.Algorithm, name string) string {
	if d := a.Describe(); d != nil && d.AxisLabels[name] != "" {
		return d.AxisLabels[name]
	}
	if name == "limit" {
		return "limit (requests per window)"
	}
	prm, ok := model.LookupParam(name)
	if !ok || prm.Unit == "" {
		return name
	}
	return fmt.Sprintf("%s (%s)", name, prm.Unit)
}

// heatAxisLabel is paramAxisLabel, saying when the axis is log-spaced.
func heatAxisLabel(a model.Algorithm, name string, vals []float64, n int) string {
	l := paramAxisLabel(a, name)
	if n > maxEveryTick && geometric(vals) {
		l += ", log scale"
	}
	return l
}

// HeatFigure draws one sweep entry's two swept parameters (at one value of
// each further swept parameter) as two heat maps: legit cut % and missed %,
// each with its colour scale.
func (r *Run) HeatFigure(i int, h *Heat) *Figure {
	stem := fmt.Sprintf("heatmap-%d-%s", i+1, h.Algorithm)
	for _, fv := range h.Fixed {
		stem += "-" + fv.slug()
	}
	f := &Figure{Name: stem, W: 11 * vg.Inch, H: 5.6 * vg.Inch}
	fixed := ""
	for _, fv := range h.Fixed {
		fixed += ", " + fv.String()
	}
	f.Title = fmt.Sprintf("%s: legitimate cut and abusive missed over %s × %s%s (%s)", algoLabel(h.Algorithm), h.XParam, h.YParam, fixed, r.headline())
	binned := ""
	if h.NX < len(h.XValues) || h.NY < len(h.YValues) {
		binned = fmt.Sprintf(" The axes are binned (%d × %d cells for %d × %d values); a cell shows the pooled outcome of its settings.",
			h.NX, h.NY, len(h.XValues), len(h.YValues))
	}
	f.Caption = fmt.Sprintf("Each cell is one setting of %s (x) and %s (y) for %s%s; every value swept gets a cell of the same size, "+
		"so an axis swept on a log scale reads as a log axis. Left: legitimate requests cut, "+
		"right: abusive requests missed, both in %% and both better when darker (purple) and worse when lighter (yellow). A black-and-white ring "+
		"marks the lesson's reference setting when the run has it. Light grey cells are not in the run (for example a missing shard).%s", h.XParam, h.YParam, algoLabel(h.Algorithm), fixed, binned)
	mk := func(missed bool, title string) (*plot.Plot, *plot.Plot) {
		cm := viridis()
		hm := newCellHeat(heatGrid{h, missed}, cm)
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = heatAxisLabel(h.Algorithm, h.XParam, h.XValues, h.NX)
		p.Y.Label.Text = heatAxisLabel(h.Algorithm, h.YParam, h.YValues, h.NY)
		p.X.Tick.Marker = binTicks{h.XValues, h.NX, paramNames(h.XParam)}
		p.Y.Tick.Marker = binTicks{h.YValues, h.NY, paramNames(h.YParam)}
		p.Add(hm)
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = hm.DataRange()
		if xy, ok := r.heatRef(h); ok {
			// A black and a white ring: visible on dark and light cells.
			outer, _ := plotter.NewScatter(plotter.XYs{xy})
			outer.GlyphStyle = draw.GlyphStyle{Color: colBlack, Radius: vg.Points(7.5), Shape: draw.RingGlyph{}}
			inner, _ := plotter.NewScatter(plotter.XYs{xy})
			inner.GlyphStyle = draw.GlyphStyle{Color: color.White, Radius: vg.Points(6), Shape: draw.RingGlyph{}}
			p.Add(outer, inner)
		}
		cb := plot.New()
		cb.Add(colorBar{cm: cm, min: hm.Min, max: hm.Max})
		cb.HideY()
		cb.X.Label.Text = title + " (%)"
		cb.X.Tick.Marker = pctTicks{}
		cb.X.Padding = 0
		cb.X.Min, cb.X.Max = hm.Min, hm.Max
		return p, cb
	}
	lp, lcb := mk(false, "legitimate requests cut")
	mp, mcb := mk(true, "abusive requests missed")
	title := fmt.Sprintf("%s%s: where each setting lands\n%s", algoLabel(h.Algorithm), fixed, r.headline())
	f.draw = func(c draw.Canvas) {
		ts := textStyle(vg.Points(13))
		ts.XAlign = draw.XCenter
		fillText(c, ts, (c.Min.X+c.Max.X)/2, c.Max.Y-vg.Points(4), title)
		body := draw.Crop(sub(c, 0, 1, 0, 0.88), vg.Points(4), -vg.Points(14), 0, 0)
		for k, pp := range [][2]*plot.Plot{{lp, lcb}, {mp, mcb}} {
			col := sub(body, float64(k)*0.5, float64(k)*0.5+0.5, 0, 1)
			pp[0].Draw(sub(col, 0, 1, 0.2, 1))
			pp[1].Draw(draw.Crop(sub(col, 0, 1, 0, 0.17), vg.Points(50), -vg.Points(12), 0, 0))
		}
	}
	return f
}

// heatRef is the cell of the lesson's reference setting on h, if the run
// has it and h's fixed parameters match it.
func (r *Run) heatRef(h *Heat) (plotter.XY, bool) {
	for _, ref := range r.Refs {
		if ref.Policy.Algorithm != h.Algorithm {
			continue
		}
		xi := slices.Index(h.XValues, ref.Policy.Get(h.XParam))
		yi := slices.Index(h.YValues, ref.Policy.Get(h.YParam))
		ok := xi >= 0 && yi >= 0
		for _, f := range h.Fixed {
			ok = ok && ref.Policy.Get(f.Name) == f.Value
		}
		if ok {
			return plotter.XY{X: float64(binOf(xi, len(h.XValues), h.NX)), Y: float64(binOf(yi, len(h.YValues), h.NY))}, true
		}
	}
	return plotter.XY{}, false
}
