package sweep

// A sweep entry's axes: lists, steps, linear and log ranges, and their canonical YAML.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// AxisKind is how an axis was written in the spec.
type AxisKind uint8

const (
	AxisList   AxisKind = iota // a scalar or a list
	AxisStep                   // {from, to, step}, inclusive
	AxisLinear                 // {from, to, count}
	AxisLog                    // {from, to, count, scale: log}
)

// Axis is one parameter's values.
type Axis struct {
	Param  string
	Kind   AxisKind
	From   float64 // range forms only
	To     float64
	Step   float64 // AxisStep
	Count  int     // AxisLinear, AxisLog: requested count (before de-duplication)
	Values []float64
}

// MaxAxisValues bounds one axis (the grid itself is never materialised).
const MaxAxisValues = 10_000_000

var rangeKeys = []string{"from", "to", "step", "count", "scale"}

func decodeAxis(n *yaml.Node, p string, prm model.Param) (Axis, error) {
	if prm.Values != nil {
		return decodeEnumAxis(n, p, prm)
	}
	ax := Axis{Param: prm.Name}
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := yamlx.Float(n, p)
		if err != nil {
			return ax, err
		}
		ax.Values = []float64{v}
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return ax, yamlx.Errorf(n, p, "empty list: an axis needs at least one value")
		}
		if len(n.Content) > MaxAxisValues {
			return ax, yamlx.Errorf(n, p, "more than %d values", MaxAxisValues)
		}
		for i, it := range n.Content {
			v, err := yamlx.Float(it, fmt.Sprintf("%s[%d]", p, i))
			if err != nil {
				return ax, err
			}
			ax.Values = append(ax.Values, v)
		}
	case yaml.MappingNode:
		var err error
		if ax, err = decodeRange(n, p, prm); err != nil {
			return ax, err
		}
	default:
		return ax, yamlx.Errorf(n, p, "expected a number, a list or {from, to, step}")
	}
	for i, v := range ax.Values {
		if err := checkParamValue(prm, v); err != nil {
			vp := p
			if len(ax.Values) > 1 || n.Kind == yaml.SequenceNode {
				vp = fmt.Sprintf("%s[%d]", p, i)
			}
			node := n
			if n.Kind == yaml.SequenceNode {
				node = n.Content[i]
			}
			return ax, yamlx.Errorf(node, vp, "%v", err)
		}
	}
	return ax, nil
}

// decodeEnumAxis reads an enumerated parameter's names: a name or a list.
func decodeEnumAxis(n *yaml.Node, p string, prm model.Param) (Axis, error) {
	ax := Axis{Param: prm.Name}
	one := func(it *yaml.Node, ip string) error {
		s, err := yamlx.Str(it, ip)
		if err != nil {
			return err
		}
		v, ok := prm.ParamValue(s)
		if !ok {
			return yamlx.Errorf(it, ip, "unknown %s %q (one of %s)%s", prm.Name, s, strings.Join(prm.Values, ", "), yamlx.DidYouMean(s, prm.Values))
		}
		ax.Values = append(ax.Values, v)
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return ax, one(n, p)
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return ax, yamlx.Errorf(n, p, "empty list: an axis needs at least one value")
		}
		for i, it := range n.Content {
			if err := one(it, fmt.Sprintf("%s[%d]", p, i)); err != nil {
				return ax, err
			}
		}
		return ax, nil
	}
	return ax, yamlx.Errorf(n, p, "expected one of %s, or a list of them", strings.Join(prm.Values, ", "))
}

func checkParamValue(prm model.Param, v float64) error {
	if prm.MinOpen && v <= prm.Min {
		return fmt.Errorf("must be > %g %s, got %g", prm.Min, prm.Unit, v)
	}
	if !prm.MinOpen && v < prm.Min {
		return fmt.Errorf("must be >= %g %s, got %g", prm.Min, prm.Unit, v)
	}
	if (prm.Int || prm.Whole) && v != math.Trunc(v) {
		return fmt.Errorf("must be a whole number of %s, got %g", prm.Unit, v)
	}
	if math.Abs(v) > 1<<53 {
		return fmt.Errorf("too large: %g", v)
	}
	return nil
}

func decodeRange(n *yaml.Node, p string, prm model.Param) (Axis, error) {
	ax := Axis{Param: prm.Name}
	m, err := yamlx.Mapping(n, p, rangeKeys...)
	if err != nil {
		return ax, err
	}
	num := func(key string) (float64, error) {
		v, err := m.Require(key)
		if err != nil {
			return 0, err
		}
		return yamlx.Float(v, m.FieldPath(key))
	}
	if ax.From, err = num("from"); err != nil {
		return ax, err
	}
	if ax.To, err = num("to"); err != nil {
		return ax, err
	}
	if ax.From > ax.To {
		return ax, yamlx.Errorf(n, p, "from (%g) must not exceed to (%g)", ax.From, ax.To)
	}
	switch {
	case m.Has("step") && m.Has("count"):
		return ax, yamlx.Errorf(n, p, "give either step or count, not both")
	case m.Has("step"):
		if m.Has("scale") {
			return ax, yamlx.Errorf(m.Get("scale"), m.FieldPath("scale"), "scale goes with count, not step")
		}
		if ax.Step, err = num("step"); err != nil {
			return ax, err
		}
		if ax.Step <= 0 {
			return ax, yamlx.Errorf(m.Get("step"), m.FieldPath("step"), "must be > 0, got %g", ax.Step)
		}
		cnt := math.Floor((ax.To-ax.From)/ax.Step*(1+1e-12)) + 1
		if cnt > MaxAxisValues {
			return ax, yamlx.Errorf(n, p, "%g values; at most %d per axis", cnt, MaxAxisValues)
		}
		ax.Kind = AxisStep
		for i := 0; i < int(cnt); i++ {
			ax.Values = append(ax.Values, roundTo(ax.From+float64(i)*ax.Step, ax.Step))
		}
	case m.Has("count"):
		cn := m.Get("count")
		c, err := yamlx.Int(cn, m.FieldPath("count"))
		if err != nil {
			return ax, err
		}
		if c < 1 || c > MaxAxisValues {
			return ax, yamlx.Errorf(cn, m.FieldPath("count"), "must be between 1 and %d, got %d", MaxAxisValues, c)
		}
		ax.Count, ax.Kind = int(c), AxisLinear
		if sn := m.Get("scale"); sn != nil {
			sc, err := yamlx.Str(sn, m.FieldPath("scale"))
			if err != nil {
				return ax, err
			}
			switch sc {
			case "log":
				ax.Kind = AxisLog
				if ax.From <= 0 {
					return ax, yamlx.Errorf(m.Get("from"), m.FieldPath("from"), "must be > 0 on a log scale, got %g", ax.From)
				}
			case "linear":
			default:
				return ax, yamlx.Errorf(sn, m.FieldPath("scale"), "must be log or linear, got %q", sc)
			}
		}
		ax.Values = spaced(ax.From, ax.To, ax.Count, ax.Kind == AxisLog, prm.Int || prm.Whole)
	default:
		return ax, yamlx.Errorf(n, p, "a range needs step or count")
	}
	return ax, nil
}

// roundTo removes float noise from from+i*step at the precision of step.
func roundTo(v, step float64) float64 {
	digits := max(0, 12-int(math.Ceil(math.Log10(math.Abs(step)+1))))
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	return r
}

// spaced returns count values from..to, evenly or log-spaced; whole rounds
// them and drops duplicates (so a log axis of integers may have fewer).
func spaced(from, to float64, count int, log, whole bool) []float64 {
	var out []float64
	for i := range count {
		var v float64
		switch {
		case count == 1:
			v = from
		case log:
			v = from * math.Pow(to/from, float64(i)/float64(count-1))
		default:
			v = from + (to-from)*float64(i)/float64(count-1)
		}
		if i == count-1 && count > 1 {
			v = to
		}
		if whole {
			v = math.Round(v)
		} else {
			v = roundTo(v, math.Max(math.Abs(v), 1e-300)*1e-9)
		}
		if len(out) > 0 && out[len(out)-1] == v {
			continue
		}
		out = append(out, v)
	}
	return out
}

func (a *Axis) yaml() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch a.Kind {
	case AxisStep:
		return fmt.Sprintf("{from: %s, to: %s, step: %s}", f(a.From), f(a.To), f(a.Step))
	case AxisLinear:
		return fmt.Sprintf("{from: %s, to: %s, count: %d}", f(a.From), f(a.To), a.Count)
	case AxisLog:
		return fmt.Sprintf("{from: %s, to: %s, count: %d, scale: log}", f(a.From), f(a.To), a.Count)
	}
	parts := make([]string, len(a.Values))
	prm, ok := model.LookupParam(a.Param)
	if !ok {
		prm, _ = model.LookupStackedParam(a.Param)
	}
	for i, v := range a.Values {
		parts[i] = f(v)
		if name := prm.ParamName(v); name != "" {
			parts[i] = name
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
