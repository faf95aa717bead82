package report

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// plotPick is a best setting marked on the trade-off plot: the targets
// that pick it.
type plotPick struct {
	FrontierPoint
	targets []string // e.g. "≤25%"
}

// plotPicks are the best settings of the best-settings section, one per
// setting (targets that pick the same setting share its mark).
func (r *Run) plotPicks() []plotPick {
	var out []plotPick
	if r.NoAbuse() {
		return nil
	}
	for _, tg := range r.Targets() {
		b, ok := r.Frontier.Best(tg.MissedPct)
		if !ok {
			continue
		}
		lbl := "≤" + fmt.Sprintf("%g%%", tg.MissedPct)
		found := false
		for i := range out {
			if out[i].ID == b.ID {
				out[i].targets = append(out[i].targets, lbl)
				found = true
			}
		}
		if !found {
			out = append(out, plotPick{b, []string{lbl}})
		}
	}
	return out
}

// addPicks marks the best settings on p (a white square ringed in black,
// around the algorithm's colour; named by its targets in the legend and the
// tooltip, not on the plot, where curve labels crowd) and returns their
// legend group.
func (r *Run) addPicks(p *plot.Plot, hover *hoverLayer) legendGroup {
	g := legendGroup{head: "the best settings (section \"Best settings\")", sub: "missed at most the target, least legitimate cut"}
	white := color.RGBA{0xFF, 0xFF, 0xFF, 0xFF}
	for _, pk := range r.plotPicks() {
		xy := plotter.XYs{{X: pk.X(), Y: pk.Y()}}
		outer, _ := plotter.NewScatter(xy)
		outer.GlyphStyle = draw.GlyphStyle{Color: colBlack, Radius: vg.Points(6), Shape: draw.BoxGlyph{}}
		inner, _ := plotter.NewScatter(xy)
		inner.GlyphStyle = draw.GlyphStyle{Color: white, Radius: vg.Points(3.8), Shape: draw.BoxGlyph{}}
		dot, _ := plotter.NewScatter(xy)
		dot.GlyphStyle = draw.GlyphStyle{Color: algoColor(pk.Policy.Algorithm), Radius: vg.Points(2.6), Shape: draw.BoxGlyph{}}
		p.Add(outer, inner, dot)
		hover.add(pk.X(), pk.Y(), hoverMark{Algorithm: pk.Policy.Algorithm.String(), Kind: "pick",
			Title: fmt.Sprintf("best setting for missed %s: %s", strings.Join(pk.targets, ", "), pointTitle(&pk.Point))})
		lo, li, ld := *outer, *inner, *dot
		lo.GlyphStyle.Radius, li.GlyphStyle.Radius, ld.GlyphStyle.Radius = vg.Points(4.5), vg.Points(2.8), vg.Points(1.9)
		g.entries = append(g.entries, legendEntry{fmt.Sprintf("missed %s: %s %s", strings.Join(pk.targets, ", "), algoLabel(pk.Policy.Algorithm), paramsCell(pk.Policy)),
			[]plot.Thumbnailer{&lo, &li, &ld}})
	}
	return g
}
