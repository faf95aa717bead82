package ingest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// Request costs and response statuses of a log (docs/costs.md). A traffic
// section's cost: says what each request costs:
//
//	cost: {rules: [{path_prefix: /graphql, cost: 10}], default: 1}
//	cost: {field: bytes, unit_bytes: 1024}   # response bytes, 1 unit per KiB begun
//
// Rules are tried in order (path_prefix, path and method must all hold);
// a request no rule matches costs default (1). The replay keeps a cost and
// a status per request (4 bytes) only when a sweep needs them.

// CostConfig says what a log's requests cost.
type CostConfig struct {
	// Field, when "bytes", makes a request cost its response bytes in units
	// of UnitBytes (default 1), rounded up, at least 1.
	Field     string
	UnitBytes int64
	Rules     []CostRule
	Default   int64 // a request no rule matches (0 means 1)
}

// CostRule gives the requests it matches a cost.
type CostRule struct {
	PathPrefix string // the request path (without its query) starts with it
	Path       string // the request path (without its query) is it
	Method     string
	Cost       int64
}

// MaxLogCost is the largest cost of a log's request, units (a request's
// cost and status share 32 bits).
const MaxLogCost = 1<<22 - 1

var costKeys = []string{"field", "unit_bytes", "rules", "default"}
var costRuleKeys = []string{"path_prefix", "path", "method", "cost"}

// weighs reports whether the build keeps each request's cost and status.
func (o *Options) weighs() bool { return o.Cost != nil || o.Statuses }

// otherColumns reports whether a build may keep per-request columns
// besides times and key ids: rule precedence and stages (rules, a label
// column), rate-rule bits, costs and statuses.
func (o *Options) otherColumns() bool {
	return len(o.Rules) > 0 || o.weighs() || o.Reader.CSV.Columns["label"] != ""
}

// respOf packs rec's cost and status for the replay: the status in the low
// 10 bits, the cost above them.
func (o *Options) respOf(rec *Record) (uint32, error) {
	if !o.weighs() {
		return 0, nil
	}
	c := int64(1)
	if o.Cost != nil {
		c = o.Cost.of(rec)
		if c > MaxLogCost {
			return 0, fmt.Errorf("cost %d is above %d units", c, MaxLogCost)
		}
	}
	st := rec.Status
	if st < 0 || st > 1023 {
		st = 0
	}
	return uint32(c)<<10 | uint32(st), nil
}

// unpackResp returns a request's cost and status.
func unpackResp(r uint32) (cost int64, status int) { return max(1, int64(r>>10)), int(r & 1023) }

// UnpackResp returns the cost (units, >= 1) and response status (0 when
// not logged) of one request of Traffic.Costs.
func UnpackResp(r uint32) (cost int64, status int) { return unpackResp(r) }

// of is what rec costs.
func (c *CostConfig) of(rec *Record) int64 {
	if c.Field == "bytes" {
		u := max(1, c.UnitBytes)
		return max(1, (rec.Bytes+u-1)/u)
	}
	path := rec.Path
	if i := bytes.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	for i := range c.Rules {
		r := &c.Rules[i]
		if r.PathPrefix != "" && !bytes.HasPrefix(path, []byte(r.PathPrefix)) {
			continue
		}
		if r.Path != "" && string(path) != r.Path {
			continue
		}
		if r.Method != "" && !strings.EqualFold(string(rec.Method), r.Method) {
			continue
		}
		return r.Cost
	}
	return max(1, c.Default)
}

// Costs returns key i's requests' costs and statuses (Times order), packed
// (Cost, Status read them), or nil when the log was read without them.
func (t *Traffic) Costs(i int) []uint32 {
	if t.resp == nil {
		return nil
	}
	return t.resp[t.offsets[i]:t.offsets[i+1]]
}

// Weighed reports whether the traffic kept each request's cost and status.
func (t *Traffic) Weighed() bool { return t.resp != nil }

// decodeCost reads a traffic section's cost:.
func decodeCost(n *yaml.Node, path string) (*CostConfig, error) {
	m, err := yamlx.Mapping(n, path, costKeys...)
	if err != nil {
		return nil, err
	}
	var ec yamlx.Collector
	c := &CostConfig{}
	units := func(key string, lo int64) int64 {
		v := m.Get(key)
		if v == nil {
			return 0
		}
		x, err := yamlx.Int(v, m.FieldPath(key))
		if ec.Add(err) {
			return 0
		}
		if x < lo || x > MaxLogCost {
			ec.Errorf(v, m.FieldPath(key), "must be a whole number between %d and %d, got %d", lo, MaxLogCost, x)
			return 0
		}
		return x
	}
	if v := m.Get("field"); v != nil {
		s, err := yamlx.Str(v, m.FieldPath("field"))
		if !ec.Add(err) {
			if s != "bytes" {
				ec.Errorf(v, m.FieldPath("field"), "%q: the cost field a log gives is bytes (response bytes); use rules for costs by path", s)
			}
			c.Field = s
		}
	}
	c.UnitBytes = units("unit_bytes", 1)
	c.Default = units("default", 1)
	if m.Has("unit_bytes") && c.Field == "" {
		ec.Errorf(m.Get("unit_bytes"), m.FieldPath("unit_bytes"), "unit_bytes goes with field: bytes")
	}
	if v := m.Get("rules"); v != nil {
		if c.Field != "" {
			ec.Errorf(v, m.FieldPath("rules"), "give either field or rules, not both")
		}
		items, err := yamlx.Seq(v, m.FieldPath("rules"))
		ec.Add(err)
		for i, it := range items {
			p := fmt.Sprintf("%s[%d]", m.FieldPath("rules"), i)
			rm, err := yamlx.Mapping(it, p, costRuleKeys...)
			if ec.Add(err) {
				continue
			}
			var r CostRule
			r.PathPrefix, err = rm.OptString("path_prefix")
			ec.Add(err)
			r.Path, err = rm.OptString("path")
			ec.Add(err)
			r.Method, err = rm.OptString("method")
			ec.Add(err)
			if cn, err := rm.Require("cost"); !ec.Add(err) {
				x, err := yamlx.Int(cn, rm.FieldPath("cost"))
				switch {
				case ec.Add(err):
				case x < 1 || x > MaxLogCost:
					ec.Errorf(cn, rm.FieldPath("cost"), "must be a whole number of units between 1 and %d, got %d", MaxLogCost, x)
				default:
					r.Cost = x
				}
			}
			c.Rules = append(c.Rules, r)
		}
	}
	if c.Field == "" && len(c.Rules) == 0 {
		ec.Errorf(n, path, "says no cost: give {field: bytes} or {rules: [{path_prefix: /graphql, cost: 10}], default: 1}")
	}
	if err := ec.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// yaml is the cost: line of the canonical traffic section.
func (c *CostConfig) yaml() string {
	if c == nil {
		return ""
	}
	q := strconv.Quote
	var parts []string
	if c.Field != "" {
		parts = append(parts, "field: "+c.Field)
		if c.UnitBytes > 0 {
			parts = append(parts, fmt.Sprintf("unit_bytes: %d", c.UnitBytes))
		}
	}
	if len(c.Rules) > 0 {
		var rs []string
		for _, r := range c.Rules {
			var f []string
			if r.PathPrefix != "" {
				f = append(f, "path_prefix: "+q(r.PathPrefix))
			}
			if r.Path != "" {
				f = append(f, "path: "+q(r.Path))
			}
			if r.Method != "" {
				f = append(f, "method: "+q(r.Method))
			}
			f = append(f, fmt.Sprintf("cost: %d", r.Cost))
			rs = append(rs, "{"+strings.Join(f, ", ")+"}")
		}
		parts = append(parts, "rules: ["+strings.Join(rs, ", ")+"]")
	}
	if c.Default > 0 {
		parts = append(parts, fmt.Sprintf("default: %d", c.Default))
	}
	return "  cost: {" + strings.Join(parts, ", ") + "}\n"
}

// replayWeighed offers a key's requests (times ts, labels, packed costs
// and statuses resp) to a weighing decider and counts them into r.
func replayWeighed(d model.RequestDecider, ts []int64, labels []model.Stage, resp []uint32, r *KeyResult) {
	for j, tn := range ts {
		l := labels[j]
		c, st := unpackResp(resp[j])
		r.Offered[l]++
		r.OfferedCost[l] += c
		if d.AllowRequest(tn, c, st) {
			r.Admitted[l]++
			r.AdmittedCost[l] += c
		}
	}
}

// costSchema is the JSON Schema of a traffic section's cost:.
func costSchema() map[string]any {
	units := map[string]any{"type": "integer", "minimum": 1, "maximum": MaxLogCost}
	str := map[string]any{"type": "string", "minLength": 1}
	return map[string]any{
		"type": "object", "additionalProperties": false, "propertyNames": map[string]any{"enum": costKeys},
		"description": "what each request costs (docs/costs.md): response bytes, or rules by path",
		"properties": map[string]any{
			"field":      map[string]any{"const": "bytes"},
			"unit_bytes": units,
			"default":    units,
			"rules": map[string]any{"type": "array", "minItems": 1, "items": map[string]any{
				"type": "object", "additionalProperties": false, "required": []string{"cost"},
				"propertyNames": map[string]any{"enum": costRuleKeys},
				"properties":    map[string]any{"path_prefix": str, "path": str, "method": str, "cost": units},
			}},
		},
	}
}

// logsBytes reports whether a format's records carry the response bytes
// (auto: not known until the log is read).
func logsBytes(f Format) bool {
	switch f {
	case FormatCSV, FormatParquet, FormatJSONL, FormatEnvoy, FormatCaddy, FormatTraefik, FormatCloudflare, FormatGCPLB, FormatALB:
		return false
	}
	return true
}
