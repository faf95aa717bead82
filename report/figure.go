package report

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/fnv"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/model"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is a drawing that renders to PNG (for a quick look) and SVG (for
// the web page).
type Figure struct {
	Name    string    // file stem, e.g. "tradeoff"
	Title   string    // what it shows (heading, alt text)
	Caption string    // how to read it
	W, H    vg.Length // size
	Banner  string    // when set, a warning strip across the top (an incomplete run)
	draw    func(c draw.Canvas)
	hover   []hoverMark // filled while drawing by hoverLayer plotters
	renderH vg.Length   // H plus the banner, as last rendered
}

// bannerH is the height of the incomplete-run banner strip.
const bannerH = 22 * vg.Length(1)

// hoverMark is a point that the SVG identifies on hover: an invisible
// circle over a marker, with a <title> (the browser's tooltip).
type hoverMark struct {
	At        vg.Point // on the canvas, from its bottom left
	Algorithm string   // data-algorithm (the page's tests read it)
	Kind      string   // data-kind: curve, frontier or reference
	Title     string
}

// hoverLayer is a plotter that draws nothing and records its points'
// positions on the figure's canvas for the SVG's tooltips.
type hoverLayer struct {
	f     *Figure
	xys   plotter.XYs
	marks []hoverMark // At filled in from xys when plotted
}

func (h *hoverLayer) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for i, m := range h.marks {
		m.At = vg.Point{X: trX(h.xys[i].X), Y: trY(h.xys[i].Y)}
		h.f.hover = append(h.f.hover, m)
	}
}

func (h *hoverLayer) add(x, y float64, m hoverMark) {
	h.xys = append(h.xys, plotter.XY{X: x, Y: y})
	h.marks = append(h.marks, m)
}

// hoverR is the radius of a hover mark's circle, points.
const hoverR = 5

// hoverNames is how many overlapping settings a tooltip names besides its
// own.
const hoverNames = 4

// hoverSVG is the figure's tooltip layer: one transparent circle with a
// <title> per hover mark, in SVG user units (points, y down).
func (f *Figure) hoverSVG() []byte {
	if len(f.hover) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString(`<g class="hover" fill="#000" fill-opacity="0" pointer-events="all">` + "\n")
	for i, m := range f.hover {
		r, title := hoverR, m.Title
		if m.Kind == "frontier-name" {
			r = 0 // where a name is meant to be read, for tests: no hover area
		} else {
			// Marks that overlap show one tooltip, whichever is on top: it
			// names the settings under the pointer, nearest first, up to
			// hoverNames of them, and counts the rest.
			type near struct {
				d float64
				j int
			}
			var ns []near
			for j, o := range f.hover {
				if d := math.Hypot((o.At.X - m.At.X).Points(), (o.At.Y - m.At.Y).Points()); j != i && o.Kind != "frontier-name" && d < 2*hoverR {
					ns = append(ns, near{d, j})
				}
			}
			slices.SortFunc(ns, func(a, b near) int { return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.j, b.j)) })
			for k, n := range ns {
				if k == hoverNames {
					title += fmt.Sprintf("\nand %d more settings here", len(ns)-k)
					break
				}
				title += "\n" + f.hover[n.j].Title
			}
		}
		fmt.Fprintf(&b, `<circle cx="%.2f" cy="%.2f" r="%d" data-kind="%s" data-algorithm="%s"><title>%s</title></circle>`+"\n",
			m.At.X.Points(), (f.renderH - m.At.Y).Points(), r, svgEscape(m.Kind), svgEscape(m.Algorithm), svgEscape(title))
	}
	b.WriteString("</g>\n")
	return b.Bytes()
}

// The figures' text is sans-serif (Liberation Sans, embedded in each SVG):
// it stays legible where a figure is scaled down to a narrow screen.
func init() {
	plot.DefaultFont.Variant = "Sans"
	plotter.DefaultFont = plot.DefaultFont
}

// pngDPI is the PNG resolution: 10 in × 6.5 in gives 1200 × 780 pixels.
const pngDPI = 120

// Render draws the figure as "png" or "svg". A panic inside gonum/plot (a
// bug or degenerate data) becomes an error.
func (f *Figure) Render(format string) ([]byte, error) { return f.render(format, true) }

// render is Render; with embed false an SVG names its fonts without
// embedding them (the fuzz tests: embedding is nearly all of a figure's
// cost).
func (f *Figure) render(format string, embed bool) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("report: drawing %s.%s: %v", f.Name, format, p)
		}
	}()
	// A banner is a strip above the figure.
	f.renderH = f.H
	if f.Banner != "" {
		f.renderH += bannerH
	}
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = fastPNG{vgimg.NewWith(vgimg.UseWH(f.W, f.renderH), vgimg.UseDPI(pngDPI))}
	case "svg":
		// Fonts embedded: a browser without Liberation draws the same
		// glyph widths gonum measured, so no text overflows its box.
		c = vgsvg.NewWith(vgsvg.UseWH(f.W, f.renderH), vgsvg.EmbedFonts(embed))
	default:
		return nil, fmt.Errorf("report: unknown figure format %q", format)
	}
	dc := draw.New(safeText{c})
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	if f.Banner != "" {
		band := sub(dc, 0, 1, 0, 1)
		band.Min.Y = band.Max.Y - bannerH
		dc.SetColor(colBannerBg)
		dc.Fill(band.Rectangle.Path())
		ts := textStyle(vg.Points(10))
		ts.Color = colBannerText
		ts.XAlign, ts.YAlign = draw.XCenter, draw.YCenter
		fillText(dc, ts, (band.Min.X+band.Max.X)/2, (band.Min.Y+band.Max.Y)/2, f.Banner)
		dc = draw.Crop(dc, 0, 0, 0, -bannerH)
	}
	f.hover = f.hover[:0]
	f.draw(dc)
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	if format == "svg" {
		// vgsvg labels its embedded PNG images as JPEG; say what they are.
		out := bytes.ReplaceAll(b.Bytes(), []byte("data:image/jpg;base64,"), []byte("data:image/png;base64,"))
		if h := f.hoverSVG(); h != nil {
			i := bytes.LastIndex(out, []byte("</svg>"))
			out = append(out[:i:i], append(h, out[i:]...)...)
		}
		return xmlChars(out), nil
	}
	return b.Bytes(), nil
}

// fastPNG is a vgimg canvas that writes a PNG compressed for speed: the
// same pixels as vgimg.PngCanvas in a fraction of its time, in a somewhat
// larger file.
type fastPNG struct{ *vgimg.Canvas }

func (c fastPNG) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&b, c.Image()); err != nil {
		return 0, err
	}
	return b.WriteTo(w)
}

// xmlChars replaces what XML forbids in SVG text (invalid UTF-8 and control
// characters other than tab and line breaks, e.g. from a client's name) with
// U+FFFD, so the SVG stays well-formed.
func xmlChars(b []byte) []byte {
	b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	return bytes.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return '\uFFFD'
		}
		return r
	}, b)
}

// splitFonts separates an SVG's embedded @font-face rules (vgsvg writes them
// in one <defs><style> block before the drawing) from the rest, so that a
// page holding many SVGs carries each font once.
func splitFonts(svg []byte) (rest []byte, faces []string) {
	const open, end = "<defs>\n\t<style>\n", "\t</style>\n</defs>\n"
	i := bytes.Index(svg, []byte(open))
	if i < 0 {
		return svg, nil
	}
	j := bytes.Index(svg[i:], []byte(end))
	if j < 0 {
		return svg, nil
	}
	css := string(svg[i+len(open) : i+j])
	for _, r := range strings.SplitAfter(css, "\t\t}\n") {
		if r = strings.TrimSpace(r); r != "" {
			faces = append(faces, r)
		}
	}
	rest = append(append([]byte{}, svg[:i]...), svg[i+j+len(end):]...)
	return rest, faces
}

// Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
var (
	colVermillion = color.RGBA{0xD5, 0x5E, 0x00, 0xFF}
	colBlue       = color.RGBA{0x00, 0x72, 0xB2, 0xFF}
	colGreen      = color.RGBA{0x00, 0x9E, 0x73, 0xFF}
	colOrange     = color.RGBA{0xE6, 0x9F, 0x00, 0xFF}
	colPurple     = color.RGBA{0xCC, 0x79, 0xA7, 0xFF}
	colSky        = color.RGBA{0x56, 0xB4, 0xE9, 0xFF}
	colGrey       = color.RGBA{0x99, 0x99, 0x99, 0xFF}
	colBlack      = color.RGBA{0x00, 0x00, 0x00, 0xFF}
)

// algoPalette are the algorithms' colours on every plot, by their
// descriptor's ColorSlot: Paul Tol's "muted" scheme, nine colours told
// apart with the common colour-vision deficiencies (and in greyscale by
// their dashes and glyphs).
var algoPalette = []color.RGBA{
	{0xCC, 0x66, 0x77, 0xFF}, // rose
	{0x33, 0x22, 0x88, 0xFF}, // indigo
	{0x11, 0x77, 0x33, 0xFF}, // green
	{0x88, 0x22, 0x55, 0xFF}, // wine
	{0x88, 0xCC, 0xEE, 0xFF}, // cyan
	{0x44, 0xAA, 0x99, 0xFF}, // teal
	{0x99, 0x99, 0x33, 0xFF}, // olive
	{0xAA, 0x44, 0x99, 0xFF}, // purple
	{0xDD, 0xCC, 0x77, 0xFF}, // sand
	{0x66, 0x44, 0x22, 0xFF}, // brown
	{0xEE, 0x77, 0x33, 0xFF}, // orange (Paul Tol's "vibrant", as the three below)
	{0x00, 0x77, 0xBB, 0xFF}, // blue
	{0xEE, 0x33, 0x77, 0xFF}, // magenta
}

// algoColor is algorithm a's colour on every plot: its palette slot, else
// its descriptor's Color, else one made from its name (grey for none).
func algoColor(a model.Algorithm) color.RGBA {
	d := a.Describe()
	switch {
	case d == nil:
		return colGrey
	case d.ColorSlot >= 0 && d.ColorSlot < len(algoPalette):
		return algoPalette[d.ColorSlot]
	}
	var r, g, b uint8
	if _, err := fmt.Sscanf(d.Color, "#%02x%02x%02x", &r, &g, &b); err == nil && len(d.Color) == 7 {
		return color.RGBA{r, g, b, 0xFF}
	}
	return nameColor(d.Name)
}

// nameColor is a colour made from an algorithm's name: a hue from the
// name's FNV hash at a fixed saturation and lightness dark enough for
// lines on white (never the palette's grey).
func nameColor(name string) color.RGBA {
	h := fnv.New32a()
	h.Write([]byte(name))
	hue := float64(h.Sum32()%360) / 60
	const c, l = 0.55, 0.32 // chroma; lightness offset
	x := c * (1 - math.Abs(math.Mod(hue, 2)-1))
	var r, g, b float64
	switch int(hue) {
	case 0:
		r, g = c, x
	case 1:
		r, g = x, c
	case 2:
		g, b = c, x
	case 3:
		g, b = x, c
	case 4:
		r, b = x, c
	default:
		r, b = c, x
	}
	to := func(v float64) uint8 { return uint8(math.Round((v + l) * 255)) }
	return color.RGBA{to(r), to(g), to(b), 0xFF}
}

// The incomplete-run banner: dark text on a light amber strip.
var (
	colBannerBg   = color.RGBA{0xFF, 0xE0, 0xA0, 0xFF}
	colBannerText = color.RGBA{0x70, 0x30, 0x00, 0xFF}
)

// Class colours: legitimate requests blue, abusive vermillion; the lighter
// shade is admitted, the full shade is cut.
var (
	colLegit        = colBlue
	colLegitLight   = color.RGBA{0xA6, 0xCE, 0xE3, 0xFF}
	colAbusive      = colVermillion
	colAbusiveLight = color.RGBA{0xF4, 0xC0, 0x9A, 0xFF}
)

var dashes = [][]vg.Length{
	nil,
	{vg.Points(7), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(7), vg.Points(2), vg.Points(2), vg.Points(2)},
	{vg.Points(12), vg.Points(4)},
}

var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}}

func textStyle(size vg.Length) text.Style {
	return text.Style{
		Color:   colBlack,
		Font:    font.From(plot.DefaultFont, size),
		XAlign:  draw.XLeft,
		YAlign:  draw.YTop,
		Handler: plot.DefaultTextHandler,
	}
}

// fillText writes s with its top-left corner at (x, y).
func fillText(c draw.Canvas, sty text.Style, x, y vg.Length, s string) {
	c.FillText(sty, vg.Point{X: x, Y: y}, s)
}

// sub returns the part of c between fractions [x0, x1] × [y0, y1] of its width
// and height (0 = left/bottom).
func sub(c draw.Canvas, x0, x1, y0, y1 float64) draw.Canvas {
	w, h := c.Max.X-c.Min.X, c.Max.Y-c.Min.Y
	return draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: c.Min.X + vg.Length(x0)*w, Y: c.Min.Y + vg.Length(y0)*h},
		Max: vg.Point{X: c.Min.X + vg.Length(x1)*w, Y: c.Min.Y + vg.Length(y1)*h},
	}}
}

// niceStep returns a 1, 2 or 5 × 10^k step giving about n steps over span.
func niceStep(span float64, n int) float64 {
	if span <= 0 || n < 1 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// roundValues returns the round values in [lo, hi]: 1, 2 and 5 × 10^k on
// a log scale (geo), else the multiples of a round step giving about n.
func roundValues(lo, hi float64, geo bool, n int) []float64 {
	var out []float64
	if geo {
		for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
			for _, m := range []float64{1, 2, 5} {
				if v := m * math.Pow(10, e); v >= lo && v <= hi {
					out = append(out, v)
				}
			}
		}
		return out
	}
	step := niceStep(hi-lo, n)
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, roundTo(v, step))
	}
	return out
}

// fmtNum prints a number compactly with thousands separators for integers.
func fmtNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return groupDigits(int64(v))
	}
	return fmt.Sprintf("%.4g", v)
}

func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	neg := false
	if n < 0 {
		neg, s = true, s[1:]
	}
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// pctTicks labels a percentage axis with nice steps and "%" units.
type pctTicks struct{}

func (pctTicks) Ticks(min, max float64) []plot.Tick {
	step := niceStep(max-min, 8)
	var out []plot.Tick
	for v := math.Ceil(min/step) * step; v <= max+step*1e-9; v += step {
		out = append(out, plot.Tick{Value: v, Label: fmt.Sprintf("%g%%", roundTo(v, step))})
		for k := 1; k < 5; k++ {
			if m := v + float64(k)*step/5; m <= max {
				out = append(out, plot.Tick{Value: m})
			}
		}
	}
	return out
}

func roundTo(v, step float64) float64 {
	d := math.Max(0, -math.Floor(math.Log10(step))+1)
	p := math.Pow(10, d)
	return math.Round(v*p) / p
}
