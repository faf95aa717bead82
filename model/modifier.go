package model

// How a policy composes (docs/algorithms.md):
//
//   - an algorithm decides for one key (a Descriptor in its own file);
//   - a modifier wraps the decider of any algorithm and changes what it
//     sees or answers: the penalty box (reject a key for block_s after a
//     rejection), request costs (a request spends cost units), conditional
//     counting (only requests whose response matches count). Each is one
//     file declaring one modifier; the registry applies those a policy uses,
//     innermost first, when it builds the policy's decider;
//   - a combinator decides over several deciders (all_of: every component,
//     each on its own key, must admit), through the same peek and charge
//     that shared state uses;
//   - client reactions (retries, back-off) are not part of the policy: the
//     simulator replays them from the answers, and a decider that knows when
//     a key may come back says so (RetryAfter).
//
// What a modifier needs beyond the decider interface is an optional ability
// of the deciders, found by type assertion (as Shaper is): costs need an
// all-or-nothing spend of c units (x/time/rate's AllowN, unlike this
// package's AllowN of n separate requests), Retry-After needs the time a
// rejected key may come back. An algorithm whose decider lacks the ability
// refuses the policies that need it in Validate, by parameter name.
//
// A modified policy runs on deciders only: the per-second kernels, the
// lockstep and counting forms and the closed forms describe the bare
// algorithm and are skipped (Policy.modified), until a modifier brings a
// faster form with its own equivalence test.

// modifier wraps the decider of any registered algorithm.
type modifier struct {
	// name is the modifier's name in documentation and errors.
	name string
	// uses reports whether policy p uses the modifier (e.g. block_s > 0).
	uses func(p Policy) bool
	// wrap returns a decider that applies the modifier over inner, a
	// decider of p's algorithm configured for p. It sees inner only through
	// the decider interface (Allow, peek, charge, cloneInto, stateSize), so
	// it works on every algorithm.
	wrap func(inner decider, p Policy) decider
	// validate, when set, reports why p cannot use the modifier (an
	// algorithm without the ability it needs), as a *FieldError naming the
	// parameter; it is called only when uses(p).
	validate func(p Policy) error
}

// modifiers are the registered modifiers, applied in this order (the first
// innermost).
var modifiers = []*modifier{&costModifier, &countIfModifier, &penaltyBoxModifier}

// validateModifiers reports why p cannot use a modifier it uses.
func (p Policy) validateModifiers() error {
	if err := validateWeighed(p); err != nil {
		return err
	}
	for _, m := range modifiers {
		if m.validate != nil && m.uses(p) {
			if err := m.validate(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// modifierParams are the modifiers' parameters, which every algorithm takes
// (optional, default 0).
var modifierParams = []string{"block_s"}

// modified reports whether some modifier applies to p, so that p must run
// on its deciders.
func (p Policy) modified() bool {
	for _, m := range modifiers {
		if m.uses(p) {
			return true
		}
	}
	return false
}

// modify wraps d, a decider configured for p, in the modifiers p uses.
func modify(d decider, p Policy) decider {
	for _, m := range modifiers {
		if m.uses(p) {
			d = m.wrap(d, p)
		}
	}
	return d
}

// wrapper is the base of a modifier's decider: it forwards every operation
// to the inner decider. A modifier embeds it and overrides what it changes
// (usually Allow, AllowN and Reset, and peek and charge when it keeps state
// of its own). cloneInto is the modifier's own to write: a copy must copy
// the modifier's state and keep the wrap.
type wrapper struct{ inner decider }

func (w *wrapper) Reset()                          { w.inner.Reset() }
func (w *wrapper) Allow(t int64) bool              { return w.inner.Allow(t) }
func (w *wrapper) AllowN(t, n int64) int64         { return w.inner.AllowN(t, n) }
func (w *wrapper) configure(p Policy)              { w.inner.configure(p) }
func (w *wrapper) peek(t int64) bool               { return w.inner.peek(t) }
func (w *wrapper) charge(t int64)                  { w.inner.charge(t) }
func (w *wrapper) stateSize(t int64) (bool, int64) { return w.inner.stateSize(t) }

// atOrigin moves the inner decider's window boundaries (NewDeciderAt).
func (w *wrapper) atOrigin(originNs int64) { atOrigin(w.inner, originNs) }
