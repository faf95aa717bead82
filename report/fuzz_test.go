package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"golang.org/x/net/html"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// gfm renders Markdown as GitHub does: tables, strikethrough and bare-URL
// autolinks (goldmark, a CommonMark/GFM implementation, is the oracle).
var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM))

// names seeds the fuzzers with hostile client names.
var names = []string{
	"page-crawling scraper",
	"[click](javascript:alert(1))",
	"![i](http://example.com/beacon.png)",
	"<img src=x onerror=alert(1)>",
	"https://example.com/x and www.example.com",
	"mail me@example.com",
	"a | b\nc",
	"**bold** _em_ `code` ~~del~~",
	"# heading", "- item", "1. item", "> quote", "&amp; &#x6A;avascript:",
	"[ref]: http://example.com", "\\[x](y)", "<http://example.com>",
}

// plainText is what a cell holding s should render to: one line, trimmed.
func plainText(s string) string {
	return strings.Join(strings.Fields(visible(s)), " ")
}

// htmlTextAndTags parses an HTML fragment and returns its text (whitespace
// collapsed) and its element names; it fails on a link, image or script.
func htmlTextAndTags(t *testing.T, frag []byte) (string, map[string]bool) {
	t.Helper()
	tags := map[string]bool{}
	var text strings.Builder
	z := html.NewTokenizer(bytes.NewReader(frag))
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatal(z.Err())
			}
			return strings.Join(strings.Fields(text.String()), " "), tags
		case html.TextToken:
			text.Write(z.Text())
			text.WriteByte(' ')
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			tags[string(name)] = true
		}
	}
}

// Any name in a table cell renders, in Markdown (through a GFM renderer)
// and in HTML, to exactly its text: no link, image, HTML or autolink.
func FuzzTableWriters(f *testing.F) {
	for _, n := range names {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		tb := &Table{Title: "Clients", Headers: []string{"client", "cut"}, Rows: [][]string{{name, "12"}}}
		var md bytes.Buffer
		if err := tb.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := gfm.Convert(md.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		text, tags := htmlTextAndTags(t, out.Bytes())
		for tag := range tags {
			switch tag {
			case "table", "thead", "tbody", "tr", "th", "td", "p", "strong":
			default:
				t.Fatalf("name %q: Markdown renders a <%s>:\n%s\n%s", name, tag, md.Bytes(), out.Bytes())
			}
		}
		if !tags["td"] {
			t.Fatalf("name %q broke the table:\n%s\n%s", name, md.Bytes(), out.Bytes())
		}
		// The text must come through unchanged (CommonMark replaces NUL and
		// invalid UTF-8, so those are only checked for safety).
		want := "Clients client cut " + plainText(name) + " 12"
		if utf8.ValidString(name) && !strings.ContainsRune(name, 0) && text != strings.Join(strings.Fields(want), " ") {
			t.Fatalf("name %q renders as %q, want %q:\n%s", name, text, want, md.Bytes())
		}

		var h bytes.Buffer
		if err := tb.WriteHTML(&h); err != nil {
			t.Fatal(err)
		}
		text, tags = htmlTextAndTags(t, h.Bytes())
		for tag := range tags {
			switch tag {
			case "table", "caption", "thead", "tbody", "tr", "th", "td":
			default:
				t.Fatalf("name %q: HTML has a <%s>: %s", name, tag, h.Bytes())
			}
		}
		if utf8.ValidString(name) && !strings.ContainsRune(name, 0) && !strings.ContainsRune(name, '\r') &&
			text != strings.Join(strings.Fields(want), " ") {
			t.Fatalf("name %q in HTML reads %q, want %q", name, text, want)
		}
	})
}

// svgUnsafe is what no SVG may carry raw: C0 and C1 control characters
// other than tab and newline, DEL, and the bidirectional embeddings,
// overrides and isolates (Unicode's Bidi_Control characters that reorder
// a line).
func svgUnsafe(r rune) bool {
	return r != '\t' && r != '\n' && (r < 0x20 || r >= 0x7f && r <= 0x9f) ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// svgContent parses svg as strict XML (encoding/xml is the oracle) and
// returns the text of its <text> and <title> elements. It fails on a link,
// script, foreign object or event handler, on a href that is not an
// embedded image, and on a control character or bidi override anywhere in
// the decoded text or attributes.
func svgContent(t *testing.T, name string, svg []byte) (texts, titles []string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	d.Strict = true
	var in string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return texts, titles
		}
		if err != nil {
			t.Fatalf("name %q: SVG is not well-formed XML: %v", name, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "a", "script", "foreignObject", "iframe", "use":
				t.Fatalf("name %q: SVG has an <%s>", name, tok.Name.Local)
			case "text":
				texts = append(texts, "")
			case "title":
				titles = append(titles, "")
			}
			in = tok.Name.Local
			for _, a := range tok.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Value))
				if a.Name.Local == "href" && !strings.HasPrefix(v, "data:image/") || strings.HasPrefix(strings.ToLower(a.Name.Local), "on") {
					t.Fatalf("name %q: SVG <%s> has %s=%q", name, tok.Name.Local, a.Name.Local, a.Value)
				}
				if i := strings.IndexFunc(a.Value, svgUnsafe); i >= 0 {
					t.Fatalf("name %q: SVG <%s %s> holds %U raw", name, tok.Name.Local, a.Name.Local, []rune(a.Value[i:])[0])
				}
			}
		case xml.EndElement:
			in = ""
		case xml.CharData:
			if i := strings.IndexFunc(string(tok), svgUnsafe); i >= 0 {
				t.Fatalf("name %q: SVG text holds %U raw: %q", name, []rune(string(tok[i:]))[0], tok)
			}
			switch in {
			case "text":
				texts[len(texts)-1] += string(tok)
			case "title":
				titles[len(titles)-1] += string(tok)
			}
		}
	}
}

// Any text a figure draws (a client's name, a key, a policy label) or
// names in a tooltip reaches the SVG as well-formed XML that reads as the
// text itself, its control characters and bidi overrides made visible:
// the text layer alone, thousands of inputs a second.
func FuzzFigureText(f *testing.F) {
	for _, n := range names {
		f.Add(n)
	}
	for _, n := range []string{"\x1b]0;pwned\x07", "admin\u202egnp.exe", "\u2066x\u2069", "bad \xff\xfe", "a\r\nb", "\u0085\u009b31m", "\ufffe\uffff", "]]><!--", "&#0;&lt;", ""} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		fig := &Figure{Name: "text", W: 2 * vg.Inch, H: vg.Inch}
		fig.draw = func(c draw.Canvas) {
			fillText(c, textStyle(vg.Points(9)), 0, vg.Inch, name)
			fig.hover = append(fig.hover, hoverMark{Algorithm: name, Kind: name, Title: name})
		}
		svg, err := fig.render("svg", false)
		if err != nil {
			t.Fatal(err)
		}
		texts, titles := svgContent(t, name, svg)
		if len(titles) != 1 {
			t.Fatalf("name %q: %d tooltips, want 1:\n%s", name, len(titles), svg)
		}
		// A name that is clean (valid UTF-8, nothing unsafe, no character
		// XML forbids) comes through exactly: one <text> per line.
		clean := utf8.ValidString(name) && !strings.ContainsFunc(name, func(r rune) bool {
			return svgUnsafe(r) || r == 0xfffe || r == 0xffff
		})
		if !clean {
			return
		}
		if titles[0] != name {
			t.Fatalf("name %q: tooltip reads %q", name, titles[0])
		}
		// (gonum's plain text handler drops trailing line breaks)
		if got := strings.Join(texts, "\n"); got != strings.TrimRight(name, "\n") {
			t.Fatalf("name %q: figure text reads %q:\n%s", name, got, svg)
		}
	})
}

// clientsFigure is the per-client bars of a run with the named clients,
// one legitimate and one abusive each.
func clientsFigure(names ...string) *Figure {
	r := &Run{Spec: &sweep.Spec{Name: "fuzz", Scenario: &model.Scenario{Name: "fuzz", DurationS: 300}}}
	s := &Selected{Why: names[0], Slug: "fuzz"}
	for _, n := range names {
		s.Clients = append(s.Clients, ClientStat{Name: n, Class: model.Legit, Offered: 100, Admitted: 90, Cut: 10},
			ClientStat{Name: n, Class: model.Abusive, Offered: 50, Admitted: 5, Cut: 45})
	}
	return r.ClientsFigure(s)
}

// Any client name in the per-client bars (the axis labels, the title)
// gives well-formed SVG without links, scripts, remote images or a raw
// control character or bidi override: gonum's whole layout, without the
// embedded fonts.
func FuzzClientsFigureSVG(f *testing.F) {
	for _, n := range names {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		svg, err := clientsFigure(name, "other").render("svg", false)
		if err != nil {
			t.Fatal(err)
		}
		svgContent(t, name, svg)
	})
}

// The per-client bars as a report writes them (fonts embedded) with every
// hostile name at once: well-formed, no markup, nothing raw, and each
// name's escaped form is there to read.
func TestClientsFigureHostileNames(t *testing.T) {
	hostile := append([]string{"\x1b]0;pwned\x07 \x1b[2J", "admin\u202egnp.exe", "\u2066x\u2069 \u202a", "\u009b31m \x7f", "bad \xff", "</text><script>alert(1)</script>"}, names...)
	svg, err := clientsFigure(hostile...).Render("svg")
	if err != nil {
		t.Fatal(err)
	}
	texts, _ := svgContent(t, "(all)", svg)
	all := strings.Join(texts, "\n")
	for _, want := range []string{`\x1b]0;pwned\x07 \x1b[2J (legit)`, `admin\u202egnp.exe (abusive)`, `\u2066x\u2069 \u202a`, `\u009b31m \x7f`, `bad \xff`,
		"</text><script>alert(1)</script> (legit)", "<img src=x onerror=alert(1)> (abusive)"} {
		if !strings.Contains(all, want) {
			t.Errorf("figure text lacks %q:\n%s", want, all)
		}
	}
}

// A report over a long scenario (a week of 5,000 clients: 12 GB of
// per-second series) skips the re-simulated lesson tables and timelines
// with a warning instead of running out of memory.
func TestLongScenarioSkipsResimulation(t *testing.T) {
	sc := &model.Scenario{Name: "week", DurationS: 604800}
	for i := range 5000 {
		sc.Clients = append(sc.Clients, model.Client{Name: strings.Repeat("c", 1+i%3) + string(rune('a'+i%26)), Class: model.Legit,
			Segments: []model.Segment{{T0: 0, T1: 604800, Rate: 1}}})
	}
	r := &Run{Spec: &sweep.Spec{Name: "week", Scenario: sc}, Selected: []Selected{{Why: "knee", Slug: "knee"}}}
	lesson, err := r.lessonTables()
	if err != nil || lesson != nil {
		t.Fatalf("lesson tables %v, %v", lesson, err)
	}
	figs, err := r.Figures()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		if strings.HasPrefix(f.Name, "timeline-") {
			t.Fatalf("timeline %s of a week of 5,000 clients", f.Name)
		}
	}
	if len(r.Warnings) != 2 || !strings.Contains(r.Warnings[0], "no lesson tables") || !strings.Contains(r.Warnings[1], "no timelines") {
		t.Fatalf("warnings %q", r.Warnings)
	}
}
