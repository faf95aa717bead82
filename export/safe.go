package export

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// What reaches a configuration is either checked against a grammar that
// every target can hold without quoting (zone names, header names,
// numbers), or it is free text (run directories, labels, notes) that
// goes into a comment through hashComment or slashComment, which keep it
// on its line. Nothing else is written. A name that the grammar admits may
// still mean something else to a YAML reader (-, null, true, 0x1F): in
// YAML it is written through yamlScalar, in JSON through encoding/json.

// maxName bounds zone and header names, characters.
const maxName = 64

// maxConfigInt bounds every integer written into a configuration: the
// largest the targets read everywhere (HAProxy parses 32-bit signed
// integers and millisecond timers).
const maxConfigInt = 1<<31 - 1

var (
	// zoneRe is a zone, table, domain or key-prefix name: nginx zone and
	// log_format names, a YAML key, a Redis key prefix.
	zoneRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	// headerRe is a header name: an RFC 9110 token restricted to letters,
	// digits and '-', so that it is also an nginx $http_ variable suffix
	// (with '-' as '_'), an HAProxy fetch argument and a plain YAML scalar.
	headerRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)
)

// checkZone validates Options.Zone.
func checkZone(z string) error {
	if len(z) > maxName || !zoneRe.MatchString(z) {
		return fmt.Errorf("--zone: %s is not a zone name (1 to %d letters, digits, '_' or '-')", quoteShort(z), maxName)
	}
	return nil
}

// checkHeader validates the NAME of a header:NAME key.
func checkHeader(h string) error {
	if len(h) > maxName || !headerRe.MatchString(h) {
		return fmt.Errorf("--key: header name %s is not a header name (a letter, then up to %d letters, digits or '-')", quoteShort(h), maxName-1)
	}
	return nil
}

// quoteShort quotes s for an error message, cut to 40 characters.
func quoteShort(s string) string {
	if r := []rune(s); len(r) > 40 {
		return strconv.Quote(string(r[:40])) + "…"
	}
	return strconv.Quote(s)
}

// checkInts reports the first integer of p's configuration (a rate in
// whole requests, a window, a limit, a burst) beyond maxConfigInt.
func checkInts(target string, p model.Policy) error {
	for _, v := range []struct {
		name string
		v    float64
	}{
		{"window_s", float64(p.WindowS)}, {"limit", float64(p.Limit)}, {"capacity", float64(p.Capacity)},
		{"burst", float64(p.Burst)}, {"delay", float64(min(p.Delay, p.Burst))}, {"rate", p.Rate},
	} {
		if v.v > maxConfigInt {
			return fmt.Errorf("%s: %s %v is beyond what %s reads (at most %d)", p.Canonical(), v.name, v.v, target, maxConfigInt)
		}
	}
	return nil
}

// escapeLine writes s on one line of valid UTF-8: line breaks, other
// control characters and Unicode line and paragraph separators as Go
// escapes (\n, \u2028), a byte that is not UTF-8 as \xNN, a backslash as
// \\. Printable text is unchanged.
func escapeLine(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == '\\' || r == 0x7f || !strconv.IsGraphic(r) && r != ' ' }) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f || r != ' ' && !strconv.IsGraphic(r):
			if r < 0x10000 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hashComment is free text as one '#' comment line (nginx, HAProxy, YAML),
// without its line break.
func hashComment(s string) string { return "# " + escapeLine(s) }

// slashComment is free text as one '//' comment line (Go), without its
// line break.
func slashComment(s string) string { return "// " + escapeLine(s) }

// yamlScalar is s as one YAML scalar that reads back as the string s (a
// key or a value, block or flow context): the YAML encoder's choice, plain
// where that already reads as s, else quoted.
func yamlScalar(s string) string {
	b, err := yaml.Marshal(s)
	if err != nil || strings.Count(string(b), "\n") != 1 {
		return strconv.Quote(s) // unreachable for the names checked above; a double-quoted YAML scalar
	}
	return strings.TrimSuffix(string(b), "\n")
}
