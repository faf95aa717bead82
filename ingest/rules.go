package ingest

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"

	"github.com/ratesweep/ratesweep/model"
)

// Scope says what a labelling rule marks.
type Scope uint8

const (
	// ScopeKey marks the whole key (every request of it) as soon as one of
	// its requests matches (or, with Rate, its matching requests reach the
	// rate). The default.
	ScopeKey Scope = iota
	// ScopeRequest marks only the matching requests.
	ScopeRequest
)

func (s Scope) String() string {
	if s == ScopeRequest {
		return "request"
	}
	return "key"
}

// StatusRange is an inclusive range of response statuses (404..404, 500..599).
type StatusRange struct{ Lo, Hi int }

// Rate is a rate condition: the key sent at least Requests matching requests
// within some window of WindowS seconds (log seconds, before spreading).
type Rate struct {
	Requests int64
	WindowS  int64
}

// Rule marks requests or keys abusive with a stage. All the conditions given
// must hold (and); at least one is given. Rules are tried in order and the
// first that marks a request decides its label; unmarked requests are legit.
type Rule struct {
	Name      string
	Stage     model.Stage // design, code or none
	Scope     Scope
	Path      *regexp.Regexp // on the request target (path and query)
	Methods   []string       // exact, case-sensitive
	Statuses  []StatusRange
	UserAgent *regexp.Regexp
	Keys      map[string]bool // key values as Traffic names them
	// LimitReqStatus: the nginx $limit_req_status the line logs is one of
	// these (a dry run's decision: Record.LimitReqStatus).
	LimitReqStatus []string
	Rate           *Rate // key scope only
}

// reCache memoises a regular expression over repeated values (user agents
// and paths repeat a lot in real logs; Go's regexp costs microseconds).
type reCache struct {
	re *regexp.Regexp
	m  map[string]bool
}

// maxCached bounds a reCache; past it, values are matched without caching.
const maxCached = 1 << 16

func (c *reCache) match(b []byte) bool {
	if v, ok := c.m[string(b)]; ok {
		return v
	}
	v := c.re.Match(b)
	if len(c.m) < maxCached {
		c.m[string(b)] = v
	}
	return v
}

// matcher checks the per-request conditions of one rule, with caches.
type matcher struct {
	rule     *Rule
	path, ua *reCache
}

func newMatcher(r *Rule) *matcher {
	m := &matcher{rule: r}
	if r.Path != nil {
		m.path = &reCache{re: r.Path, m: map[string]bool{}}
	}
	if r.UserAgent != nil {
		m.ua = &reCache{re: r.UserAgent, m: map[string]bool{}}
	}
	return m
}

// matchRecord reports whether the per-request conditions hold (Keys and Rate
// are checked elsewhere).
func (m *matcher) matchRecord(rec *Record) bool {
	r := m.rule
	if len(r.Methods) > 0 {
		ok := false
		for _, m := range r.Methods {
			if string(rec.Method) == m {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(r.Statuses) > 0 {
		ok := false
		for _, s := range r.Statuses {
			if rec.Status >= s.Lo && rec.Status <= s.Hi {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(r.LimitReqStatus) > 0 && !slices.Contains(r.LimitReqStatus, rec.LimitReqStatus()) {
		return false
	}
	if m.path != nil && !m.path.match(rec.Path) {
		return false
	}
	if m.ua != nil && !m.ua.match(rec.UserAgent) {
		return false
	}
	return true
}

// Validate checks a rule.
func (r *Rule) Validate() error {
	switch {
	case r.Name == "":
		return fmt.Errorf("rule has no name")
	case r.Stage != model.StageDesign && r.Stage != model.StageCode && r.Stage != model.StageNone:
		return fmt.Errorf("rule %q: stage must be design, code or none", r.Name)
	case r.Path == nil && len(r.Methods) == 0 && len(r.Statuses) == 0 && r.UserAgent == nil && r.Keys == nil && r.Rate == nil && len(r.LimitReqStatus) == 0:
		return fmt.Errorf("rule %q has no condition", r.Name)
	case r.Rate != nil && r.Scope == ScopeRequest:
		return fmt.Errorf("rule %q: a rate condition marks keys (scope: key)", r.Name)
	case r.Rate != nil && (r.Rate.Requests < 1 || r.Rate.WindowS < 1):
		return fmt.Errorf("rule %q: rate needs requests >= 1 and window_s >= 1", r.Name)
	}
	return nil
}

// labelColumnStage maps a CSV label column value to a label: legit (or
// empty) → NoStage, design/code/none → that stage.
func labelColumnStage(b []byte) (model.Stage, bool) {
	switch string(bytes.TrimSpace(b)) {
	case "", "legit", "-":
		return model.NoStage, true
	case "design":
		return model.StageDesign, true
	case "code":
		return model.StageCode, true
	case "none":
		return model.StageNone, true
	}
	return 0, false
}
