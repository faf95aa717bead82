package ingest

// Reading a traffic section's labelling rules: conditions, statuses, key lists.

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

var ruleKeys = []string{"name", "stage", "scope", "path", "method", "status", "user_agent", "keys", "keys_file", "rate", "limit_req_status"}

var rateKeys = []string{"requests", "window_s"}

// ParseRules decodes a rules file: a mapping with one field, rules, a list of
// rules. Relative keys_file names are resolved against dir.
func ParseRules(data []byte, dir string) ([]Rule, error) {
	root, err := yamlx.Parse(data)
	if err != nil {
		return nil, err
	}
	m, err := yamlx.Mapping(root, "", "rules")
	if err != nil {
		return nil, err
	}
	v, err := m.Require("rules")
	if err != nil {
		return nil, err
	}
	return decodeRules(v, "rules", dir)
}

func decodeRulesRef(n *yaml.Node, path, dir string) ([]Rule, error) {
	if n.Kind != yaml.ScalarNode {
		return decodeRules(n, path, dir)
	}
	s, err := yamlx.Str(n, path)
	if err != nil {
		return nil, err
	}
	return LoadRules(resolve(dir, s))
}

func decodeRules(n *yaml.Node, path, dir string) ([]Rule, error) {
	items, err := yamlx.Seq(n, path)
	if err != nil {
		return nil, err
	}
	if len(items) > MaxRules {
		return nil, yamlx.Errorf(n, path, "at most %d rules, got %d", MaxRules, len(items))
	}
	var rules []Rule
	var c yamlx.Collector // every rule's errors at once
	names := map[string]int{}
	rates := 0
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		r, err := decodeRule(it, p, dir)
		if c.Add(err) {
			continue
		}
		if j, dup := names[r.Name]; dup {
			c.Errorf(it, p+".name", "duplicate rule name %q (also %s[%d])", r.Name, path, j)
			continue
		}
		names[r.Name] = i
		if r.Rate != nil {
			if rates++; rates > MaxRateRules {
				c.Errorf(it, p+".rate", "at most %d rules with a rate condition", MaxRateRules)
				continue
			}
		}
		rules = append(rules, r)
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	return rules, nil
}

func decodeRule(n *yaml.Node, path, dir string) (Rule, error) {
	var r Rule
	m, err := yamlx.Mapping(n, path, ruleKeys...)
	if err != nil {
		return r, err
	}
	if r.Name, err = m.String("name"); err != nil {
		return r, err
	}
	st, err := m.String("stage")
	if err != nil {
		return r, err
	}
	switch st {
	case "design":
		r.Stage = model.StageDesign
	case "code":
		r.Stage = model.StageCode
	case "none":
		r.Stage = model.StageNone
	default:
		return r, yamlx.Errorf(m.Get("stage"), m.FieldPath("stage"), "must be design, code or none, got %q", st)
	}
	if v := m.Get("scope"); v != nil {
		s, err := yamlx.Str(v, m.FieldPath("scope"))
		if err != nil {
			return r, err
		}
		switch s {
		case "key":
		case "request":
			r.Scope = ScopeRequest
		default:
			return r, yamlx.Errorf(v, m.FieldPath("scope"), "must be key or request, got %q", s)
		}
	}
	re := func(key string) (*regexp.Regexp, error) {
		v := m.Get(key)
		if v == nil {
			return nil, nil
		}
		s, err := yamlx.Str(v, m.FieldPath(key))
		if err != nil {
			return nil, err
		}
		x, err := regexp.Compile(s)
		if err != nil {
			return nil, yamlx.Errorf(v, m.FieldPath(key), "bad regular expression: %v", err)
		}
		return x, nil
	}
	if r.Path, err = re("path"); err != nil {
		return r, err
	}
	if r.UserAgent, err = re("user_agent"); err != nil {
		return r, err
	}
	if v := m.Get("method"); v != nil {
		if r.Methods, err = strList(v, m.FieldPath("method")); err != nil {
			return r, err
		}
	}
	if v := m.Get("status"); v != nil {
		if r.Statuses, err = decodeStatuses(v, m.FieldPath("status")); err != nil {
			return r, err
		}
	}
	if v := m.Get("limit_req_status"); v != nil {
		if r.LimitReqStatus, err = strList(v, m.FieldPath("limit_req_status")); err != nil {
			return r, err
		}
		for _, s := range r.LimitReqStatus {
			if !slices.Contains(LimitReqStatuses, s) {
				return r, yamlx.Errorf(v, m.FieldPath("limit_req_status"), "%q is not an nginx $limit_req_status (%s)", s, strings.Join(LimitReqStatuses, ", "))
			}
		}
	}
	if r.Keys, err = decodeKeySet(m, dir); err != nil {
		return r, err
	}
	if v := m.Get("rate"); v != nil {
		rm, err := yamlx.Mapping(v, m.FieldPath("rate"), rateKeys...)
		if err != nil {
			return r, err
		}
		r.Rate = &Rate{}
		for _, k := range rateKeys {
			kn, err := rm.Require(k)
			if err != nil {
				return r, err
			}
			x, err := yamlx.Int(kn, rm.FieldPath(k))
			if err != nil {
				return r, err
			}
			if x < 1 || x > 1<<31 {
				return r, yamlx.Errorf(kn, rm.FieldPath(k), "must be between 1 and %d, got %d", 1<<31, x)
			}
			if k == "requests" {
				r.Rate.Requests = x
			} else {
				r.Rate.WindowS = x
			}
		}
	}
	if err := r.Validate(); err != nil {
		return r, yamlx.Errorf(n, path, "%v", err)
	}
	return r, nil
}

func strList(n *yaml.Node, path string) ([]string, error) {
	if n.Kind == yaml.ScalarNode {
		s, err := yamlx.Str(n, path)
		return []string{s}, err
	}
	items, err := yamlx.Seq(n, path)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, yamlx.Errorf(n, path, "empty list")
	}
	out := make([]string, len(items))
	for i, it := range items {
		if out[i], err = yamlx.Str(it, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeStatuses reads 404, "4xx" or "400-499", or a list of them.
func decodeStatuses(n *yaml.Node, path string) ([]StatusRange, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var out []StatusRange
	for i, it := range items {
		p := path
		if n.Kind == yaml.SequenceNode {
			p = fmt.Sprintf("%s[%d]", path, i)
		}
		if it.Kind != yaml.ScalarNode {
			return nil, yamlx.Errorf(it, p, "expected a status such as 404, \"4xx\" or \"400-499\"")
		}
		sr, ok := parseStatusRange(it.Value)
		if !ok {
			return nil, yamlx.Errorf(it, p, "expected a status such as 404, \"4xx\" or \"400-499\", got %q", it.Value)
		}
		out = append(out, sr)
	}
	if len(out) == 0 {
		return nil, yamlx.Errorf(n, path, "empty list")
	}
	return out, nil
}

func parseStatusRange(s string) (StatusRange, bool) {
	s = strings.TrimSpace(s)
	if len(s) == 3 && s[1:] == "xx" && s[0] >= '1' && s[0] <= '5' {
		lo := int(s[0]-'0') * 100
		return StatusRange{lo, lo + 99}, true
	}
	a, b, isRange := strings.Cut(s, "-")
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi := lo
	var err2 error
	if isRange {
		hi, err2 = strconv.Atoi(strings.TrimSpace(b))
	}
	if err1 != nil || err2 != nil || lo < 100 || hi > 999 || lo > hi {
		return StatusRange{}, false
	}
	return StatusRange{lo, hi}, true
}

// decodeKeySet reads a mapping's keys (a list of key names) and keys_file
// (a file of them, one per line) into one set, nil when neither is given.
func decodeKeySet(m *yamlx.Map, dir string) (map[string]bool, error) {
	var set map[string]bool
	if v := m.Get("keys"); v != nil {
		ks, err := strList(v, m.FieldPath("keys"))
		if err != nil {
			return nil, err
		}
		set = map[string]bool{}
		for _, k := range ks {
			set[k] = true
		}
	}
	if v := m.Get("keys_file"); v != nil {
		s, err := yamlx.Str(v, m.FieldPath("keys_file"))
		if err != nil {
			return nil, err
		}
		if set == nil {
			set = map[string]bool{}
		}
		if err := readKeys(resolve(dir, s), set); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// readKeys adds the keys listed in file, one per line ("#" starts a comment
// line; blank lines are skipped).
func readKeys(file string, into map[string]bool) error {
	data, err := readFile(file)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		into[l] = true
	}
	if err := sc.Err(); err != nil {
		return &yamlx.Error{File: file, Msg: err.Error()}
	}
	return nil
}

// LoadRules reads a rules file (a mapping with rules: [...]).
func LoadRules(file string) ([]Rule, error) {
	data, err := readFile(file)
	if err != nil {
		return nil, err
	}
	rules, err := ParseRules(data, filepath.Dir(file))
	return rules, yamlx.InFile(err, file)
}
