// Package markdown escapes text for GitHub-flavoured Markdown: one
// escaper for every table, paragraph and code span ratesweep writes, so no
// name from a spec or a log can start markup in a report, a check summary
// or a recommendation.
package markdown

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ratesweep/ratesweep/internal/textsafe"
)

// Escape makes s literal text in a Markdown table cell, heading or
// paragraph (GitHub-flavoured): no link, image, emphasis, code span, HTML,
// entity or autolink can start in it, and plain names stay readable. Line
// breaks become spaces, "<" and ">" entities; "\\", "`", "*", "[", "]", "|"
// and "~" are backslash-escaped, and so are "_" at a word boundary, "&"
// before a name or "#", the ":" of "://", the "." of "www." and "@" (so
// that autolinks do not fire), and a start that would open a block (a
// heading, list or quote). Control characters and bidirectional overrides
// become visible text first (\x1b, \u202e).
func Escape(s string) string {
	s = Visible(s)
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

// spaces turns the line breaks and page breaks that a name may hold into
// spaces: a cell, title or code span is one line.
var spaces = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\v", " ", "\f", " ")

// Visible is s on one line, its control characters and bidirectional
// overrides written as visible text (\x1b, \u202e).
func Visible(s string) string {
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
	s = Visible(s)
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
