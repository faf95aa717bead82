package ingest

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// reasonTooLong is the reason of a line longer than max_line_bytes.
const reasonTooLong = "line exceeds max_line_bytes"

// maxReasons bounds the distinct reasons kept; others count as "other".
const maxReasons = 32

// countReason adds one malformed line to its reason: the message with quoted
// values and numbers elided, so that lines failing the same way share one
// count ("time \"…\" is not RFC 3339").
func countReason(m map[string]int64, msg string) map[string]int64 {
	if m == nil {
		m = map[string]int64{}
	}
	var buf [128]byte
	r := appendReason(buf[:0], msg)
	if _, ok := m[string(r)]; ok {
		m[string(r)]++ // a reason seen before: no string allocated
		return m
	}
	name := string(r)
	if len(m) >= maxReasons {
		name = "other"
	}
	m[name]++
	return m
}

func reasonOf(msg string) string {
	var buf [128]byte
	return string(appendReason(buf[:0], msg))
}

// appendReason appends msg's reason to b: quoted values and numbers
// elided, at most 100 bytes, valid UTF-8.
func appendReason(b []byte, msg string) []byte {
	start := len(b)
	inQuote, inDigits := false, false
	for i := 0; i < len(msg) && len(b)-start <= 100; i++ {
		c := msg[i]
		switch {
		case inQuote:
			if c == '\\' {
				i++
			} else if c == '"' {
				inQuote = false
				b = append(b, "…\""...)
			}
			continue
		case c == '"':
			inQuote = true
			b = append(b, '"')
			continue
		case c >= '0' && c <= '9':
			if !inDigits {
				b = append(b, 'N')
			}
			inDigits = true
			continue
		}
		inDigits = false
		b = append(b, c)
	}
	if inQuote {
		b = append(b, "…\""...)
	}
	if len(b)-start > 100 {
		b = b[:start+100]
	}
	if !utf8.Valid(b[start:]) {
		b = append(b[:start], bytes.ToValidUTF8(b[start:], nil)...)
	}
	return b
}

// MalformedLimit is the --max-malformed bound: a count, or a fraction of
// the lines that hold requests or are malformed.
type MalformedLimit struct {
	Count    int64   // used when Fraction < 0
	Fraction float64 // 0..1; < 0 when Count applies
}

// DefaultMalformedLimit is 1% of the lines.
var DefaultMalformedLimit = MalformedLimit{Fraction: 0.01}

// ParseMalformedLimit parses "N" (lines) or "P%" (a percentage of lines).
func ParseMalformedLimit(s string) (MalformedLimit, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v < 0 || v > 100 || v != v {
			return MalformedLimit{}, fmt.Errorf("max-malformed %q: want N or P%% with 0 <= P <= 100", s)
		}
		return MalformedLimit{Fraction: v / 100}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return MalformedLimit{}, fmt.Errorf("max-malformed %q: want N (lines) or P%% (of the lines)", s)
	}
	return MalformedLimit{Count: n, Fraction: -1}, nil
}

func (l MalformedLimit) String() string {
	if l.Fraction >= 0 {
		return strconv.FormatFloat(l.Fraction*100, 'f', -1, 64) + "%"
	}
	return strconv.FormatInt(l.Count, 10)
}

// Exceeded reports whether the stats' malformed lines are more than the
// limit allows: a fraction applies to the lines that are requests or
// malformed (not headers or blank lines).
func (l MalformedLimit) Exceeded(s *Stats) bool {
	if l.Fraction < 0 {
		return s.Malformed > l.Count
	}
	n := s.Requests + s.Malformed
	return n > 0 && float64(s.Malformed) > l.Fraction*float64(n)
}

// MalformedError says that a log has more malformed lines than allowed,
// naming the first ones with their line numbers.
func (l MalformedLimit) MalformedError(s *Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d lines are malformed, more than --max-malformed %s allows", s.Malformed, s.Requests+s.Malformed, l)
	for _, e := range s.Samples {
		fmt.Fprintf(&b, "\n  line %d: %s: %s", e.Line, e.Msg, e.Excerpt)
	}
	b.WriteString("\n  (raise --max-malformed, or fix the format or field mapping)")
	return b.String()
}

// ReasonsSorted lists the reasons by count, descending, then name.
func (s *Stats) ReasonsSorted() []string {
	rs := slices.Collect(maps.Keys(s.Reasons))
	slices.SortFunc(rs, func(a, b string) int {
		if s.Reasons[a] != s.Reasons[b] {
			if s.Reasons[a] > s.Reasons[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return rs
}

// Accounting is a log's line accounting as written into a run's manifest
// and Parquet metadata: every line read is used, malformed or filtered
// (or blank).
type Accounting struct {
	Log         string           `json:"log"`
	Format      string           `json:"format"`
	Lines       int64            `json:"lines"`
	Used        int64            `json:"used"`
	Malformed   int64            `json:"malformed"`
	ByReason    map[string]int64 `json:"malformed_by_reason,omitempty"`
	Filtered    int64            `json:"filtered"`
	Blank       int64            `json:"blank"`
	Continued   int64            `json:"continued,omitempty"` // CSV lines inside a quoted field
	OutOfOrder  int64            `json:"out_of_order,omitempty"`
	InvalidUTF8 int64            `json:"invalid_utf8,omitempty"`
	FirstBad    []LineError      `json:"first_malformed,omitempty"`
	// OverlayRequests are the requests an overlay added to the log's.
	OverlayRequests int64 `json:"overlay_requests,omitempty"`
	// Logs are each log's own accounting when a traffic section lists
	// several logs (the fields above are their sums).
	Logs []Accounting `json:"logs,omitempty"`
}

// Accounting returns the traffic's line accounting.
func (t *Traffic) Accounting() Accounting {
	s := &t.Stats
	return Accounting{Log: t.Source, Format: t.Format.String(), Lines: s.Lines, Used: s.Requests, Malformed: s.Malformed,
		ByReason: s.Reasons, Filtered: s.Filtered, Blank: s.Blank, Continued: s.Continued, OutOfOrder: s.OutOfOrder,
		InvalidUTF8: s.InvalidUTF8, FirstBad: s.Samples, OverlayRequests: t.OverlayRequests}
}

// SumAccounting adds up the accounting of several logs (one log: itself).
// Logs lists every log's own accounting.
func SumAccounting(accs []Accounting) Accounting {
	if len(accs) == 1 {
		return accs[0]
	}
	var s Accounting
	var names, formats []string
	for _, a := range accs {
		names = append(names, a.Log)
		if !slices.Contains(formats, a.Format) {
			formats = append(formats, a.Format)
		}
		s.Lines += a.Lines
		s.Used += a.Used
		s.Malformed += a.Malformed
		s.Filtered += a.Filtered
		s.Blank += a.Blank
		s.Continued += a.Continued
		s.OutOfOrder += a.OutOfOrder
		s.InvalidUTF8 += a.InvalidUTF8
		s.OverlayRequests += a.OverlayRequests
		for r, n := range a.ByReason {
			if s.ByReason == nil {
				s.ByReason = map[string]int64{}
			}
			s.ByReason[r] += n
		}
	}
	s.Log, s.Format = strings.Join(names, ", "), strings.Join(formats, ", ")
	s.Logs = accs
	return s
}
