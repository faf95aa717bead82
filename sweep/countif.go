package sweep

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// count_if on a sweep entry (docs/costs.md): only requests whose response
// matches count against the limit. Written as {status: [401, 403]},
// {status_min: 500} (status_max too), or the canonical "401,403,500-599"
// that the run's spec.yaml stores.

var countIfKeys = []string{"status", "status_min", "status_max"}

// decodeCountIf reads an entry's count_if into model.Policy.CountIf's form.
func decodeCountIf(n *yaml.Node, p string) (string, error) {
	if n.Kind == yaml.ScalarNode {
		s, err := yamlx.Str(n, p)
		if err != nil {
			return "", err
		}
		if _, err := model.CountIfStatuses(s); err != nil {
			return "", yamlx.Errorf(n, p, "%v (write {status: [401, 403]} or {status_min: 500})", err)
		}
		return s, nil
	}
	m, err := yamlx.Mapping(n, p, countIfKeys...)
	if err != nil {
		return "", err
	}
	var statuses []int
	if sn := m.Get("status"); sn != nil {
		items := []*yaml.Node{sn}
		if sn.Kind == yaml.SequenceNode {
			items = sn.Content
		}
		for i, it := range items {
			v, err := yamlx.Int(it, fmt.Sprintf("%s[%d]", m.FieldPath("status"), i))
			if err != nil {
				return "", err
			}
			if v < model.MinStatus || v > model.MaxStatus {
				return "", yamlx.Errorf(it, m.FieldPath("status"), "%d is not an HTTP status (%d-%d)", v, model.MinStatus, model.MaxStatus)
			}
			statuses = append(statuses, int(v))
		}
	}
	bound := func(key string) (int, error) {
		bn := m.Get(key)
		if bn == nil {
			return 0, nil
		}
		v, err := yamlx.Int(bn, m.FieldPath(key))
		if err != nil {
			return 0, err
		}
		if v < model.MinStatus || v > model.MaxStatus {
			return 0, yamlx.Errorf(bn, m.FieldPath(key), "%d is not an HTTP status (%d-%d)", v, model.MinStatus, model.MaxStatus)
		}
		return int(v), nil
	}
	lo, err := bound("status_min")
	if err != nil {
		return "", err
	}
	hi, err := bound("status_max")
	if err != nil {
		return "", err
	}
	if len(statuses) == 0 && lo == 0 && hi == 0 {
		return "", yamlx.Errorf(n, p, "names no status: write {status: [401, 403]} or {status_min: 500}")
	}
	s, err := model.CountIfOf(statuses, lo, hi)
	if err != nil {
		return "", yamlx.Errorf(n, p, "%v", err)
	}
	return s, nil
}

// Costed reports whether the spec's requests carry costs (a scenario
// client's cost, or the traffic's cost:): every policy then spends them.
func (s *Spec) Costed() bool {
	if s.Traffic != nil {
		return s.Traffic.Options.Cost != nil
	}
	return s.Scenario != nil && s.Scenario.Costed()
}

// weigh sets what the spec and entry add to a grid policy: its count_if
// and whether the requests carry costs.
func (s *Spec) weigh(e *Entry, p *model.Policy) {
	p.CountIf, p.Costed = e.CountIf, s.Costed()
}

// countIfYAML is an entry's count_if line in the canonical spec.
func countIfYAML(e *Entry) string {
	if e.CountIf == "" {
		return ""
	}
	return "    count_if: " + strconv.Quote(e.CountIf) + "\n"
}

// countsIf reports whether some entry counts only some responses.
func (s *Spec) countsIf() bool {
	for i := range s.Entries {
		if s.Entries[i].countsIf() {
			return true
		}
	}
	return false
}

// countsIf reports whether the entry, or one of its components, counts
// only some responses.
func (e *Entry) countsIf() bool {
	if e.CountIf != "" {
		return true
	}
	for i := range e.Components {
		if e.Components[i].CountIf != "" {
			return true
		}
	}
	return false
}

// weighedOptions are the traffic's options with the responses' statuses
// kept when an entry's count_if needs them.
func (s *Spec) weighedOptions() (ingest.Options, error) {
	opt := s.Traffic.Options
	opt.Statuses = s.countsIf()
	if s.Traffic.Overlay != nil && (opt.Statuses || opt.Cost != nil) {
		return opt, fmt.Errorf("traffic: an overlay's synthetic requests have no cost or status: cost and count_if do not combine with overlay yet")
	}
	return opt, nil
}

// checkCosted refuses an entry whose algorithm cannot spend the costs the
// spec's requests carry.
func (s *Spec) checkCosted(e *Entry, n *yaml.Node, p string) error {
	if !s.Costed() {
		return nil
	}
	e.costed = true
	defer func() { e.costed = false }()
	if err := e.checkCorners(); err != nil {
		return yamlx.Errorf(n, p, "%v", err)
	}
	return nil
}

// countIfSchema is the JSON Schema of an entry's count_if.
func countIfSchema() map[string]any {
	st := map[string]any{"type": "integer", "minimum": model.MinStatus, "maximum": model.MaxStatus}
	return map[string]any{
		"description": "count only requests whose response matches (docs/costs.md)",
		"oneOf": []any{
			map[string]any{"type": "string", "pattern": `^[1-5][0-9][0-9](-[1-5][0-9][0-9])?(,[1-5][0-9][0-9](-[1-5][0-9][0-9])?)*$`},
			map[string]any{"type": "object", "additionalProperties": false, "minProperties": 1, "propertyNames": map[string]any{"enum": countIfKeys},
				"properties": map[string]any{
					"status":     map[string]any{"oneOf": []any{st, map[string]any{"type": "array", "items": st, "minItems": 1}}},
					"status_min": st, "status_max": st,
				}},
		},
	}
}

// CountIfOf returns, by point id, the count_if of the run's policies (from
// its spec; "" for every point when the spec names none or does not read):
// the points columns hold the parameters, and the label appends it
// (PointRow.Key).
func (r *RunDir) CountIfOf() func(pointID int64) string {
	none := func(int64) string { return "" }
	if !strings.Contains(r.SpecYAML, "count_if") {
		return none
	}
	s, err := ParseSpec([]byte(r.SpecYAML), nil)
	if err != nil {
		return none
	}
	g := NewGrid(s)
	return func(id int64) string {
		if id < 0 || id >= g.Points() {
			return ""
		}
		e := len(g.offsets) - 1
		for e > 0 && g.offsets[e] > id {
			e--
		}
		return s.Entries[e].CountIf
	}
}
