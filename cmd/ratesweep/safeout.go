package main

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// escapeWriter writes to w with control characters other than newline and
// tab escaped (\x1b, \u009b) and invalid UTF-8 bytes as \xNN: log keys,
// client names and file names reach stdout, and must not drive the terminal
// (window titles, clearing the screen) or a log viewer.
type escapeWriter struct{ w io.Writer }

func (e escapeWriter) Write(p []byte) (int, error) {
	s := string(p)
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unsafeRune) {
		return e.w.Write(p)
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	if _, err := io.WriteString(e.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// unsafeRune reports a control character other than newline and tab.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) && r != '\n' && r != '\t'
}
