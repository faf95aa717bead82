package sweep

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// applyOverrides applies --set overrides, each "path=value" with a field path
// as errors name it (seed, sweep[0].limit, scenario.clients[2].segments,
// traffic.top_keys) and a YAML value (3, [10, 20], {from: 1, to: 9, step: 2},
// poisson), to the spec's tree before it is decoded, so the decoder checks
// them like the file's own fields. A missing mapping key is added; a
// scenario given as a file is inlined first; index len(list) appends an
// entry (sweep[3]={algorithm: gcra, ...} to a three-entry sweep). resolve
// loads the scenario file.
func applyOverrides(root *yaml.Node, sets []string, resolve func(string) (string, []byte, error)) error {
	var c yamlx.Collector
	for _, set := range sets {
		c.Add(applyOverride(root, set, resolve))
	}
	return c.Err()
}

func applyOverride(root *yaml.Node, set string, resolve func(string) (string, []byte, error)) error {
	fail := func(format string, args ...any) error {
		return &yamlx.Error{File: "--set " + set, Msg: fmt.Sprintf(format, args...)}
	}
	path, value, ok := strings.Cut(set, "=")
	if !ok || path == "" {
		return fail("expected PATH=VALUE, e.g. seed=2 or sweep[0].limit=[100, 200]")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(value), &doc); err != nil {
		return fail("value is not YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: ""}
	if len(doc.Content) > 0 {
		val = doc.Content[0]
	}
	forget(val) // errors in the value name the --set, not a line

	steps, err := splitPath(path)
	if err != nil {
		return fail("%v", err)
	}
	n, at := root, ""
	for i, st := range steps {
		last := i == len(steps)-1
		if st.key != "" {
			if n.Kind == yaml.ScalarNode && at == "scenario" && n.Tag == "!!str" {
				if err := inlineScenario(n, resolve); err != nil {
					return fail("%v", err)
				}
			}
			if n.Kind != yaml.MappingNode {
				return fail("%s is not a mapping", orRoot(at))
			}
			at = joinPath(at, st.key)
			child := mapValue(n, st.key)
			if child == nil {
				child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				if last {
					child = val
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: st.key}, child)
				n = child
				continue
			}
			if last {
				*child = *val
			}
			n = child
			continue
		}
		if n.Kind != yaml.SequenceNode {
			return fail("%s is not a list", orRoot(at))
		}
		if st.index > len(n.Content) {
			return fail("%s has %d entries, no [%d] (the next one, [%d], appends)", at, len(n.Content), st.index, len(n.Content))
		}
		at = fmt.Sprintf("%s[%d]", at, st.index)
		if st.index == len(n.Content) { // append
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"})
		}
		n = n.Content[st.index]
		if last {
			*n = *val
		}
	}
	return nil
}

type pathStep struct {
	key   string // a mapping key, or "" for an index
	index int
}

// splitPath splits "sweep[0].limit" into sweep, [0], limit.
func splitPath(p string) ([]pathStep, error) {
	var out []pathStep
	for _, part := range strings.Split(p, ".") {
		name, idx, _ := strings.Cut(part, "[")
		if name == "" && (len(out) == 0 || idx == "") {
			return nil, fmt.Errorf("bad field path %q (e.g. sweep[0].limit)", p)
		}
		if name != "" {
			out = append(out, pathStep{key: name})
		}
		for idx != "" {
			num, rest, ok := strings.Cut(idx, "]")
			i, err := strconv.Atoi(num)
			if !ok || err != nil || i < 0 || (rest != "" && !strings.HasPrefix(rest, "[")) {
				return nil, fmt.Errorf("bad index in %q (e.g. sweep[0].limit)", p)
			}
			out = append(out, pathStep{index: i})
			idx = strings.TrimPrefix(rest, "[")
		}
	}
	return out, nil
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// inlineScenario replaces a scenario file name by the file's mapping.
func inlineScenario(n *yaml.Node, resolve func(string) (string, []byte, error)) error {
	if resolve == nil {
		return fmt.Errorf("the scenario file %s cannot be read here", n.Value)
	}
	file, data, err := resolve(n.Value)
	if err != nil {
		return err
	}
	if yamlx.Foreign(data, scenarioKeys...) {
		return yamlx.InFile(yamlx.ForeignError("scenario"), file)
	}
	sc, err := yamlx.Parse(data)
	if err != nil {
		return yamlx.InFile(err, file)
	}
	if _, err := model.DecodeScenario(sc, ""); err != nil {
		return yamlx.InFile(err, file) // its own errors, with its own lines
	}
	forget(sc)
	*n = *sc
	return nil
}

// forget clears the lines of a subtree (nodes from --set have none).
func forget(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		forget(c)
	}
}

func joinPath(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

func orRoot(at string) string {
	if at == "" {
		return "the spec"
	}
	return at
}

// nameOverrides gives decoding errors without a line (from --set values)
// the --set they came from.
func nameOverrides(err error, sets []string) error {
	if err == nil || len(sets) == 0 {
		return err
	}
	fix := func(e *yamlx.Error) {
		if e.Line != 0 || e.File != "" {
			return
		}
		for _, set := range sets {
			p, _, _ := strings.Cut(set, "=")
			if e.Path == p || strings.HasPrefix(e.Path, p+".") || strings.HasPrefix(e.Path, p+"[") || strings.HasPrefix(p, e.Path+".") {
				e.File = "--set " + set
				return
			}
		}
	}
	var c yamlx.Collector
	c.Add(err)
	if es, ok := c.Err().(*yamlx.Errors); ok {
		for _, e := range es.List {
			fix(e)
		}
		return es
	}
	if e, ok := c.Err().(*yamlx.Error); ok {
		fix(e)
		return e
	}
	return err
}
