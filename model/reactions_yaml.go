package model

import (
	"errors"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"go.yaml.in/yaml/v3"
)

var onRejectKeys = []string{"retry", "max_retries", "base_s", "cap_s", "jitter", "honour_retry_after", "budget"}
var budgetKeys = []string{"ratio", "min_per_s"}

// decodeReaction reads a client's optional on_reject and throttle (values
// are checked by Reaction.validate, with the scenario).
func decodeReaction(m *yamlx.Map) (Reaction, error) {
	var r Reaction
	var c yamlx.Collector
	if n := m.Get("on_reject"); n != nil {
		c.Add(decodeOnReject(n, m.FieldPath("on_reject"), &r))
	}
	if n := m.Get("throttle"); n != nil {
		tm, err := yamlx.Mapping(n, m.FieldPath("throttle"), "k")
		if !c.Add(err) {
			if kn, err := tm.Require("k"); !c.Add(err) {
				r.ThrottleK, err = yamlx.Float(kn, tm.FieldPath("k"))
				c.Add(err)
			}
		}
	}
	return r, c.Err()
}

// decodeOnReject reads on_reject: none, or a mapping.
func decodeOnReject(n *yaml.Node, path string, r *Reaction) error {
	if n.Kind == yaml.ScalarNode {
		if s, err := yamlx.Str(n, path); err != nil || s != "none" {
			return yamlx.Errorf(n, path, "must be none or a mapping {retry: immediate | backoff, max_retries: N, …}")
		}
		return nil
	}
	m, err := yamlx.Mapping(n, path, onRejectKeys...)
	if err != nil {
		return err
	}
	var c yamlx.Collector
	enum := func(key string, names []string, dst *uint8) {
		kn := m.Get(key)
		if kn == nil {
			return
		}
		s, err := yamlx.Str(kn, m.FieldPath(key))
		if c.Add(err) {
			return
		}
		i := slices.Index(names, s)
		if i < 0 {
			c.Errorf(kn, m.FieldPath(key), "unknown %s %q (%s)%s", key, s, joinBar(names), yamlx.DidYouMean(s, names))
			return
		}
		*dst = uint8(i)
	}
	float := func(mm *yamlx.Map, key string, dst *float64) {
		if kn := mm.Get(key); kn != nil {
			v, err := yamlx.Float(kn, mm.FieldPath(key))
			if !c.Add(err) {
				*dst = v
			}
		}
	}
	var mode, jitter uint8
	enum("retry", retryModeNames, &mode)
	enum("jitter", jitterNames, &jitter)
	r.Retry, r.Jitter = RetryMode(mode), Jitter(jitter)
	if kn := m.Get("max_retries"); kn != nil {
		v, err := yamlx.Int(kn, m.FieldPath("max_retries"))
		if !c.Add(err) {
			r.MaxRetries = int(min(max(v, -1), maxRetries+1))
		}
	}
	float(m, "base_s", &r.BaseS)
	float(m, "cap_s", &r.CapS)
	if kn := m.Get("honour_retry_after"); kn != nil {
		if kn.Kind != yaml.ScalarNode || (kn.Value != "true" && kn.Value != "false") {
			c.Errorf(kn, m.FieldPath("honour_retry_after"), "must be true or false, got %q", kn.Value)
		} else {
			r.HonourRetryAfter = kn.Value == "true"
		}
	}
	if bn := m.Get("budget"); bn != nil {
		bm, err := yamlx.Mapping(bn, m.FieldPath("budget"), budgetKeys...)
		if !c.Add(err) {
			r.Budget = &RetryBudget{}
			float(bm, "ratio", &r.Budget.Ratio)
			float(bm, "min_per_s", &r.Budget.MinPerS)
		}
	}
	return c.Err()
}

func joinBar(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += " | "
		}
		s += n
	}
	return s
}

// onRejectSchema is the JSON schema of a client's on_reject.
func onRejectSchema() map[string]any {
	num := func(desc string) map[string]any {
		return map[string]any{"type": "number", "minimum": 0, "description": desc}
	}
	return map[string]any{
		"description": "what the client does when a request is rejected (docs/retries.md)",
		"oneOf": []any{
			map[string]any{"const": "none"},
			map[string]any{
				"type": "object", "additionalProperties": false,
				"propertyNames": map[string]any{"enum": onRejectKeys},
				"properties": map[string]any{
					"retry":              map[string]any{"enum": retryModeNames},
					"max_retries":        map[string]any{"type": "integer", "minimum": 1, "maximum": maxRetries},
					"base_s":             num("backoff: first ceiling, seconds"),
					"cap_s":              num("backoff: largest sleep, seconds"),
					"jitter":             map[string]any{"enum": jitterNames},
					"honour_retry_after": map[string]any{"type": "boolean"},
					"budget": map[string]any{
						"type": "object", "additionalProperties": false,
						"propertyNames": map[string]any{"enum": budgetKeys},
						"properties": map[string]any{
							"ratio":     num("retries per request sent, over 10 s"),
							"min_per_s": num("retries per second always allowed"),
						},
					},
				},
			},
		},
	}
}

// throttleSchema is the JSON schema of a client's throttle.
func throttleSchema() map[string]any {
	return map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"k"},
		"properties": map[string]any{"k": map[string]any{"type": "number", "minimum": 1, "description": "adaptive throttling's K (the SRE book suggests 2)"}},
	}
}

// DecodeReaction reads and checks the on_reject and throttle of mapping m
// (a reaction rule of a replayed log), m being the node n at path: errors
// name the field and its line.
func DecodeReaction(n *yaml.Node, m *yamlx.Map, path string) (Reaction, error) {
	r, err := decodeReaction(m)
	if err != nil {
		return r, err
	}
	if err := r.validate(path); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return r, yamlx.Errorf(yamlx.Locate(n, strings.TrimPrefix(strings.TrimPrefix(fe.Path, path), ".")), fe.Path, "%s", fe.Msg)
		}
		return r, err
	}
	return r, nil
}

// YAML renders the reaction's on_reject and throttle as fields of a
// mapping indented by indent (nothing when it does not react).
func (r *Reaction) YAML(indent string) string {
	var b strings.Builder
	r.writeYAML(&b)
	out := ""
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if l != "" {
			out += indent + strings.TrimPrefix(l, "    ")
		}
	}
	return out
}

// ReactionSchemas are the JSON schemas of on_reject and throttle (for a
// log's reaction rules).
func ReactionSchemas() (onReject, throttle map[string]any) {
	return onRejectSchema(), throttleSchema()
}
