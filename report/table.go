// Package report turns ratesweep results into tables, plots and pages. It
// reads Parquet run directories (never the runner) and the model's values.
package report

import (
	"fmt"
	"html"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ratesweep/ratesweep/internal/textsafe"
)

// Table is a titled grid of cells. Columns whose Right flag is set are
// right-aligned (numbers); the others are left-aligned (names).
type Table struct {
	Title   string
	Note    string // printed under the table, may be empty
	Headers []string
	Right   []bool
	Rows    [][]string
}

// AddRow appends a row; cells are formatted with fmt.Sprint unless strings.
func (t *Table) AddRow(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		if s, ok := c.(string); ok {
			row[i] = s
		} else {
			row[i] = fmt.Sprint(c)
		}
	}
	t.Rows = append(t.Rows, row)
}

func (t *Table) right(i int) bool { return i < len(t.Right) && t.Right[i] }

// WriteText renders the table with aligned columns for a terminal.
func (t *Table) WriteText(w io.Writer) error {
	width := make([]int, len(t.Headers))
	for i, h := range t.Headers {
		width[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], utf8.RuneCountInString(c))
			}
		}
	}
	var b strings.Builder
	if t.Title != "" {
		b.WriteString(t.Title + "\n\n")
	}
	line := func(cells []string) {
		var l strings.Builder
		for i, c := range cells {
			if i >= len(width) {
				break
			}
			if i > 0 {
				l.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if t.right(i) {
				l.WriteString(pad + c)
			} else {
				l.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	line(t.Headers)
	rule := make([]string, len(width))
	for i, n := range width {
		rule[i] = strings.Repeat("-", n)
	}
	line(rule)
	for _, r := range t.Rows {
		line(r)
	}
	if t.Note != "" {
		b.WriteString(t.Note + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown renders the table as GitHub-flavoured Markdown.
func (t *Table) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	if t.Title != "" {
		b.WriteString("**" + mdEscape(t.Title) + "**\n\n")
	}
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + mdEscape(c) + " |")
		}
		b.WriteString("\n")
	}
	row(t.Headers)
	b.WriteString("|")
	for i := range t.Headers {
		if t.right(i) {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		row(r)
	}
	if t.Note != "" {
		b.WriteString("\n" + mdEscape(t.Note) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteHTML renders the table as an HTML fragment; every cell is escaped.
func (t *Table) WriteHTML(w io.Writer) error {
	var b strings.Builder
	b.WriteString("<table>\n")
	if t.Title != "" {
		b.WriteString("<caption>" + html.EscapeString(visible(t.Title)) + "</caption>\n")
	}
	b.WriteString("<thead><tr>")
	for i, h := range t.Headers {
		b.WriteString(cell("th", h, t.right(i)))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range t.Rows {
		b.WriteString("<tr>")
		for i, c := range r {
			b.WriteString(cell("td", c, t.right(i)))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	if t.Note != "" {
		b.WriteString("<p class=\"note\">" + html.EscapeString(visible(t.Note)) + "</p>\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cell(tag, s string, right bool) string {
	attr := ""
	if right {
		attr = ` class="num"`
	}
	return "<" + tag + attr + ">" + html.EscapeString(visible(s)) + "</" + tag + ">"
}

// mdEscape makes s literal text in a Markdown table cell, heading or
// paragraph (GitHub-flavoured): no link, image, emphasis, code span, HTML,
// entity or autolink can start in it, and plain names stay readable. Line
// breaks become spaces, "<" and ">" entities; "\\", "`", "*", "[", "]", "|"
// and "~" are backslash-escaped, and so are "_" at a word boundary, "&"
// before a name or "#", the ":" of "://", the "." of "www." and "@" (so
// that autolinks do not fire), and a start that would open a block (a
// heading, list or quote). Control characters and bidirectional overrides
// become visible text first (\x1b, \u202e).
func mdEscape(s string) string {
	s = visible(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	// alnum reports whether a letter or digit ends s[:i] (before) or starts
	// s[i:]; invalid UTF-8 and punctuation are not.
	alnum := func(i int, before bool) bool {
		var r rune
		switch {
		case before && i > 0:
			r, _ = utf8.DecodeLastRuneInString(s[:i])
		case !before && i < len(s):
			r, _ = utf8.DecodeRuneInString(s[i:])
		default:
			return false
		}
		return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
	}
	lead := len(s) - len(strings.TrimLeft(s, " \t"))
	// blank reports whether s ends or has a space or tab at i (after a
	// list marker or "#" that starts a block).
	blank := func(i int) bool { return i >= len(s) || s[i] == ' ' || s[i] == '\t' }
	for i := 0; i < len(s); i++ {
		c := s[i]
		esc := false
		switch c {
		case '\n', '\r':
			b.WriteByte(' ')
			continue
		case '<':
			b.WriteString("&lt;")
			continue
		case '>':
			if i == lead {
				esc = true // a quote
				break
			}
			b.WriteString("&gt;")
			continue
		case '\\', '`', '*', '[', ']', '|', '~', '@':
			esc = true
		case '_':
			esc = !alnum(i, true) || !alnum(i+1, false)
		case '&':
			esc = alnum(i+1, false) || i+1 < len(s) && s[i+1] == '#'
		case ':':
			esc = strings.HasPrefix(s[i:], "://")
		case '.':
			esc = i >= 3 && strings.EqualFold(s[i-3:i], "www")
		case '#':
			j := i
			for j < len(s) && s[j] == '#' {
				j++
			}
			esc = i == lead && j-i <= 6 && blank(j)
		case '-', '+':
			esc = i == lead && blank(i+1)
		}
		if i == lead && c >= '0' && c <= '9' {
			// "1." or "1)" at the start is an ordered list.
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j < len(s) && (s[j] == '.' || s[j] == ')') && blank(j+1) {
				b.WriteString(s[i:j])
				b.WriteByte('\\')
				i = j - 1
				continue
			}
		}
		if esc {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// EscapeMarkdown escapes s for a Markdown paragraph or table cell, as the
// tables' WriteMarkdown does.
func EscapeMarkdown(s string) string { return mdEscape(s) }

// spaces turns the line breaks and page breaks that a name may hold into
// spaces: a cell, title or code span is one line.
var spaces = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\v", " ", "\f", " ")

// visible is s on one line, its control characters and bidirectional
// overrides written as visible text (\x1b, \u202e).
func visible(s string) string {
	if textsafe.Clean(s) && !strings.ContainsAny(s, "\n") {
		return s
	}
	return textsafe.Escape(spaces.Replace(s))
}

// CodeSpan returns s as a Markdown code span that its content cannot close:
// the fence is one backtick longer than the longest run of backticks in s,
// and a space pads content that starts or ends with a backtick. Line breaks
// become spaces (a blank line would end the span), control characters and
// bidirectional overrides visible text.
func CodeSpan(s string) string {
	s = visible(s)
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (len(s) > 1 && strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ")) {
		pad = " "
	}
	return fence + pad + s + pad + fence
}
