package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"regexp"
	"slices"
	"sync"

	"codeberg.org/go-pdf/fpdf"
)

// fontData is an embedded TrueType font in an @font-face rule (the tests
// read fonts with it; subsetFonts scans for fontURL instead).
var fontData = regexp.MustCompile(`url\(data:font/ttf;charset=utf-8;base64,([A-Za-z0-9+/=]+)\)`)

// fontURL opens an embedded TrueType font's data in an @font-face rule;
// its base64 runs to the next ')'.
const fontURL = "url(data:font/ttf;charset=utf-8;base64,"

// textRunes appends to runes the characters of every SVG <text> element's
// content as gonum writes it (the text between the last tag and
// "</text>", entities decoded).
func textRunes(runes []rune, svg []byte) []rune {
	const end = "</text>"
	for from := 0; ; {
		i := bytes.Index(svg[from:], []byte(end))
		if i < 0 {
			return runes
		}
		i += from
		start := from
		if k := bytes.LastIndexByte(svg[from:i], '<'); k >= 0 {
			start = from + k + 1
		}
		if j := bytes.IndexByte(svg[start:i], '>'); j >= 0 {
			s := string(svg[start+j+1 : i])
			if bytes.IndexByte(svg[start+j+1:i], '&') >= 0 {
				s = html.UnescapeString(s)
			}
			for _, r := range s {
				runes = append(runes, r)
			}
		}
		from = i + len(end)
	}
}

// cutset is the sorted distinct characters of runes, as a string.
func cutset(runes []rune) string {
	slices.Sort(runes)
	return string(slices.Compact(runes))
}

// fontCache holds, for the process, each embedded font decoded (by its
// base64 text) and each subset made of it (by font and characters), so
// that figures sharing a font and characters parse and cut it once.
var fontCache struct {
	sync.Mutex
	raw  map[string][]byte
	cuts map[[2]string]string // base64 whole font, cutset → base64 subset
}

// cutFontB64 is the base64 of the subset of the base64-encoded font b64
// keeping the characters of set.
func cutFontB64(b64, set string) (string, error) {
	fontCache.Lock()
	defer fontCache.Unlock()
	if fontCache.raw == nil {
		fontCache.raw = map[string][]byte{}
		fontCache.cuts = map[[2]string]string{}
	}
	if c, ok := fontCache.cuts[[2]string{b64, set}]; ok {
		return c, nil
	}
	raw, ok := fontCache.raw[b64]
	if !ok {
		var err error
		if raw, err = base64.StdEncoding.DecodeString(b64); err != nil {
			return "", err
		}
		fontCache.raw[b64] = raw
	}
	cut, err := cutFont(raw, set)
	if err != nil {
		return "", err
	}
	c := base64.StdEncoding.EncodeToString(cut)
	fontCache.cuts[[2]string{b64, set}] = c
	return c, nil
}

// subsetFontData replaces every embedded font in b with its subset keeping
// the characters of set.
func subsetFontData(b []byte, set string) ([]byte, error) {
	var out []byte
	rest := b
	for {
		i := bytes.Index(rest, []byte(fontURL))
		if i < 0 {
			break
		}
		i += len(fontURL)
		j := bytes.IndexByte(rest[i:], ')')
		if j < 0 {
			break
		}
		cut, err := cutFontB64(string(rest[i:i+j]), set)
		if err != nil {
			return nil, fmt.Errorf("report: subsetting a figure's font: %w", err)
		}
		if out == nil {
			out = make([]byte, 0, len(b)/4)
		}
		out = append(append(out, rest[:i]...), cut...)
		rest = rest[i+j:]
	}
	if out == nil {
		return b, nil
	}
	return append(out, rest...), nil
}

// subsetFonts returns a standalone SVG whose embedded fonts keep only the
// glyphs its text draws (go-pdf's TrueType subsetter), so that each figure
// file carries tens of kilobytes of font instead of the whole face. The
// glyphs keep their outlines and advance widths: the browser lays the text
// out as gonum measured it.
func subsetFonts(svg []byte) ([]byte, error) {
	return subsetFontData(svg, cutset(textRunes(nil, svg)))
}

// subsetFaces returns the @font-face rules faces with their fonts cut to
// the characters that the SVGs' text draws: the page's fonts, shared by
// its figures.
func subsetFaces(faces []string, svgs [][]byte) ([]string, error) {
	var runes []rune
	for _, s := range svgs {
		runes = textRunes(runes, s)
	}
	set := cutset(runes)
	out := make([]string, len(faces))
	for i, f := range faces {
		b, err := subsetFontData([]byte(f), set)
		if err != nil {
			return nil, err
		}
		out[i] = string(b)
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
