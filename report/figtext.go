package report

import (
	"html"

	"github.com/ratesweep/ratesweep/internal/textsafe"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// safeText is the canvas every figure draws on: each string it writes (a
// client's name, a key, a policy label, a title) shows its control
// characters, bidirectional overrides and invalid UTF-8 as visible text
// (\x1b, \u202e, \xff), as every other output does. The SVG canvas then
// escapes the markup ("<", "&").
type safeText struct{ vg.CanvasWriterTo }

// FillString implements vg.Canvas.
func (c safeText) FillString(f font.Face, pt vg.Point, s string) {
	c.CanvasWriterTo.FillString(f, pt, textsafe.Escape(s))
}

// svgEscape is s as SVG character data or an attribute value: control
// characters and bidirectional overrides visible, markup escaped.
func svgEscape(s string) string { return html.EscapeString(textsafe.Escape(s)) }
