package textsafe

import "testing"

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain ü\tname\n", "plain ü\tname\n"},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"\x1b[2J \u009b31m \x7f", `\x1b[2J \u009b31m \x7f`},
		{"admin\u202Egnp.exe", `admin\u202egnp.exe`},
		{"\u2066x\u2069 \u202A\u202B\u202C\u202D", `\u2066x\u2069 \u202a\u202b\u202c\u202d`},
		{"bad \xff\xfe", `bad \xff\xfe`},
		{"\r", `\x0d`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if Clean(c.in) != (c.in == c.want) {
			t.Errorf("Clean(%q) = %v", c.in, Clean(c.in))
		}
	}
}
