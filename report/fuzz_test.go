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

// Any client name in the per-client bars gives well-formed SVG without
// links, scripts or remote images.
func FuzzClientsFigureSVG(f *testing.F) {
	for _, n := range names {
		f.Add(n)
	}
	r := &Run{Spec: &sweep.Spec{Name: "fuzz", Scenario: &model.Scenario{Name: "fuzz", DurationS: 300}}}
	f.Fuzz(func(t *testing.T, name string) {
		s := &Selected{Why: "fuzz", Slug: "fuzz", Clients: []ClientStat{
			{Name: name, Class: model.Legit, Offered: 100, Admitted: 90, Cut: 10},
			{Name: "other", Class: model.Abusive, Offered: 50, Admitted: 5, Cut: 45},
		}}
		svg, err := r.ClientsFigure(s).Render("svg")
		if err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(bytes.NewReader(svg))
		d.Strict = true
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("name %q: SVG is not well-formed XML: %v", name, err)
			}
			el, ok := tok.(xml.StartElement)
			if !ok {
				continue
			}
			switch el.Name.Local {
			case "a", "script", "foreignObject", "iframe", "use":
				t.Fatalf("name %q: SVG has an <%s>", name, el.Name.Local)
			}
			for _, a := range el.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Value))
				if a.Name.Local == "href" && !strings.HasPrefix(v, "data:image/") || strings.HasPrefix(strings.ToLower(a.Name.Local), "on") {
					t.Fatalf("name %q: SVG <%s> has %s=%q", name, el.Name.Local, a.Name.Local, a.Value)
				}
			}
		}
	})
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
