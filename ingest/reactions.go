package ingest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// ReactionRule gives the clients behind the log keys it matches a reaction
// to rejections (docs/retries.md): their logged requests are the requests
// they meant to send, and a rejected one is retried or given up as the
// reaction says.
//
//	reactions:
//	  - match: {label: abusive}                 # the key's label (legit, abusive, design, code, none)
//	    on_reject: {retry: immediate, max_retries: 10}
//	  - match: {keys: ["10.0.0.7"], rule: scanners}  # key names (keys, keys_file) and the labelling rule
//	    on_reject: {retry: backoff, max_retries: 5, base_s: 0.5, jitter: full}
//	  - match: all
//	    throttle: {k: 2}
//
// A key takes the first rule that matches it.
type ReactionRule struct {
	Match KeyMatch
	React model.Reaction
}

// KeyMatch picks log keys by what labels them: every condition given must
// hold (and), at least one is given unless All.
type KeyMatch struct {
	All   bool
	Keys  map[string]bool // key names as Traffic names them (keys, keys_file), or nil
	Label string          // legit, abusive, design, code or none: the key's label (Key.Class, Key.Stage), or ""
	Rule  string          // the labelling rule that labelled most of the key's abusive requests (Key.Rule), or ""
}

// MaxReactionRules bounds a traffic section's reactions.
const MaxReactionRules = 1000

var reactionRuleKeys = []string{"match", "on_reject", "throttle"}
var keyMatchKeys = []string{"keys", "keys_file", "label", "rule"}

// matchLabels are the values of match.label.
var matchLabels = []string{"legit", "abusive", "design", "code", "none"}

// Matches reports whether key k is one the match picks.
func (m *KeyMatch) Matches(k *Key) bool {
	if m.All {
		return true
	}
	if m.Keys != nil && !m.Keys[k.Name] {
		return false
	}
	if m.Rule != "" && k.Rule != m.Rule {
		return false
	}
	switch m.Label {
	case "":
	case "legit":
		return k.Class == model.Legit
	case "abusive":
		return k.Class == model.Abusive
	default:
		st, _ := labelColumnStage([]byte(m.Label))
		return k.Class == model.Abusive && k.Stage == st
	}
	return true
}

// decodeReactionRules reads traffic.reactions; rule names must be among
// the labelling rules.
func decodeReactionRules(n *yaml.Node, path, dir string, rules []Rule) ([]ReactionRule, error) {
	items, err := yamlx.Seq(n, path)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 || len(items) > MaxReactionRules {
		return nil, yamlx.Errorf(n, path, "a list of 1 to %d rules {match, on_reject, throttle}, got %d", MaxReactionRules, len(items))
	}
	var names []string
	for _, r := range rules {
		names = append(names, r.Name)
	}
	var out []ReactionRule
	var c yamlx.Collector
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, err := yamlx.Mapping(it, p, reactionRuleKeys...)
		if c.Add(err) {
			continue
		}
		var r ReactionRule
		mn, err := m.Require("match")
		if c.Add(err) {
			continue
		}
		if c.Add(decodeKeyMatch(mn, m.FieldPath("match"), dir, names, &r.Match)) {
			continue
		}
		if r.React, err = model.DecodeReaction(it, m, p); c.Add(err) {
			continue
		}
		if !r.React.Reacts() {
			c.Errorf(it, p, "give on_reject {retry: immediate | backoff, …} or throttle {k}: a rule without either changes nothing")
			continue
		}
		out = append(out, r)
	}
	return out, c.Err()
}

// decodeKeyMatch reads a reaction rule's match: all, or a mapping of
// conditions.
func decodeKeyMatch(n *yaml.Node, path, dir string, rules []string, km *KeyMatch) error {
	if n.Kind == yaml.ScalarNode {
		if n.Value != "all" {
			return yamlx.Errorf(n, path, "must be all or a mapping {keys, keys_file, label, rule}, got %q", n.Value)
		}
		km.All = true
		return nil
	}
	m, err := yamlx.Mapping(n, path, keyMatchKeys...)
	if err != nil {
		return err
	}
	if km.Keys, err = decodeKeySet(m, dir); err != nil {
		return err
	}
	if v := m.Get("label"); v != nil {
		s, err := yamlx.Str(v, m.FieldPath("label"))
		if err != nil {
			return err
		}
		if !slices.Contains(matchLabels, s) {
			return yamlx.Errorf(v, m.FieldPath("label"), "must be one of %s, got %q%s", strings.Join(matchLabels, ", "), s, yamlx.DidYouMean(s, matchLabels))
		}
		km.Label = s
	}
	if v := m.Get("rule"); v != nil {
		s, err := yamlx.Str(v, m.FieldPath("rule"))
		if err != nil {
			return err
		}
		if !slices.Contains(rules, s) {
			return yamlx.Errorf(v, m.FieldPath("rule"), "no labelling rule (traffic.rules) is named %q%s", s, yamlx.DidYouMean(s, rules))
		}
		km.Rule = s
	}
	if km.Keys == nil && km.Label == "" && km.Rule == "" {
		return yamlx.Errorf(n, path, "give at least one of keys, keys_file, label, rule (or match: all)")
	}
	return nil
}

// Reacts reports whether the clients of some of the traffic's keys react
// to rejections: a reaction rule, or an overlay client that reacts.
func (c *Config) Reacts() bool {
	return len(c.Reactions) > 0 || c.Overlay != nil && c.Overlay.Scenario.Reacts()
}

// KeyReactions returns each key's client's reaction (t.Keys order), nil
// for a key whose client does not react: an overlay client's own keys take
// the client's on_reject and throttle, the log's keys the first reaction
// rule that matches them.
func (t *Traffic) KeyReactions(c *Config) []*model.Reaction {
	out := make([]*model.Reaction, len(t.Keys))
	var byName map[string]*model.Reaction
	if c.Overlay != nil {
		byName = map[string]*model.Reaction{}
		for i := range c.Overlay.Scenario.Clients {
			cl := &c.Overlay.Scenario.Clients[i]
			byName[cl.Name] = &cl.React
		}
	}
	for i := range t.Keys {
		k := &t.Keys[i]
		if k.Overlay != "" {
			if rx := byName[k.Overlay]; rx != nil && rx.Reacts() {
				out[i] = rx
			}
			continue
		}
		for j := range c.Reactions {
			if c.Reactions[j].Match.Matches(k) {
				out[i] = &c.Reactions[j].React
				break
			}
		}
	}
	return out
}

// reactionsYAML renders the reaction rules as the traffic block's
// reactions (nothing without them, so other specs keep their hash).
func (c *Config) reactionsYAML() string {
	if len(c.Reactions) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("  reactions:\n")
	for _, r := range c.Reactions {
		m := r.Match
		switch {
		case m.All:
			b.WriteString("    - match: all\n")
		default:
			var parts []string
			if m.Keys != nil {
				ks := make([]string, 0, len(m.Keys))
				for k := range m.Keys {
					ks = append(ks, strconv.Quote(k))
				}
				slices.Sort(ks)
				parts = append(parts, "keys: ["+strings.Join(ks, ", ")+"]")
			}
			if m.Label != "" {
				parts = append(parts, "label: "+m.Label)
			}
			if m.Rule != "" {
				parts = append(parts, "rule: "+strconv.Quote(m.Rule))
			}
			fmt.Fprintf(&b, "    - match: {%s}\n", strings.Join(parts, ", "))
		}
		b.WriteString(r.React.YAML("      "))
	}
	return b.String()
}

// reactionsSchema is the JSON schema of traffic.reactions (strs: a string
// or a list of them).
func reactionsSchema(strs map[string]any) map[string]any {
	onReject, throttle := model.ReactionSchemas()
	match := map[string]any{"oneOf": []any{
		map[string]any{"const": "all"},
		map[string]any{
			"type": "object", "additionalProperties": false, "minProperties": 1,
			"propertyNames": map[string]any{"enum": keyMatchKeys},
			"properties": map[string]any{
				"keys":      strs,
				"keys_file": map[string]any{"type": "string", "minLength": 1, "description": "a file of key names, one per line"},
				"label":     map[string]any{"enum": matchLabels, "description": "the key's label: that of most of its requests"},
				"rule":      map[string]any{"type": "string", "minLength": 1, "description": "the labelling rule that labelled the key"},
			},
		},
	}}
	return map[string]any{
		"type": "array", "minItems": 1, "maxItems": MaxReactionRules,
		"description": "how the clients behind the log's keys answer rejections (docs/retries.md); a key takes the first rule that matches",
		"items": map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"match"},
			"propertyNames": map[string]any{"enum": reactionRuleKeys},
			"properties":    map[string]any{"match": match, "on_reject": onReject, "throttle": throttle},
		},
	}
}
