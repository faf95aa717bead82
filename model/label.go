package model

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Canonical is the canonical identity of a policy, e.g.
// "sliding_window window_s=60 limit=600": the algorithm, then every
// parameter that applies to it in column order (Params), with optional
// parameters left out where they hold their default. It is the points
// column `policy`, the label `check` prints and the key that joins runs.
func (p Policy) Canonical() string {
	return string(p.AppendCanonical(nil))
}

// AppendCanonical appends Canonical's label to b (the writer calls it for
// every point: no allocation beyond b's growth, no lookup by name).
func (p Policy) AppendCanonical(b []byte) []byte {
	if p.Stack != nil {
		return p.appendStackLabel(b)
	}
	var buf [32]float64
	vals := buf[:]
	if len(Params) > len(buf) {
		vals = make([]float64, len(Params))
	}
	p.Values(vals)
	b = AppendBlockLevels(AppendLabel(b, p.Algorithm, vals), p)
	if p.CountIf != "" {
		b = append(append(b, " count_if="...), p.CountIf...)
	}
	return b
}

// AppendLabel is AppendCanonical for a policy of algorithm a whose Values
// are vals (len(Params) of them), for callers that have them already.
func AppendLabel(b []byte, a Algorithm, vals []float64) []byte {
	if int(a) >= len(labelNames) || a == 0 {
		return append(b, a.String()...)
	}
	b = append(b, labelNames[a]...)
	for _, lp := range labelParams[a] {
		prm := &Params[lp.index]
		v := vals[lp.index]
		if lp.optional && v == prm.Default {
			continue
		}
		b = appendParam(b, prm, v)
	}
	return b
}

// LabelAppender appends the labels of consecutive policies (AppendLabel)
// to one buffer, copying from the label before the part that the two share:
// a grid's points differ mostly in their last parameter, so most labels
// format one number. The zero value is ready; Reset when the buffer is not
// the one the last Append returned.
type LabelAppender struct {
	alg   Algorithm
	vals  []float64 // the previous label's values (by Params index)
	start int       // the previous label's offset in the buffer
	ends  []int     // its end after each of alg's labelParams, relative to start (-1 index: the name)
	ok    bool
}

// Reset forgets the previous label.
func (l *LabelAppender) Reset() { l.ok = false }

// Append is AppendLabel(b, a, vals).
func (l *LabelAppender) Append(b []byte, a Algorithm, vals []float64) []byte {
	if int(a) >= len(labelNames) || a == 0 {
		l.ok = false
		return AppendLabel(b, a, vals)
	}
	lps := labelParams[a]
	start, keep := len(b), -1 // labelParams[:keep+1] equal to the previous label's
	if l.ok && l.alg == a {
		for keep+1 < len(lps) {
			i := lps[keep+1].index
			if math.Float64bits(vals[i]) != math.Float64bits(l.vals[i]) {
				break
			}
			keep++
		}
	}
	if l.ok && l.alg == a && keep+1 < len(lps) {
		if b, ok := l.appendOne(b, lps, keep+1, vals); ok {
			return b
		}
	}
	l.ends = slices.Grow(l.ends[:0], len(lps)+1)[:len(lps)+1]
	if l.ok && l.alg == a {
		n := len(labelNames[a])
		if keep >= 0 {
			n = l.ends[keep+1]
		}
		b = append(b, b[l.start:l.start+n]...)
	} else {
		b = append(b, labelNames[a]...)
		keep = -1
	}
	l.ends[0] = len(labelNames[a])
	for i := keep + 1; i < len(lps); i++ {
		lp := lps[i]
		prm := &Params[lp.index]
		if v := vals[lp.index]; !lp.optional || v != prm.Default {
			b = appendParam(b, prm, v)
		}
		l.ends[i+1] = len(b) - start
	}
	l.vals = append(l.vals[:0], vals...)
	l.alg, l.start, l.ok = a, start, true
	return b
}

// AppendNext is Append for a policy whose values differ from those of the
// previous Append's policy in parameter prm (an index in Params) alone, or
// in any when prm is -1 (a grid that steps one axis knows which): the
// label's other parameters are not compared again.
func (l *LabelAppender) AppendNext(b []byte, a Algorithm, vals []float64, prm int) []byte {
	if prm >= 0 && l.ok && l.alg == a && int(a) < len(labelPos) && labelPos[a] != nil {
		if m := labelPos[a][prm]; m >= 0 {
			if b, ok := l.replaceOne(b, labelParams[a], int(m), vals); ok {
				return b
			}
		}
	}
	return l.Append(b, a, vals)
}

// labelPos is, per algorithm and parameter (Params index), the
// parameter's place in the algorithm's labelParams, or -1.
var labelPos [][]int8

// appendOne appends the label that differs from the previous one in
// parameter lps[m] alone, when that parameter is written in both: the
// previous label's text before and after it is copied, and only its value
// is formatted (a grid's innermost axis). It reports false when another
// parameter differs too or an optional one appears or disappears.
func (l *LabelAppender) appendOne(b []byte, lps []labelParam, m int, vals []float64) ([]byte, bool) {
	for k := m + 1; k < len(lps); k++ {
		if i := lps[k].index; math.Float64bits(vals[i]) != math.Float64bits(l.vals[i]) {
			return b, false
		}
	}
	return l.replaceOne(b, lps, m, vals)
}

// replaceOne is appendOne for vals known to equal the previous label's but
// in parameter lps[m].
func (l *LabelAppender) replaceOne(b []byte, lps []labelParam, m int, vals []float64) ([]byte, bool) {
	lp := lps[m]
	prm := &Params[lp.index]
	v := vals[lp.index]
	if lp.optional && (v == prm.Default || l.vals[lp.index] == prm.Default) {
		return b, false
	}
	start := len(b)
	prev := b[l.start:] // the previous label (b is the buffer it was appended to)
	if old := l.vals[lp.index]; v == old+1 && !math.Signbit(old) && old < 1<<52 && old == math.Trunc(old) && prm.Values == nil {
		// The next whole number: the previous text with its decimal
		// digits incremented (a grid's step of 1), in place unless the
		// number grows a digit.
		b = append(b, prev[:l.ends[len(lps)]]...)
		if incrementDigits(b[start+l.ends[m] : start+l.ends[m+1]]) {
			l.vals[lp.index] = v
			l.start = start
			return b, true
		}
		b = append(b[:start], prev[:l.ends[m+1]]...)
		b = incrementDecimal(b, start+l.ends[m])
	} else {
		b = append(b, prev[:l.ends[m]]...)
		b = appendParam(b, prm, v)
	}
	delta := len(b) - start - l.ends[m+1]
	b = append(b, prev[l.ends[m+1]:l.ends[len(lps)]]...)
	for k := m + 1; k <= len(lps); k++ {
		l.ends[k] += delta
	}
	l.vals[lp.index] = v
	l.start = start
	return b, true
}

// incrementDigits adds 1 to the decimal number that ends d in place and
// reports whether it fit (false on a carry out of its first digit: d is
// then left with that number's digits zeroed).
func incrementDigits(d []byte) bool {
	for i := len(d) - 1; i >= 0; i-- {
		switch c := d[i]; {
		case c == '9':
			d[i] = '0'
		case c >= '0' && c <= '8':
			d[i]++
			return true
		default:
			return false
		}
	}
	return false
}

// incrementDecimal adds 1 to the decimal number that ends b (its digits
// start after b[from:]'s last non-digit), growing it by a digit on a carry
// out of the first.
func incrementDecimal(b []byte, from int) []byte {
	i := len(b) - 1
	for ; i >= from && b[i] == '9'; i-- {
		b[i] = '0'
	}
	if i >= from && b[i] >= '0' && b[i] <= '8' {
		b[i]++
		return b
	}
	// All nines: 99 -> 100.
	b = append(b, '0')
	b[i+1] = '1'
	return b
}

// The label tables, by algorithm: labelParams lists the parameters it
// takes in column order (their index in Params) and whether each is
// optional; labelNames are the names (without a lookup).
var (
	labelParams [][]labelParam
	labelNames  []string
)

// buildLabelTables fills labelParams, labelNames and labelPos from the
// registry (again when an algorithm is registered).
func buildLabelTables() {
	n := len(registry)
	labelParams, labelNames, labelPos = make([][]labelParam, n), make([]string, n), make([][]int8, n)
	for _, a := range Algorithms {
		for j, prm := range Params {
			if a.Takes(prm.Name) {
				labelParams[a] = append(labelParams[a], labelParam{j, !slices.Contains(a.Params(), prm.Name)})
			}
		}
		labelNames[a] = a.String()
	}
	for _, a := range Algorithms {
		labelPos[a] = make([]int8, len(Params))
		for j := range labelPos[a] {
			labelPos[a][j] = int8(slices.IndexFunc(labelParams[a], func(lp labelParam) bool { return lp.index == j }))
		}
	}
}

type labelParam struct {
	index    int // in Params
	optional bool
}

// appendParam appends " name=value": enumerated values by name, numbers in
// the shortest decimal form that reads back exactly (whole numbers below
// 2^53 formatted as integers, which is the same text, faster).
func appendParam(b []byte, prm *Param, v float64) []byte {
	b = append(b, ' ')
	b = append(b, prm.Name...)
	b = append(b, '=')
	if prm.Values != nil {
		if n := prm.ParamName(v); n != "" {
			return append(b, n...)
		}
	}
	if i := int64(v); float64(i) == v && i > -1<<53 && i < 1<<53 && (i != 0 || !math.Signbit(v)) {
		return strconv.AppendInt(b, i, 10)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// PolicyLabel is Canonical for a policy given by its algorithm name and its
// parameter values (value reports false for a parameter that does not
// apply; enumerated parameters are given by their index). Numbers are
// written in the shortest decimal form that reads back exactly ("0.5",
// "1000000"), names of enumerated parameters as names.
func PolicyLabel(algorithm string, value func(name string) (float64, bool)) string {
	var optional []string
	if alg, known := ParseAlgorithm(algorithm); known {
		optional = alg.OptionalParams()
	}
	b := []byte(algorithm)
	for _, prm := range Params {
		v, ok := value(prm.Name)
		if !ok || (v == prm.Default && slices.Contains(optional, prm.Name)) {
			continue
		}
		b = appendParam(b, &prm, v)
	}
	return string(b)
}

// ParseLabel reads a label written by Canonical (or typed by a user: the
// parameters may come in any order; optional ones may be left out) and
// returns the policy, validated.
func ParseLabel(s string) (Policy, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return Policy{}, fmt.Errorf("empty policy (want e.g. %q)", "sliding_window window_s=60 limit=600")
	}
	if f[0] == allOfAlgorithm.Name {
		return parseStackLabel(s)
	}
	alg, ok := ParseAlgorithm(f[0])
	if !ok {
		names := make([]string, len(Algorithms))
		for i, a := range Algorithms {
			names[i] = a.String()
		}
		return Policy{}, fmt.Errorf("policy %q: unknown algorithm %q (one of %s)", s, f[0], strings.Join(names, ", "))
	}
	p := Policy{Algorithm: alg}
	seen := map[string]bool{}
	for _, kv := range f[1:] {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			return Policy{}, fmt.Errorf("policy %q: %q is not name=value", s, kv)
		}
		if name == blockLevelsName && !seen[name] { // penaltybox.go
			seen[name] = true
			ls, err := parseBlockLevels(val)
			if err != nil {
				return Policy{}, fmt.Errorf("policy %q: %w", s, err)
			}
			p.BlockLevels = ls
			continue
		}
		if name == "count_if" && p.CountIf == "" {
			set, err := parseStatusSet(val)
			if err != nil {
				return Policy{}, fmt.Errorf("policy %q: count_if: %v", s, err)
			}
			p.CountIf = set.String()
			continue
		}
		prm, known := LookupParam(name)
		if !known || !alg.Takes(name) {
			return Policy{}, fmt.Errorf("policy %q: %s does not take %q (it takes %s)", s, alg, name,
				strings.Join(append(alg.Params(), alg.OptionalParams()...), ", "))
		}
		if seen[name] {
			return Policy{}, fmt.Errorf("policy %q: %s given twice", s, name)
		}
		seen[name] = true
		var v float64
		if prm.Values != nil {
			if v, ok = prm.ParamValue(val); !ok {
				return Policy{}, fmt.Errorf("policy %q: %s must be one of %s, got %q", s, name, strings.Join(prm.Values, ", "), val)
			}
		} else {
			var err error
			if v, err = strconv.ParseFloat(val, 64); err != nil {
				return Policy{}, fmt.Errorf("policy %q: %s: %q is not a number", s, name, val)
			}
			if (prm.Int || prm.Whole) && v != float64(int64(v)) {
				return Policy{}, fmt.Errorf("policy %q: %s must be a whole number, got %s", s, name, val)
			}
		}
		p.Set(name, v)
	}
	for _, name := range alg.Params() {
		if !seen[name] {
			return Policy{}, fmt.Errorf("policy %q: %s needs %s", s, alg, name)
		}
	}
	if err := p.Validate(); err != nil {
		return Policy{}, fmt.Errorf("policy %q: %w", s, err)
	}
	return p, nil
}
