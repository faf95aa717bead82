package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"regexp"
	"slices"

	"codeberg.org/go-pdf/fpdf"
)

// svgText is the content of an SVG <text> element as gonum writes it.
var svgText = regexp.MustCompile(`>([^<]*)</text>`)

// fontData is an embedded TrueType font in an @font-face rule.
var fontData = regexp.MustCompile(`url\(data:font/ttf;charset=utf-8;base64,([A-Za-z0-9+/=]+)\)`)

// subsetFonts returns a standalone SVG whose embedded fonts keep only the
// glyphs its text draws (go-pdf's TrueType subsetter), so that each figure
// file carries tens of kilobytes of font instead of the whole face. The
// glyphs keep their outlines and advance widths: the browser lays the text
// out as gonum measured it.
func subsetFonts(svg []byte) ([]byte, error) {
	var runes []rune
	for _, m := range svgText.FindAllSubmatch(svg, -1) {
		for _, r := range html.UnescapeString(string(m[1])) {
			runes = append(runes, r)
		}
	}
	slices.Sort(runes)
	cutset := string(slices.Compact(runes))
	var err error
	out := fontData.ReplaceAllFunc(svg, func(m []byte) []byte {
		raw, e := base64.StdEncoding.DecodeString(string(fontData.FindSubmatch(m)[1]))
		if e != nil {
			err = e
			return m
		}
		cut, e := cutFont(raw, cutset)
		if e != nil {
			err = e
			return m
		}
		var b bytes.Buffer
		b.WriteString("url(data:font/ttf;charset=utf-8;base64,")
		b.WriteString(base64.StdEncoding.EncodeToString(cut))
		b.WriteString(")")
		return b.Bytes()
	})
	if err != nil {
		return nil, fmt.Errorf("report: subsetting a figure's font: %w", err)
	}
	return out, nil
}

// cutFont is fpdf.UTF8CutFont with its panics (a font it cannot parse) as
// an error.
func cutFont(raw []byte, cutset string) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	out = fpdf.UTF8CutFont(raw, cutset)
	if len(out) == 0 {
		return nil, fmt.Errorf("empty subset")
	}
	return out, nil
}
