package sweep

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// blockLevelsKey is the entry key of a penalty box's escalation levels
// (docs/penalty-box.md): block_levels: [{after: N, block_s: S}, …].
const blockLevelsKey = "block_levels"

// decodeBlockLevels reads an entry's block_levels (n at path p).
func decodeBlockLevels(n *yaml.Node, p string) (*model.BlockLevels, error) {
	items, err := yamlx.Seq(n, p)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, yamlx.Errorf(n, p, "at least one level {after: N, block_s: S} (or leave block_levels out)")
	}
	var c yamlx.Collector
	ls := make(model.BlockLevels, len(items))
	for i, it := range items {
		ip := fmt.Sprintf("%s[%d]", p, i)
		m, err := yamlx.Mapping(it, ip, "after", "block_s")
		if c.Add(err) || m == nil {
			continue
		}
		if an, err := m.Require("after"); !c.Add(err) {
			v, err := yamlx.Int(an, m.FieldPath("after"))
			if !c.Add(err) {
				ls[i].After = v
			}
		}
		if bn, err := m.Require("block_s"); !c.Add(err) {
			v, err := yamlx.Float(bn, m.FieldPath("block_s"))
			if !c.Add(err) {
				ls[i].BlockS = v
			}
		}
	}
	if c.Len() > 0 {
		return nil, c.Err()
	}
	if err := ls.Validate(); err != nil {
		var fe *model.FieldError
		if errors.As(err, &fe) {
			at := n
			path := strings.TrimPrefix(fe.Path, blockLevelsKey)
			if i, ok := levelIndex(path); ok && i < len(items) {
				at = items[i]
			}
			return nil, yamlx.Errorf(at, p+path, "%s", fe.Msg)
		}
		return nil, yamlx.Errorf(n, p, "%v", err)
	}
	return &ls, nil
}

// levelIndex reads i from "[i]…".
func levelIndex(path string) (int, bool) {
	s, ok := strings.CutPrefix(path, "[")
	if !ok {
		return 0, false
	}
	s, _, ok = strings.Cut(s, "]")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil
}

// checkBlockLevels refuses entries of one algorithm with different
// block_levels where both may block: the points files' parameter columns
// (which every reader joins on) do not hold the levels, so such points
// would share their parameters.
func checkBlockLevels(s *Spec) error {
	var c yamlx.Collector
	first := map[model.Algorithm]int{}
	for i := range s.Entries {
		e := &s.Entries[i]
		if !e.mayBlock() {
			continue
		}
		j, seen := first[e.Algorithm]
		if !seen {
			first[e.Algorithm] = i
			continue
		}
		if !sameLevels(s.Entries[j].BlockLevels, e.BlockLevels) {
			c.Errorf(nil, fmt.Sprintf("sweep[%d].%s", i, blockLevelsKey), "%s entries %d and %d block with different block_levels: give one entry per escalation, or sweep the other algorithm's block_s at 0", e.Algorithm, j, i)
		}
	}
	return c.Err()
}

// mayBlock reports whether some point of e has block_s > 0.
func (e *Entry) mayBlock() bool {
	for _, ax := range e.Axes {
		if ax.Param == "block_s" {
			for _, v := range ax.Values {
				if v > 0 {
					return true
				}
			}
		}
	}
	return false
}

func sameLevels(a, b *model.BlockLevels) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(*a) != len(*b) {
		return false
	}
	for i := range *a {
		if (*a)[i] != (*b)[i] {
			return false
		}
	}
	return true
}

// levelsYAML renders block_levels as a flow sequence.
func levelsYAML(ls *model.BlockLevels) string {
	parts := make([]string, len(*ls))
	for i, l := range *ls {
		parts[i] = fmt.Sprintf("{after: %d, block_s: %s}", l.After, strconv.FormatFloat(l.BlockS, 'g', -1, 64))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// blockLevelsSchema is the JSON Schema of block_levels.
func blockLevelsSchema() map[string]any {
	return map[string]any{
		"type":        "array",
		"minItems":    1,
		"description": "a penalty box's escalation: from the key's after-th earlier block on, blocks last block_s seconds",
		"items": map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []string{"after", "block_s"},
			"properties": map[string]any{
				"after":   map[string]any{"type": "integer", "minimum": 1},
				"block_s": map[string]any{"type": "number", "exclusiveMinimum": 0},
			},
		},
	}
}
