package model

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// Every algorithm either spends costs or refuses a Costed policy by the
// parameter cost (all_of: a component that cannot, all_of[i].cost); at cost 1 a Costed policy decides as the bare decider.
func TestCostEveryAlgorithm(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 4))
	for _, a := range Algorithms {
		t.Run(a.String(), func(t *testing.T) {
			for range 30 {
				p := randomPolicy(rng, a)
				if err := p.Validate(); err != nil {
					t.Fatalf("%v: %v", p, err)
				}
				bare := newDecider(p)
				p.Costed = true
				err := p.Validate()
				if err != nil {
					var fe *FieldError
					if !errors.As(err, &fe) || (fe.Path != "cost" && !(a == AllOf && strings.HasSuffix(fe.Path, ".cost"))) {
						t.Fatalf("%v: refused with %v, want a FieldError on cost", p, err)
					}
					return
				}
				rd := newDecider(p).(RequestDecider)
				ts, _ := randomBatches(rng, 300)
				for i, tNs := range ts {
					if got, want := rd.AllowRequest(tNs, 1, 0), bare.Allow(tNs); got != want {
						t.Fatalf("%v: request %d at %d cost 1: %v, bare decider %v", p, i, tNs, got, want)
					}
				}
			}
		})
	}
}
