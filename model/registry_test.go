package model

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Every registered algorithm's definition is complete and consistent: a
// name that parses back, parameters the columns know, a label, words for
// when it cuts, a colour of its own, and a decider for a valid policy.
func TestRegistryConformance(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 3))
	slots, colors := map[int]Algorithm{}, map[string]Algorithm{}
	for _, a := range Algorithms {
		t.Run(a.String(), func(t *testing.T) {
			d := a.Describe()
			if d == nil || d.Name != a.String() {
				t.Fatalf("Describe() = %v", d)
			}
			if b, ok := ParseAlgorithm(d.Name); !ok || b != a {
				t.Errorf("ParseAlgorithm(%q) = %v, %v", d.Name, b, ok)
			}
			for _, n := range slices.Concat(d.Params, d.Optional) {
				if _, ok := LookupParam(n); !ok {
					t.Errorf("parameter %q not in Params", n)
				}
			}
			if (len(d.Params) == 0 && a != AllOf) || d.Label == nil || d.Why == nil || d.blank == nil || d.Validate == nil {
				t.Errorf("incomplete: params %v, label %v, why %v, decider %v, validate %v",
					d.Params, d.Label != nil, d.Why != nil, d.blank != nil, d.Validate != nil)
			}
			if b, dup := slots[d.ColorSlot]; dup && d.ColorSlot >= 0 {
				t.Errorf("colour slot %d also %v's", d.ColorSlot, b)
			}
			slots[d.ColorSlot] = a
			if b, dup := colors[d.Color]; dup && d.Color != "" {
				t.Errorf("colour %s also %v's", d.Color, b)
			}
			colors[d.Color] = a
			p := randomPolicy(rng, a)
			if err := p.Validate(); err != nil {
				t.Fatalf("%v: %v", p, err)
			}
			if !strings.HasPrefix(p.Canonical(), d.Name+" ") || p.Label() == "" || d.Why(p) == "" {
				t.Errorf("%v: canonical %q, label %q, why %q", p, p.Canonical(), p.Label(), d.Why(p))
			}
			if q, err := ParseLabel(p.Canonical()); err != nil || q.Canonical() != p.Canonical() {
				t.Errorf("ParseLabel(%q) = %v, %v", p.Canonical(), q, err)
			}
			if _, isShaper := newDecider(p).(Shaper); p.Shapes() && !isShaper {
				t.Errorf("%v shapes, but its decider is no Shaper", p)
			}
			if _, ok := CountFunc(p, 0); ok != (d.count != nil) {
				t.Errorf("CountFunc ok %v, counting form %v", ok, d.count != nil)
			}
		})
	}
}

// Register refuses an incomplete or duplicate definition, and a parameter
// the columns do not know.
func TestRegisterRefuses(t *testing.T) {
	n := len(registry)
	newD := func(Policy) Decider { return nil }
	label := func(Policy) string { return "" }
	for _, d := range []Descriptor{
		{},
		{Name: "x"},
		{Name: "x", NewDecider: newD},
		{Name: "gcra", NewDecider: newD, Label: label},
		{Name: "x", NewDecider: newD, Label: label, Params: []string{"no_such_param"}, ColorSlot: -1},
		{Name: "x", NewDecider: newD, Label: label, Params: []string{"limit"}}, // slot 0 is fixed_window's
	} {
		if _, err := Register(d); err == nil {
			t.Errorf("Register(%+v): no error", d)
		}
	}
	if len(registry) != n {
		t.Fatalf("registry grew from %d to %d", n, len(registry))
	}
}

// Every algorithm's Example is a valid policy of it whose label reads back.
func TestExamplePolicies(t *testing.T) {
	for _, a := range Algorithms {
		p := ExamplePolicy(a)
		if err := p.Validate(); err != nil {
			t.Errorf("%s: example %v: %v", a, p, err)
		}
		back, err := ParseLabel(p.Canonical())
		if err != nil || back.Canonical() != p.Canonical() {
			t.Errorf("%s: example %q reads back as %q (%v)", a, p.Canonical(), back.Canonical(), err)
		}
	}
}
