package report

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// svgPacker writes gonum's SVG more compactly for the page, drawing the
// same: path data briefly (packPath), a fill colour alone as an attribute,
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
		case bytes.HasPrefix(tag, []byte("<path ")):
			t := string(tag)
			t, svg = mergeStrokes(t, svg)
			out = p.element(out, t)
		case bytes.HasPrefix(tag, []byte("<text ")):
			out = p.element(out, string(tag))
		default:
			out = append(out, tag...)
		}
	}
}

// mergeStrokes joins to the path tag the paths right after it (rest) that
// have the same solid stroke and no fill, as one path of their subpaths:
// stroked alike, each subpath draws as it did (ticks, grid lines). It
// returns the tag and what follows the paths joined.
func mergeStrokes(tag string, rest []byte) (string, []byte) {
	name, attrs, ok := splitTag(tag)
	if !ok || name != "path" || !strings.HasSuffix(tag, "/>") || len(attrs) != 2 || attrs[0][0] != "d" || attrs[1][0] != "style" {
		return tag, rest
	}
	st := attrs[1][1]
	if !strings.HasPrefix(st, "fill:none;stroke:") || strings.Contains(st, "dash") || strings.Contains(st, "opacity") {
		return tag, rest
	}
	d := attrs[0][1]
	joined := false
	for {
		next := bytes.TrimLeft(rest, "\n")
		e := bytes.IndexByte(next, '>')
		if !bytes.HasPrefix(next, []byte("<path ")) || e < 0 || !bytes.HasSuffix(next[:e+1], []byte("/>")) {
			break
		}
		n2, a2, ok := splitTag(string(next[:e+1]))
		if !ok || n2 != "path" || len(a2) != 2 || a2[0][0] != "d" || a2[1] != attrs[1] || !strings.HasPrefix(a2[0][1], "M") {
			break
		}
		d += a2[0][1]
		rest = next[e+1:]
		joined = true
	}
	if !joined {
		return tag, rest
	}
	return `<path d="` + d + `" style="` + st + `" />`, rest
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
		case a[0] == "style" && len(a[1]) == len("fill:#000000") && strings.HasPrefix(a[1], "fill:#") && !strings.ContainsAny(a[1][6:], ";&<>\"'"):
			a = [2]string{"fill", a[1][len("fill:"):]} // a colour alone, as an attribute
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
// "M1,2L3,2L3,4Z") to a tenth of a point (pathUnits), each point absolute
// or relative to the one before, whichever is shorter, and a segment along
// an axis as H or V.
// Other data is returned as is.
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
	var cx, cy, sx, sy int64 // the current point and the subpath's start, in tenths
	closed := true           // a subpath must start with M
	for d != "" {
		cmd := d[0]
		d = d[1:]
		switch {
		case cmd == 'Z':
			b.WriteByte('Z')
			cx, cy = sx, sy
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
		x, okx := units(px)
		y, oky := units(py)
		if !found || !okx || !oky {
			return "", false
		}
		d = d[j:]
		switch {
		case cmd == 'M':
			b.WriteString(shorter("M"+num(x)+","+num(y), "m"+num(x-cx)+","+num(y-cy)))
			sx, sy = x, y
		case y == cy:
			b.WriteString(shorter("H"+num(x), "h"+num(x-cx)))
		case x == cx:
			b.WriteString(shorter("V"+num(y), "v"+num(y-cy)))
		default:
			b.WriteString(shorter("L"+num(x)+","+num(y), "l"+num(x-cx)+","+num(y-cy)))
		}
		cx, cy = x, y
	}
	return b.String(), true
}

// pathUnits is the precision of the page's path data, per point: a tenth
// of a point is a fifteenth of a pixel on a 792-point figure shown 1,200
// pixels wide (the page's widest); gonum writes five significant digits.
const pathUnits = 10

// units is s, a number of points, in tenths, rounded.
func units(s string) (int64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(math.Abs(f) < 1e12) {
		return 0, false
	}
	return int64(math.Round(f * pathUnits)), true
}

// num writes v tenths of a point briefly: "12.5", "-.5", "3".
func num(v int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	i, f := v/pathUnits, v%pathUnits
	if f == 0 {
		return sign + strconv.FormatInt(i, 10)
	}
	frac := strconv.FormatInt(f, 10)
	if i == 0 {
		return sign + "." + frac
	}
	return sign + strconv.FormatInt(i, 10) + "." + frac
}

func shorter(a, b string) string {
	if len(b) < len(a) {
		return b
	}
	return a
}

// css is the page's rules for the classes of the SVGs packed so far.
func (p *svgPacker) css() string {
	var b strings.Builder
	for i, s := range p.order {
		fmt.Fprintf(&b, "svg .sv%d{%s}\n", i, s)
	}
	return b.String()
}
