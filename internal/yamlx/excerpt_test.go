package yamlx

import (
	"strings"
	"testing"
)

// Excerpt quotes at most 40 characters and 80 bytes, escaped, and says how
// long the whole was.
func TestExcerpt(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"limit", `"limit"`},
		{strings.Repeat("a", 40), `"` + strings.Repeat("a", 40) + `"`},
		{strings.Repeat("a", 41), `"` + strings.Repeat("a", 40) + `"… (41 bytes)`},
		{strings.Repeat("ü", 40), `"` + strings.Repeat("ü", 40) + `"`},              // 80 bytes
		{strings.Repeat("€", 40), `"` + strings.Repeat("€", 26) + `"… (120 bytes)`}, // 3 bytes each
		{"\x1b[2J" + strings.Repeat("x", 100), `"\x1b[2J` + strings.Repeat("x", 36) + `"… (104 bytes)`},
		{"a\xffb", `"a\xffb"`},
	} {
		if got := Excerpt(c.in); got != c.want {
			t.Errorf("Excerpt(%.20q) = %s, want %s", c.in, got, c.want)
		}
	}
}
