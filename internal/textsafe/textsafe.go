// Package textsafe escapes what must never reach an output raw: control
// characters, which drive terminals and log viewers, and the bidirectional
// overrides and isolates, which reorder how a line reads (Trojan Source).
package textsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Unsafe reports a rune that Escape escapes: a C0 or C1 control character
// other than newline and tab, DEL, and the bidirectional embeddings,
// overrides and isolates U+202A–U+202E and U+2066–U+2069.
func Unsafe(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r):
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Clean reports whether s is valid UTF-8 without an unsafe rune: Escape
// returns it unchanged.
func Clean(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, Unsafe)
}

// Escape returns s with every unsafe rune written as visible text, \xNN
// below U+0080 and \uNNNN above, and every byte of invalid UTF-8 as \xNN.
func Escape(s string) string {
	if Clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case Unsafe(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case Unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
