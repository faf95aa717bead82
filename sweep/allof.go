package sweep

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// Stacked limits in a spec (docs/stacked-limits.md):
//
//	- all_of:
//	    - {algorithm: fixed_window, window_s: 60, limit: [5, 10]}
//	    - {algorithm: fixed_window, window_s: 60, limit: 10, key: org}
//	  rejected_counts: [all, none]
//
// is one entry of algorithm all_of whose axes are rejected_counts and every
// component's parameters, named all_of[i].name (all_of[0].limit above).

// stackKeys are the keys of a stacked entry.
var stackKeys = []string{"all_of", "rejected_counts"}

// isStackEntry reports whether entry node n is an all_of entry.
func isStackEntry(n *yaml.Node) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "all_of" {
			return true
		}
	}
	return false
}

// decodeStackEntry reads an all_of entry at path p.
func decodeStackEntry(n *yaml.Node, p string) (Entry, error) {
	e := Entry{Algorithm: model.AllOf}
	var c yamlx.Collector
	m, err := yamlx.Mapping(n, p, stackKeys...)
	c.Add(err)
	if m == nil {
		return e, c.Err()
	}
	if rn, err := m.Require("rejected_counts"); !c.Add(err) {
		ax, err := decodeEnumAxis(rn, m.FieldPath("rejected_counts"), model.RejectedCountsParam)
		if !c.Add(err) {
			e.Axes = append(e.Axes, ax)
		}
	} else {
		c.Add(yamlx.Errorf(n, m.FieldPath("rejected_counts"), "say whether a request one component rejects still counts against the others: all or none"))
	}
	items, err := yamlx.Seq(m.Get("all_of"), m.FieldPath("all_of"))
	c.Add(err)
	switch {
	case err == nil && len(items) == 0:
		c.Errorf(m.Get("all_of"), m.FieldPath("all_of"), "at least one component policy ({algorithm: …}) is needed")
	case len(items) > model.MaxComponents:
		c.Errorf(m.Get("all_of"), m.FieldPath("all_of"), "at most %d components, got %d", model.MaxComponents, len(items))
		items = nil
	}
	for i, it := range items {
		ip := fmt.Sprintf("%s[%d]", m.FieldPath("all_of"), i)
		if isStackEntry(it) {
			c.Errorf(it, ip, "a component cannot itself be all_of (list its components in the outer all_of)")
			continue
		}
		ce, err := decodeEntry(it, ip)
		if c.Add(err) {
			continue
		}
		if ce.Algorithm == model.AllOf {
			c.Errorf(it, ip+".algorithm", "a component cannot itself be all_of")
			continue
		}
		e.Components = append(e.Components, Entry{Algorithm: ce.Algorithm, BlockLevels: ce.BlockLevels, CountIf: ce.CountIf})
		for _, ax := range ce.Axes {
			ax.Param = model.ComponentParamName(i, ax.Param)
			e.Axes = append(e.Axes, ax)
		}
	}
	if c.Len() == 0 {
		if err := e.checkCorners(); err != nil {
			c.Errorf(n, p, "%v", err)
		}
	}
	return e, c.Err()
}

// newPolicy is the entry's policy before its axes are set: the algorithm,
// and for an all_of entry its components.
func (e *Entry) newPolicy() model.Policy {
	p := model.Policy{Algorithm: e.Algorithm}
	if e.Components != nil {
		p.Stack = &model.Stack{}
		for _, c := range e.Components {
			p.Stack.Components = append(p.Stack.Components, model.Policy{Algorithm: c.Algorithm, BlockLevels: c.BlockLevels, CountIf: c.CountIf})
		}
	}
	return p
}

// writeStackYAML renders an all_of entry as decodeStackEntry reads it.
func (e *Entry) writeStackYAML(b *strings.Builder) {
	first := true
	for _, a := range e.Axes {
		if a.Param == model.RejectedCountsParam.Name {
			fmt.Fprintf(b, "  - rejected_counts: %s\n", a.yaml())
			first = false
		}
	}
	if first {
		b.WriteString("  -")
	} else {
		b.WriteString("   ")
	}
	b.WriteString(" all_of:\n")
	for i, c := range e.Components {
		fmt.Fprintf(b, "      - algorithm: %s\n", c.Algorithm)
		for _, a := range e.Axes {
			if j, name, ok := model.ComponentParam(a.Param); ok && j == i {
				bare := a
				bare.Param = name
				fmt.Fprintf(b, "        %s: %s\n", name, bare.yaml())
			}
		}
		if c.BlockLevels != nil {
			fmt.Fprintf(b, "        %s: %s\n", blockLevelsKey, levelsYAML(c.BlockLevels))
		}
		if c.CountIf != "" {
			fmt.Fprintf(b, "        count_if: %s\n", strconv.Quote(c.CountIf))
		}
	}
}

// stackEntrySchema is the JSON Schema of an all_of entry.
func stackEntrySchema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"description":          "Several limits at once: a request is admitted only if every component admits it.",
		"additionalProperties": false,
		"required":             stackKeys,
		"properties": map[string]any{
			"all_of": map[string]any{"type": "array", "minItems": 1, "maxItems": model.MaxComponents,
				"items": map[string]any{"$ref": "#/$defs/entry"}, "description": "the component policies, each with its own key"},
			"rejected_counts": axisSchema(model.RejectedCountsParam),
		},
	}
}

// checkStackKeys refuses all_of components on a key other than the client
// in a spec that replays a log: the replay hangs every limit on the log's
// key (traffic.key), one limiter per key.
func checkStackKeys(s *Spec, sw *yaml.Node) error {
	if s.Traffic == nil || sw == nil || sw.Kind != yaml.SequenceNode {
		return nil
	}
	for i, e := range s.Entries {
		for _, ax := range e.Axes {
			j, name, ok := model.ComponentParam(ax.Param)
			if !ok || name != "key" || (len(ax.Values) == 1 && ax.Values[0] == float64(model.KeyClient)) {
				continue
			}
			var n *yaml.Node
			if i < len(sw.Content) {
				n = sw.Content[i]
			}
			return yamlx.Errorf(n, fmt.Sprintf("sweep[%d].all_of[%d].key", i, j),
				"a replayed log hangs every component on its traffic key (traffic.key); components on other keys need a scenario (whose clients have addresses, accounts and orgs)")
		}
	}
	return nil
}
