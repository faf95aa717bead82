package report

import (
	"bytes"
	"fmt"
	"strings"
)

// svgPacker writes gonum's SVG more compactly for the page, drawing the
// same: a path's axis-aligned segments as H and V with the same numbers,
// and each long style shared by text and stroked paths (fonts, strokes) as
// a class defined once in the page's CSS. The figure files keep gonum's
// form.
type svgPacker struct {
	classes map[string]string // style → class
	order   []string          // styles by class number
}

// minClassStyle is the shortest style worth a class: a fill alone
// ("fill:#2DAC81") is as short as the class that would replace it.
const minClassStyle = 20

func newSVGPacker() *svgPacker { return &svgPacker{classes: map[string]string{}} }

// pack returns svg written compactly; its classes are in css.
func (p *svgPacker) pack(svg []byte) []byte {
	out := make([]byte, 0, len(svg)*2/3)
	for {
		i := bytes.IndexByte(svg, '<')
		if i < 0 {
			return append(out, svg...)
		}
		out = append(out, svg[:i]...)
		svg = svg[i:]
		end := bytes.IndexByte(svg, '>')
		if end < 0 {
			return append(out, svg...)
		}
		tag := svg[:end+1]
		svg = svg[end+1:]
		switch {
		case bytes.HasPrefix(tag, []byte("<path ")), bytes.HasPrefix(tag, []byte("<text ")):
			out = p.element(out, string(tag))
		default:
			out = append(out, tag...)
		}
	}
}

// element appends a <path> or <text> start tag, packed.
func (p *svgPacker) element(out []byte, tag string) []byte {
	name, attrs, ok := splitTag(tag)
	if !ok {
		return append(out, tag...)
	}
	out = append(out, '<')
	out = append(out, name...)
	for _, a := range attrs {
		switch {
		case a[0] == "d" && name == "path":
			a[1] = packPath(a[1])
		case a[0] == "style" && len(a[1]) >= minClassStyle && !strings.ContainsAny(a[1], "&<>{}\\"):
			c, ok := p.classes[a[1]]
			if !ok {
				c = fmt.Sprintf("sv%d", len(p.order))
				p.classes[a[1]] = c
				p.order = append(p.order, a[1])
			}
			a = [2]string{"class", c}
		}
		out = append(out, ' ')
		out = append(out, a[0]...)
		out = append(out, `="`...)
		out = append(out, a[1]...)
		out = append(out, '"')
	}
	if strings.HasSuffix(tag, "/>") {
		out = append(out, '/')
	}
	return append(out, '>')
}

// splitTag splits a start tag into its name and attributes (values as
// written, already escaped); ok is false for any form it does not know.
func splitTag(tag string) (name string, attrs [][2]string, ok bool) {
	s := strings.TrimPrefix(tag, "<")
	s = strings.TrimSuffix(strings.TrimSuffix(s, ">"), "/")
	name, s, _ = strings.Cut(s, " ")
	for {
		s = strings.TrimLeft(s, " \t\n\r")
		if s == "" {
			return name, attrs, true
		}
		k, rest, found := strings.Cut(s, `="`)
		if !found || strings.ContainsAny(k, " \t\n\r<>\"'") {
			return "", nil, false
		}
		v, rest, found := strings.Cut(rest, `"`)
		if !found {
			return "", nil, false
		}
		attrs = append(attrs, [2]string{k, v})
		s = rest
	}
}

// packPath writes path data of absolute M, L and Z commands (gonum's
// "M1,2L3,2L3,4Z") with H or V for a segment along an axis; the numbers
// are kept as written. Other data is returned as is.
func packPath(d string) string {
	if p, ok := packPathData(d); ok {
		return p
	}
	return d
}

func packPathData(d string) (string, bool) {
	if strings.ContainsAny(d, "CcQqAaSsTtHhVvmlz \t\n") {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(d))
	var x, y string // the current point, as written
	closed := true  // a subpath must start with M
	for d != "" {
		cmd := d[0]
		d = d[1:]
		switch {
		case cmd == 'Z':
			b.WriteByte('Z')
			closed = true
			continue
		case cmd == 'M':
			closed = false
		case cmd == 'L' && !closed:
		default:
			return "", false
		}
		j := strings.IndexAny(d, "MLZ")
		if j < 0 {
			j = len(d)
		}
		px, py, found := strings.Cut(d[:j], ",")
		if !found || px == "" || py == "" {
			return "", false
		}
		d = d[j:]
		switch {
		case cmd == 'M':
			b.WriteString("M" + px + "," + py)
		case py == y && px == x:
			b.WriteString("L" + px + "," + py)
		case py == y:
			b.WriteString("H" + px)
		case px == x:
			b.WriteString("V" + py)
		default:
			b.WriteString("L" + px + "," + py)
		}
		x, y = px, py
	}
	return b.String(), true
}

// css is the page's rules for the classes of the SVGs packed so far.
func (p *svgPacker) css() string {
	var b strings.Builder
	for i, s := range p.order {
		fmt.Fprintf(&b, "svg .sv%d{%s}\n", i, s)
	}
	return b.String()
}
