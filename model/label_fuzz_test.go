package model_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/model/reference"
)

// randomTree draws a policy tree: a leaf of any registered algorithm (the
// reference's generators, or the algorithm's Example), its modifiers, a
// deployment, or an all_of of such leaves.
func randomTree(r *rand.Rand) model.Policy {
	leaf := func() model.Policy {
		a := model.Algorithms[r.IntN(len(model.Algorithms))]
		if a == model.AllOf {
			a = model.FixedWindow
		}
		var p model.Policy
		if g, ok := leafGen(a.String()); ok {
			p = g.Draw(r)
		} else {
			p = model.ExamplePolicy(a)
		}
		for _, m := range reference.Modifiers {
			if r.IntN(3) == 0 {
				q := p
				m.Apply(r, &q)
				if q.Validate() == nil {
					p = q
				}
			}
		}
		return p
	}
	if r.IntN(3) > 0 {
		p := leaf()
		if r.IntN(4) == 0 {
			q := p
			reference.Deployment.Apply(r, &q)
			if q.Validate() == nil {
				p = q
			}
		}
		return p
	}
	parts := make([]model.Policy, 1+r.IntN(3))
	for i := range parts {
		parts[i] = leaf()
		parts[i].Key = []model.Key{model.KeyClient, model.KeyAddress, model.KeyAccount, model.KeyOrg, model.KeyGlobal}[r.IntN(5)]
	}
	return reference.Stack(model.RejectedCounts(r.IntN(2)), parts...)
}

// leafGen returns the reference's generator of the algorithm called name.
func leafGen(name string) (reference.LeafGen, bool) {
	for _, g := range reference.Leaves {
		if g.Name == name {
			return g, true
		}
	}
	return reference.LeafGen{}, false
}

// The canonical label is the policy: parse(label(p)) = p for every valid
// policy tree, leaves with their modifiers and deployments, and all_of
// stacks of them.
func FuzzPolicyLabel(f *testing.F) {
	for seed := range uint64(64) {
		f.Add(seed, seed*7919)
	}
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		r := rand.New(rand.NewPCG(s1, s2))
		p := randomTree(r)
		if p.Validate() != nil {
			return
		}
		label := p.Canonical()
		q, err := model.ParseLabel(label)
		if err != nil {
			t.Fatalf("ParseLabel(%q): %v", label, err)
		}
		if !reflect.DeepEqual(q, p) && q.Canonical() != label {
			t.Fatalf("ParseLabel(%q) = %q (%+v), want %+v", label, q.Canonical(), q, p)
		}
		vp, vq := make([]float64, len(model.Params)), make([]float64, len(model.Params))
		p.Values(vp)
		q.Values(vq)
		if !reflect.DeepEqual(vp, vq) || q.CountIf != p.CountIf || !reflect.DeepEqual(q.BlockLevels, p.BlockLevels) || !reflect.DeepEqual(q.Stack, p.Stack) {
			t.Fatalf("ParseLabel(%q): %+v, want %+v", label, q, p)
		}
	})
}
