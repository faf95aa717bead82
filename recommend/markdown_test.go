package recommend

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// The Markdown a renderer draws keeps the text's structure: the summary,
// the choice and each of its details are blocks of their own, the details
// list items nested as the text indents them, and both tables tables.
func TestMarkdownKeepsStructure(t *testing.T) {
	res, err := RecommendDirs(context.Background(), []string{"../configs/baselines/lesson"}, Options{MaxFalseCut: bound("1%")})
	if err != nil {
		t.Fatal(err)
	}
	var text, md, page bytes.Buffer
	Write(&text, res, "text")
	Write(&md, res, "markdown")
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert(md.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	var items, tableRows int
	for _, l := range strings.Split(text.String(), "\n") {
		body := strings.TrimLeft(l, " ")
		switch {
		case strings.HasPrefix(body, "client ") || strings.HasPrefix(body, "choice "):
		case body != l && !strings.HasPrefix(body, "field app"):
			items++
		}
	}
	tableRows = strings.Count(html, "<tr>")
	if got := strings.Count(html, "<li>"); got != items {
		t.Errorf("%d list items, want one per indented line of the text (%d):\n%s", got, items, html)
	}
	if n := strings.Count(html, "<table>"); n != 2 || tableRows != 5+2 {
		t.Errorf("%d tables with %d rows, want the choices' (5 rows) and the clients' (2):\n%s", n, tableRows, html)
	}
	for _, p := range []string{"<p>recommend: 1 run;", "<p>best overall: token_bucket rate=2 capacity=1100</p>"} {
		if !strings.Contains(html, p) {
			t.Errorf("no paragraph %q:\n%s", p, html)
		}
	}
	if !strings.Contains(html, "(61.66%)\n<ul>\n<li>false cut") {
		t.Errorf("a check is not nested under its run:\n%s", html)
	}
}
