package ingest

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// The reason of a message is what the string-building version (below, the
// one before appendReason) made of it, on random messages with quotes,
// escapes, digits, invalid UTF-8 and lengths around the 100-byte cut.
func TestReasonOfDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 6))
	alphabet := []string{"a", "b", " ", "\"", "\\", "0", "7", "42", "é", "…", "\xff", "\xe2\x80", ":", "time "}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(80) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		msg := b.String()
		if got, want := reasonOf(msg), reasonOfStrings(msg); got != want {
			t.Fatalf("reasonOf(%q) = %q, want %q", msg, got, want)
		}
	}
}

func reasonOfStrings(msg string) string {
	var b strings.Builder
	inQuote, inDigits := false, false
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		switch {
		case inQuote:
			if c == '\\' {
				i++
			} else if c == '"' {
				inQuote = false
				b.WriteString("…\"")
			}
			continue
		case c == '"':
			inQuote = true
			b.WriteByte('"')
			continue
		case c >= '0' && c <= '9':
			if !inDigits {
				b.WriteByte('N')
			}
			inDigits = true
			continue
		}
		inDigits = false
		b.WriteByte(c)
	}
	if inQuote {
		b.WriteString("…\"")
	}
	r := b.String()
	if len(r) > 100 {
		r = r[:100]
	}
	return strings.ToValidUTF8(r, "")
}
