package yamlx

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxErrors is how many errors of one input a Collector keeps; the rest are
// only counted.
const MaxErrors = 20

// Errors is every error found in one input, in the order the decoder met
// them (at most MaxErrors, More counts the others).
type Errors struct {
	List []*Error
	More int
}

// Error renders one error per line.
func (es *Errors) Error() string {
	lines := make([]string, 0, len(es.List)+1)
	for _, e := range es.List {
		lines = append(lines, e.Error())
	}
	if es.More > 0 {
		lines = append(lines, fmt.Sprintf("and %d more errors", es.More))
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the first *Error.
func (es *Errors) Unwrap() []error {
	out := make([]error, len(es.List))
	for i, e := range es.List {
		out[i] = e
	}
	return out
}

// Collector gathers the errors of one input so that a decoder can go on
// after a bad field and report every error at once. The zero value is ready.
type Collector struct {
	list []*Error
	more int
}

// Add records err (nil is ignored) and reports whether it was an error.
// An *Errors is flattened; any other error becomes an *Error without a line.
func (c *Collector) Add(err error) bool {
	if err == nil {
		return false
	}
	var es *Errors
	if errors.As(err, &es) {
		for _, e := range es.List {
			c.add(e)
		}
		c.more += es.More
		return true
	}
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Msg: err.Error()}
	}
	c.add(e)
	return true
}

func (c *Collector) add(e *Error) {
	for _, have := range c.list {
		if *have == *e {
			return // the same error reached by two ways
		}
	}
	if len(c.list) >= MaxErrors {
		c.more++
		return
	}
	c.list = append(c.list, e)
}

// Errorf records an *Error at node n (see Errorf).
func (c *Collector) Errorf(n *yaml.Node, path, format string, args ...any) {
	c.add(Errorf(n, path, format, args...))
}

// Len is the number of errors recorded (kept or only counted).
func (c *Collector) Len() int { return len(c.list) + c.more }

// Err returns nil, the single *Error, or an *Errors holding all of them.
func (c *Collector) Err() error {
	switch {
	case len(c.list) == 0:
		return nil
	case len(c.list) == 1 && c.more == 0:
		return c.list[0]
	}
	// In file order, then by line (decoders report a missing field at its
	// mapping after the fields inside it).
	files := map[string]int{}
	for _, e := range c.list {
		if _, ok := files[e.File]; !ok {
			files[e.File] = len(files)
		}
	}
	list := slices.Clone(c.list)
	slices.SortStableFunc(list, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(files[a.File], files[b.File]), cmp.Compare(a.Line, b.Line))
	})
	return &Errors{List: list, More: c.more}
}

// Suggest returns the candidate closest to got when it is close enough to be
// a likely typo ("windw_s" → "window_s", "token-bucket" → "token_bucket",
// "window" → "window_s"), or "".
func Suggest(got string, candidates []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "_", " ", "_").Replace(s))
	}
	g := norm(got)
	best, bestD := "", 1<<30
	for _, c := range candidates {
		n := norm(c)
		d := distance(g, n)
		if d > 0 && len(g) >= 3 && strings.HasPrefix(n, g) && len(n)-len(g) <= 3 {
			d = 1 // window → window_s, rate → rate_s
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	limit := 1
	switch {
	case len(g) >= 9:
		limit = 3
	case len(g) >= 4:
		limit = 2
	}
	if best == "" || bestD > limit {
		return ""
	}
	return best
}

// distance is the optimal string alignment distance between a and b
// (insertions, deletions, substitutions and swaps of neighbours).
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// DidYouMean is " (did you mean "x"?)" for the closest candidate, or "".
func DidYouMean(got string, candidates []string) string {
	if s := Suggest(got, candidates); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}
