package report

import (
	"strings"
	"testing"
)

// Packed path data draws the same segments, to a tenth of a point.
func TestPackPath(t *testing.T) {
	for in, want := range map[string]string{
		"M64.932,113.17L68.021,113.17L68.021,118.76L64.932,118.76Z": "M64.9,113.2H68v5.6H64.9Z",
		"M1,2L3,4L3,4ZM5,6L5,7":                    "M1,2L3,4H3ZM5,6V7",
		"M1,2L1e-05,2L-0.5,2":                      "M1,2H0H-.5",
		"M100,200L300.04,400.06":                   "M100,200L300,400.1",
		"M1000.5,2000.5L1001.5,2001.5L1002,2001.5": "M1000.5,2000.5l1,1h.5",
		"M352.2,306.71A3.2,3.2 0 1 1 3":            "M352.2,306.71A3.2,3.2 0 1 1 3", // arcs kept as written
		"M1,2ZL3,2":                                "M1,2ZL3,2",                     // a segment from a closed subpath's start
		"L3,2":                                     "L3,2",
	} {
		if got := packPath(in); got != want {
			t.Errorf("packPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// A packed SVG keeps every element, its text and its style (as a class
// the page defines).
func TestSVGPacker(t *testing.T) {
	const style = "font-family:Liberation Serif;font-size:13px"
	in := `<svg><path d="M0,0L2,0" style="fill:none;stroke:#000000;stroke-width:0.5" />` +
		`<text x="1" y="2" transform="scale(1, -1)"` + "\n\t" + `style="` + style + `">a &lt;b&gt;</text>` +
		`<text x="3" y="4" style="` + style + `">c</text><circle r="5"><title>t</title></circle>` +
		`<path d="M0,0L0,1" style="fill:#2DAC81" /></svg>`
	p := newSVGPacker()
	got := string(p.pack([]byte(in)))
	want := `<svg><path d="M0,0H2" class="sv0"/>` +
		`<text x="1" y="2" transform="scale(1, -1)" class="sv1">a &lt;b&gt;</text>` +
		`<text x="3" y="4" class="sv1">c</text><circle r="5"><title>t</title></circle>` +
		`<path d="M0,0V1" fill="#2DAC81"/></svg>`
	if got != want {
		t.Errorf("pack:\n%s\nwant\n%s", got, want)
	}
	if css := p.css(); !strings.Contains(css, "svg .sv1{"+style+"}") || !strings.Contains(css, "svg .sv0{fill:none;stroke:#000000;stroke-width:0.5}") {
		t.Errorf("css: %s", css)
	}
}

// Consecutive paths of one solid stroke become one path of their subpaths;
// dashed ones (whose dashes restart per path) and fills stay apart.
func TestSVGPackerMergesStrokes(t *testing.T) {
	const tick = `style="fill:none;stroke:#000000;stroke-width:0.5" />`
	const dash = `style="fill:none;stroke:#000000;stroke-width:0.5;stroke-dasharray:2,2" />`
	in := `<svg><path d="M0,0L0,8" ` + tick + "\n" + `<path d="M10,0L10,8" ` + tick + "\n" +
		`<path d="M20,0L20,8" ` + dash + "\n" + `<path d="M30,0L30,8" ` + dash + "\n" +
		`<path d="M0,0L1,0L1,1Z" style="fill:#2DAC81" />` + `<path d="M2,0L3,0L3,1Z" style="fill:#2DAC81" /></svg>`
	got := string(newSVGPacker().pack([]byte(in)))
	want := `<svg><path d="M0,0V8M10,0V8" class="sv0"/>` + "\n" +
		`<path d="M20,0V8" class="sv1"/>` + "\n" + `<path d="M30,0V8" class="sv1"/>` + "\n" +
		`<path d="M0,0H1V1Z" fill="#2DAC81"/><path d="M2,0H3V1Z" fill="#2DAC81"/></svg>`
	if got != want {
		t.Errorf("pack:\n%s\nwant\n%s", got, want)
	}
}
