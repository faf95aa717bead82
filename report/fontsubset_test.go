package report

import (
	"context"
	"encoding/base64"
	"testing"

	"golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// A figure file's font keeps every glyph its text draws, with the whole
// font's advance widths (the browser lays text out as gonum measured it),
// and little else.
func TestSubsetFontsKeepGlyphsAndWidths(t *testing.T) {
	dir := runSpec(t, tinySpec)
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mustFigures(t, r)[:3] {
		full, err := f.Render("svg")
		if err != nil {
			t.Fatal(err)
		}
		cut, err := subsetFonts(full)
		if err != nil {
			t.Fatal(err)
		}
		if len(cut)*5 > len(full) {
			t.Errorf("%s.svg: %d bytes with the font subset, %d whole", f.Name, len(cut), len(full))
		}
		whole, part := onlyFont(t, full), onlyFont(t, cut)
		doc, err := parseSVG(cut)
		if err != nil {
			t.Fatalf("%s.svg: %v", f.Name, err)
		}
		var buf sfnt.Buffer
		seen := map[rune]bool{}
		for _, s := range doc.Texts {
			for _, c := range s {
				if seen[c] {
					continue
				}
				seen[c] = true
				gw, err1 := whole.GlyphIndex(&buf, c)
				gp, err2 := part.GlyphIndex(&buf, c)
				if err1 != nil || err2 != nil || (gw != 0 && gp == 0) {
					t.Errorf("%s.svg: %q lost in the subset (%v %v)", f.Name, c, err1, err2)
					continue
				}
				aw, _ := whole.GlyphAdvance(&buf, gw, fixed.I(1000), font.HintingNone)
				ap, _ := part.GlyphAdvance(&buf, gp, fixed.I(1000), font.HintingNone)
				if aw != ap {
					t.Errorf("%s.svg: %q advances %v in the subset, %v in the font", f.Name, c, ap, aw)
				}
			}
		}
		if len(seen) < 20 {
			t.Errorf("%s.svg: only %d distinct characters checked", f.Name, len(seen))
		}
	}
}

func onlyFont(t *testing.T, svg []byte) *sfnt.Font {
	t.Helper()
	m := fontData.FindSubmatch(svg)
	if m == nil {
		t.Fatal("no embedded font")
	}
	raw, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	f, err := sfnt.Parse(raw)
	if err != nil {
		t.Fatalf("the font does not parse: %v", err)
	}
	return f
}
