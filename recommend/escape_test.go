package recommend

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"golang.org/x/net/html"
)

// Client names and log keys (user agents) are the user's data: in Markdown
// they are text, never markup, and no control or bidi character is raw.
func TestMarkdownEscapesNamesAndKeys(t *testing.T) {
	agents := []string{
		"Mozilla/5.0 `<h1>owned</h1>`",
		"<img src=x onerror=alert(1)>",
		"curl/8.0 | [x](https://evil.example) *bold* \x1b[2J",
		"admin\u202Egnp.exe",
	}
	var clients []ClientCut
	for _, a := range agents {
		clients = append(clients, ClientCut{Client: a, Offered: 100, Cut: 10, Pct: 10, Why: "burst <b>"})
	}
	m := &Measure{Clients: clients, FalseCut: Interval{Mean: 40}}
	c := &Choice{Label: "fixed_window window_s=60 limit=<600>", Algorithm: "fixed_window", Why: "`why`",
		Runs: []RunFit{{Dir: "/runs/<script>alert(1)</script>", Measure: m,
			Checks: []Check{{Constraint: "false cut <= 1%", Unit: "pp"}}}}}
	res := &Result{Runs: []string{"r"}, Constraints: []string{"false cut <= 1%"}, Objective: "missed_pct",
		Policies: 1, Feasible: 1, Overall: c, ByAlgorithm: []*Choice{c}, Notes: []string{"<h2>note</h2>"}}
	var b bytes.Buffer
	if err := Write(&b, res, "markdown"); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if strings.ContainsAny(md, "\x1b\u202E") {
		t.Errorf("raw control or bidi character:\n%q", md)
	}
	var out bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert([]byte(md), &out); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	z := html.NewTokenizer(&out)
	for done := false; !done; {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatal(z.Err())
			}
			done = true
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "p", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "pre", "code": // the layout's own
			default:
				t.Errorf("the Markdown renders a <%s>:\n%s", name, md)
			}
		case html.TextToken:
			text.Write(z.Text())
		}
	}
	for _, want := range []string{"<img src=x onerror=alert(1)>", "Mozilla/5.0 `<h1>owned</h1>`", `admin\u202egnp.exe`, "/runs/<script>alert(1)</script>"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("rendered text lacks %q:\n%s", want, text.String())
		}
	}
}
