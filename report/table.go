// Package report turns ratesweep results into tables, plots and pages. It
// reads Parquet run directories (never the runner) and the model's values.
package report

import (
	"fmt"
	"html"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ratesweep/ratesweep/internal/markdown"
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

// mdEscape makes s literal text in Markdown (internal/markdown.Escape).
func mdEscape(s string) string { return markdown.Escape(s) }

// EscapeMarkdown escapes s for a Markdown paragraph or table cell, as the
// tables' WriteMarkdown does.
func EscapeMarkdown(s string) string { return markdown.Escape(s) }

// visible is s on one line, its control characters and bidirectional
// overrides written as visible text (internal/markdown.Visible).
func visible(s string) string { return markdown.Visible(s) }

// CodeSpan returns s as a Markdown code span that its content cannot close
// (internal/markdown.CodeSpan).
func CodeSpan(s string) string { return markdown.CodeSpan(s) }
