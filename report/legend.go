package report

// The trade-off figures' legend: groups of entries laid out in columns.

import (
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legendGroup is one block of the trade-off legend: a heading and entries,
// each with a thumbnail.
type legendGroup struct {
	head    string
	sub     string // a grey line under the heading, may be empty
	entries []legendEntry
}

type legendEntry struct {
	label  string
	thumbs []plot.Thumbnailer
}

// legend sizes.
const (
	legFont   = 8.5 // points
	legLine   = 11.5
	legThumb  = 30
	legColGap = 14
)

// legendLayout places groups in columns under the plot, each group in the
// shortest column so far; it returns the columns' groups and the height.
func legendLayout(groups []legendGroup, width vg.Length) ([][]legendGroup, vg.Length) {
	sty := textStyle(vg.Points(legFont))
	colW := vg.Length(0)
	for _, g := range groups {
		colW = max(colW, sty.Width(g.head), sty.Width(g.sub))
		for _, e := range g.entries {
			colW = max(colW, vg.Points(legThumb+4)+sty.Width(e.label))
		}
	}
	ncol := max(1, int((width+vg.Points(legColGap))/(colW+vg.Points(legColGap))))
	cols := make([][]legendGroup, ncol)
	hs := make([]int, ncol)
	for _, g := range groups {
		k := slices.Index(hs, slices.Min(hs))
		cols[k] = append(cols[k], g)
		hs[k] += groupLines(g) + 1
	}
	return cols, vg.Points(legLine * float64(slices.Max(hs)))
}

func groupLines(g legendGroup) int {
	n := 1 + len(g.entries)
	if g.sub != "" {
		n++
	}
	return n
}

// drawLegend draws the columns of legendLayout into c.
func drawLegend(c draw.Canvas, cols [][]legendGroup) {
	sty := textStyle(vg.Points(legFont))
	grey := sty
	grey.Color = color.RGBA{0x55, 0x55, 0x55, 0xFF}
	colW := (c.Max.X - c.Min.X) / vg.Length(len(cols))
	line := vg.Points(legLine)
	for k, groups := range cols {
		x := c.Min.X + vg.Length(k)*colW
		y := c.Max.Y
		for _, g := range groups {
			fillText(c, sty, x, y, g.head)
			y -= line
			if g.sub != "" {
				fillText(c, grey, x+vg.Points(4), y, g.sub)
				y -= line
			}
			for _, e := range g.entries {
				th := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
					Min: vg.Point{X: x + vg.Points(2), Y: y - line + vg.Points(1)},
					Max: vg.Point{X: x + vg.Points(legThumb), Y: y - vg.Points(1)}}}
				for _, t := range e.thumbs {
					t.Thumbnail(&th)
				}
				fillText(c, sty, x+vg.Points(legThumb+4), y, e.label)
				y -= line
			}
			y -= line
		}
	}
}
