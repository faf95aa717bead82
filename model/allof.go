package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Stacked limits (all_of, docs/stacked-limits.md): a request is admitted
// only if every component admits it. Each component is a complete policy
// of another algorithm with its own parameters and key ("5 a minute per
// integrator and 10 a minute per organisation" is one policy).
//
// RejectedCounts says what the components do with a request that one of
// them rejects:
//
//   - all: every component decides the request as if it were alone, so a
//     component that admits it counts it even when another rejects it (a
//     token bucket spends a token, a window counts it, a log logs it);
//   - none: the components first look without committing (peek); when every
//     one admits, each commits the request; when some reject, those that
//     admit are left untouched (a token bucket spends no token, a window
//     does not count it) and those that reject apply their own rule for a
//     request they reject (sliding_log and fixed_window_anchored count it,
//     haproxy_rate with counts: all counts it, the others do not). This is
//     nginx's rule for several limit_req zones and the key both's.

// RejectedCounts says whether a request that one component of a stacked
// limit rejects is counted by the others.
type RejectedCounts uint8

const (
	// RejectedCountedByAll: every component decides each request as if it
	// were alone.
	RejectedCountedByAll RejectedCounts = iota
	// RejectedCountedByNone: a component counts a request only when every
	// component admits it (or, by its own rule, when it rejects it itself).
	RejectedCountedByNone
)

var rejectedCountsNames = []string{"all", "none"}

func (r RejectedCounts) String() string {
	if int(r) < len(rejectedCountsNames) {
		return rejectedCountsNames[r]
	}
	return fmt.Sprintf("RejectedCounts(%d)", uint8(r))
}

// RejectedCountsParam is the all_of parameter rejected_counts (a grid axis,
// not a Parquet column: the policy label carries it).
var RejectedCountsParam = Param{Name: "rejected_counts", Values: rejectedCountsNames}

// Stack is the components of an all_of policy and what they count.
type Stack struct {
	Components     []Policy
	RejectedCounts RejectedCounts
}

// MaxComponents bounds the components of a stacked limit.
const MaxComponents = 8

// NewStack returns a stack of components of the given algorithms, their
// parameters unset.
func NewStack(algs []Algorithm, rc RejectedCounts) *Stack {
	s := &Stack{RejectedCounts: rc}
	for _, a := range algs {
		s.Components = append(s.Components, Policy{Algorithm: a})
	}
	return s
}

func (s *Stack) clone() *Stack {
	return &Stack{Components: slices.Clone(s.Components), RejectedCounts: s.RejectedCounts}
}

// keyed reports whether some component hangs on a key other than the
// client (nil: none).
func (s *Stack) keyed() bool {
	if s == nil {
		return false
	}
	for _, c := range s.Components {
		if c.Key != KeyClient {
			return true
		}
	}
	return false
}

// Stacked reports whether p is an all_of policy.
func (p Policy) Stacked() bool { return p.Stack != nil }

// ComponentParam splits a stacked parameter name "all_of[i].name" into the
// component index and the component's parameter name.
func ComponentParam(name string) (int, string, bool) {
	rest, ok := strings.CutPrefix(name, allOfAlgorithm.Name+"[")
	if !ok {
		return 0, "", false
	}
	idx, prm, ok := strings.Cut(rest, "].")
	i, err := strconv.Atoi(idx)
	if !ok || err != nil || i < 0 || i >= MaxComponents || strconv.Itoa(i) != idx {
		return 0, "", false
	}
	return i, prm, true
}

// ComponentParamName is the stacked name of component i's parameter name.
func ComponentParamName(i int, name string) string {
	return fmt.Sprintf("%s[%d].%s", allOfAlgorithm.Name, i, name)
}

// setStacked is Set of rejected_counts and all_of[i].name.
func (p *Policy) setStacked(name string, v float64) bool {
	if p.Stack == nil {
		return false
	}
	if name == RejectedCountsParam.Name {
		p.Stack = p.Stack.clone()
		p.Stack.RejectedCounts = RejectedCounts(v)
		return true
	}
	i, prm, ok := ComponentParam(name)
	if !ok || i >= len(p.Stack.Components) {
		return false
	}
	s := p.Stack.clone()
	if !s.Components[i].Set(prm, v) {
		return false
	}
	p.Stack = s
	return true
}

// getStacked is Get of rejected_counts and all_of[i].name (0 otherwise).
func (p *Policy) getStacked(name string) float64 {
	if p.Stack == nil {
		return 0
	}
	if name == RejectedCountsParam.Name {
		return float64(p.Stack.RejectedCounts)
	}
	if i, prm, ok := ComponentParam(name); ok && i < len(p.Stack.Components) {
		return p.Stack.Components[i].Value(prm)
	}
	return 0
}

// StackedParams lists the grid axes of a stacked policy: rejected_counts,
// then every parameter each component takes, as all_of[i].name.
func (p Policy) StackedParams() []string {
	if p.Stack == nil {
		return nil
	}
	out := []string{RejectedCountsParam.Name}
	for i, c := range p.Stack.Components {
		for _, prm := range Params {
			if c.Algorithm.Takes(prm.Name) {
				out = append(out, ComponentParamName(i, prm.Name))
			}
		}
	}
	return out
}

// LookupStackedParam returns the parameter behind a stacked name:
// rejected_counts, or for all_of[i].name the component's parameter name
// under the stacked name (its unit, range, values and scale).
func LookupStackedParam(name string) (Param, bool) {
	if name == RejectedCountsParam.Name {
		return RejectedCountsParam, true
	}
	if _, bare, ok := ComponentParam(name); ok {
		if prm, ok := LookupParam(bare); ok && !strings.HasPrefix(bare, allOfAlgorithm.Name+"[") && bare != RejectedCountsParam.Name {
			prm.Name = name
			return prm, true
		}
	}
	return Param{}, false
}

// allOfAlgorithm is all_of, several limits at once.
var allOfAlgorithm = Descriptor{
	Name: "all_of", Title: "all of", Family: WindowFamily, ColorSlot: -1,
	Cost:     300,
	Validate: validateStack,
	Label: func(p Policy) string {
		if p.Stack == nil {
			return "all of"
		}
		parts := make([]string, len(p.Stack.Components))
		for i, c := range p.Stack.Components {
			parts[i] = c.Algorithm.Describe().Label(c) + keySuffix(c)
		}
		return strings.Join(parts, " + ")
	},
	Why: func(p Policy) string {
		if p.Stack == nil {
			return ""
		}
		var parts []string
		for _, c := range p.Stack.Components {
			if d := c.Algorithm.Describe(); d.Why != nil {
				parts = append(parts, d.Why(c)+keySuffix(c))
			}
		}
		return "when any of its limits cuts: " + strings.Join(parts, "; ")
	},
	blank: func() decider { return &stackDecider{} },
}

// keySuffix names a component's key where it is not the client.
func keySuffix(c Policy) string {
	if c.Key == KeyClient {
		return ""
	}
	return " per " + c.Key.String()
}

// validateStack checks an all_of policy: at least one component, each a
// valid policy of another algorithm on one node, and no deployment
// parameter on the stack itself.
func validateStack(p Policy) error {
	s := p.Stack
	switch {
	case s == nil || len(s.Components) == 0:
		return fieldErr("all_of", "needs a list of component policies (all_of: [{algorithm: …}, …])")
	case len(s.Components) > MaxComponents:
		return fieldErr("all_of", "at most %d components, got %d", MaxComponents, len(s.Components))
	case s.RejectedCounts > RejectedCountedByNone:
		return fieldErr("rejected_counts", "must be all or none")
	case p.Key != KeyClient || p.Nodes > 1 || p.LB != RoundRobin || p.State != Local || p.SyncMs != 0:
		return fieldErr("key", "an all_of policy takes no key, nodes, lb, state or sync_ms of its own: give each component its key (all_of[i].key)")
	}
	for i, c := range p.components() {
		path := fmt.Sprintf("all_of[%d]", i)
		switch {
		case c.Algorithm == AllOf:
			return fieldErr(path, "a component cannot itself be all_of (list its components in the outer all_of)")
		case c.Key == KeyBoth:
			return fieldErr(path+".key", "both is two limits: give them as two components (key: address and key: account)")
		case c.Nodes > 1 || c.LB != RoundRobin || c.State != Local || c.SyncMs != 0:
			return fieldErr(path+".nodes", "components of a stacked limit run on one node with local state (nodes, lb, state, sync_ms are not supported here)")
		}
		if err := c.Validate(); err != nil {
			if fe, ok := err.(*FieldError); ok {
				return &FieldError{Path: path + "." + fe.Path, Msg: fe.Msg}
			}
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// appendStackLabel appends the label of an all_of policy:
// "all_of rejected_counts=none [fixed_window window_s=60 limit=5] [fixed_window window_s=60 limit=10 key=org]",
// each component's own label in brackets, in order.
func (p Policy) appendStackLabel(b []byte) []byte {
	b = append(b, allOfAlgorithm.Name...)
	b = append(b, " rejected_counts="...)
	b = append(b, p.Stack.RejectedCounts.String()...)
	for _, c := range p.Stack.Components {
		b = append(b, " ["...)
		b = c.AppendCanonical(b)
		b = append(b, ']')
	}
	return b
}

// parseStackLabel reads a label of appendStackLabel's form.
func parseStackLabel(s string) (Policy, error) {
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), allOfAlgorithm.Name))
	p := Policy{Algorithm: AllOf, Stack: &Stack{}}
	seenRC := false
	for rest != "" {
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return Policy{}, fmt.Errorf("policy %q: a component's [ has no ]", s)
			}
			c, err := ParseLabel(rest[1:end])
			if err != nil {
				return Policy{}, fmt.Errorf("policy %q: all_of[%d]: %w", s, len(p.Stack.Components), err)
			}
			p.Stack.Components = append(p.Stack.Components, c)
			rest = strings.TrimSpace(rest[end+1:])
			continue
		}
		tok, after, _ := strings.Cut(rest, " ")
		v, ok := strings.CutPrefix(tok, RejectedCountsParam.Name+"=")
		if !ok {
			return Policy{}, fmt.Errorf("policy %q: %q is neither rejected_counts=all|none nor a [component policy]", s, tok)
		}
		i := slices.Index(rejectedCountsNames, v)
		if i < 0 || seenRC {
			return Policy{}, fmt.Errorf("policy %q: rejected_counts must be given once, as all or none", s)
		}
		p.Stack.RejectedCounts, seenRC = RejectedCounts(i), true
		rest = strings.TrimSpace(after)
	}
	if !seenRC {
		return Policy{}, fmt.Errorf("policy %q: all_of needs rejected_counts=all or rejected_counts=none", s)
	}
	if err := p.Validate(); err != nil {
		return Policy{}, fmt.Errorf("policy %q: %w", s, err)
	}
	return p, nil
}

// stackDecider decides an all_of policy whose components all hang on one
// key (the simulator's key for it): one decider per component.
type stackDecider struct {
	parts []decider
	rc    RejectedCounts
}

var (
	_ decider        = (*stackDecider)(nil)
	_ RequestDecider = (*stackDecider)(nil)
)

func (s *stackDecider) configure(p Policy) {
	s.rc = p.Stack.RejectedCounts
	s.parts = s.parts[:0]
	for _, c := range p.components() {
		s.parts = append(s.parts, newDecider(c))
	}
}

// components returns the components of an all_of policy as they decide:
// each spends a request's cost when the stack's traffic carries costs.
func (p Policy) components() []Policy {
	cs := slices.Clone(p.Stack.Components)
	for i := range cs {
		cs[i].Costed = cs[i].Costed || p.Costed
	}
	return cs
}

// weighed reports whether some component weighs requests (its count_if).
func (s *Stack) weighed() bool {
	if s == nil {
		return false
	}
	for _, c := range s.Components {
		if c.Weighed() {
			return true
		}
	}
	return false
}

func (s *stackDecider) Reset() {
	for _, d := range s.parts {
		d.Reset()
	}
}

// Allow reports whether every component admits a request at t, counting it
// as rejected_counts says.
func (s *stackDecider) Allow(t int64) bool { return decideAll(s.parts, s.rc, t, 1, 0) }

// AllowRequest is Allow for a request costing cost units whose response has
// status: each component weighs it as its own modifiers say (its count_if,
// the cost it spends).
func (s *stackDecider) AllowRequest(t, cost int64, status int) bool {
	return decideAll(s.parts, s.rc, t, cost, status)
}

func (s *stackDecider) AllowN(t, n int64) int64 {
	var k int64
	for range n {
		if decideAll(s.parts, s.rc, t, 1, 0) {
			k++
		}
	}
	return k
}

func (s *stackDecider) peek(t int64) bool {
	for _, d := range s.parts {
		if !d.peek(t) {
			return false
		}
	}
	return true
}

func (s *stackDecider) charge(t int64) {
	for _, d := range s.parts {
		d.charge(t)
	}
}

func (s *stackDecider) cloneInto(dst decider) decider {
	d, _ := dst.(*stackDecider)
	if d == nil {
		d = &stackDecider{}
	}
	d.rc = s.rc
	old := d.parts
	d.parts = make([]decider, len(s.parts))
	for i, p := range s.parts {
		var into decider
		if i < len(old) {
			into = old[i]
		}
		d.parts[i] = p.cloneInto(into)
	}
	return d
}

func (s *stackDecider) stateSize(t int64) (bool, int64) {
	var live bool
	var bytes int64
	for _, d := range s.parts {
		l, b := d.stateSize(t)
		live = live || l
		bytes += b
	}
	return live, bytes
}

// decideAll decides a request at t, costing cost units, whose response has
// status, on the components' deciders for its keys: with rejected_counts
// all each decides as if alone; with none they look first and commit only
// when every one admits, while one that rejects applies its own rule for a
// request it rejects. A component that weighs requests (a RequestDecider:
// costs, count_if) weighs this one; the others see its time alone.
func decideAll(parts []decider, rc RejectedCounts, t, cost int64, status int) bool {
	ok := true
	if rc == RejectedCountedByAll {
		for _, d := range parts {
			if !allowRequest(d, t, cost, status) {
				ok = false
			}
		}
		return ok
	}
	for _, d := range parts {
		if !fitsRequest(d, t, cost, status) {
			ok = false
			break
		}
	}
	for _, d := range parts {
		if ok || !fitsRequest(d, t, cost, status) {
			allowRequest(d, t, cost, status)
		}
	}
	return ok
}

// allowRequest decides a request on d: weighed when d weighs requests.
func allowRequest(d decider, t, cost int64, status int) bool {
	if rd, ok := d.(RequestDecider); ok {
		return rd.AllowRequest(t, cost, status)
	}
	return d.Allow(t)
}

// requestFitter is the look without commitment of a decider that weighs
// requests: whether AllowRequest would admit the request now.
type requestFitter interface {
	fitsRequest(t, cost int64, status int) bool
}

// fitsRequest reports whether allowRequest would admit the request now,
// leaving d unchanged.
func fitsRequest(d decider, t, cost int64, status int) bool {
	if f, ok := d.(requestFitter); ok {
		return f.fitsRequest(t, cost, status)
	}
	return d.peek(t)
}

// atOrigin places the components' window boundaries for event times
// counted from originNs (NewDeciderAt).
func (s *stackDecider) atOrigin(originNs int64) {
	for _, d := range s.parts {
		atOrigin(d, originNs)
	}
}

// RetryAfter of all_of: until every component would admit (found by
// probing the stack as a whole).
func (d *stackDecider) RetryAfter(t int64) int64 { return retryAfterSearch(d, t, nil) }
