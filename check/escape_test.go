package check

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"golang.org/x/net/html"
)

// Hostile injections: a backtick closes a code span and lets markup in.
const (
	injectName = "q3`<h1>owned</h1>"
	injectRun  = "``<img src=x onerror=alert(1)>`` [x](https://evil.example) \x1b]0;title\x07 admin\u202Egnp.exe"
)

// renderedTags renders Markdown as GitHub does and returns the elements
// and the text.
func renderedTags(t *testing.T, md string) (map[string]bool, string) {
	t.Helper()
	var out bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert([]byte(md), &out); err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	var text strings.Builder
	z := html.NewTokenizer(&out)
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatal(z.Err())
			}
			return tags, text.String()
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			tags[string(name)] = true
		case html.TextToken:
			text.Write(z.Text())
		}
	}
}

func TestMarkdownInjection(t *testing.T) {
	res := checkFixture(Options{})
	res.Baseline = RunInfo{Dir: "/runs/base`", Spec: injectName}
	res.Run = RunInfo{Dir: "/runs/`x", Spec: injectRun}
	res.Warnings = []string{"<img src=x onerror=alert(1)> " + injectName}
	var b bytes.Buffer
	if err := Write(&b, res, "markdown", 0); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if strings.ContainsAny(md, "\x1b\x07\u202E") {
		t.Errorf("raw control or bidi character in the Markdown:\n%q", md)
	}
	tags, text := renderedTags(t, md)
	for tag := range tags {
		switch tag {
		case "h3", "ul", "li", "code", "strong", "p", "table", "thead", "tbody", "tr", "th", "td":
		default:
			t.Errorf("the Markdown renders a <%s>:\n%s", tag, md)
		}
	}
	for _, want := range []string{injectName, "<img src=x onerror=alert(1)>", `\x1b]0;title\x07`, `admin\u202egnp.exe`} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered text lacks %q:\n%s", want, text)
		}
	}
}
