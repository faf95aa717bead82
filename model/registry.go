package model

import (
	"fmt"
	"slices"
)

// Family groups algorithms by the bound they put on a key's traffic, for
// the wording of reports and recommendations.
type Family uint8

const (
	// WindowFamily bounds the requests counted in a window (window_s, limit).
	WindowFamily Family = iota + 1
	// BucketFamily bounds bursts above a sustained rate (rate and a
	// capacity or burst).
	BucketFamily
	// InFlightFamily bounds the requests in flight at once.
	InFlightFamily
)

// Role says who chooses a parameter's value.
type Role uint8

const (
	// Setting is a parameter an operator turns in the limiter's
	// configuration (limit, window_s, rate, capacity).
	Setting Role = iota
	// System is a property of the system the limiter guards, measured
	// rather than chosen (concurrency's service_s, a backend's service
	// time): a sweep over it asks "what if the system were so", and no
	// recommendation tells the operator to change it.
	System
	// Deployment is how the limiter is deployed (key, nodes, lb, state,
	// sync_ms): chosen, but by the architecture rather than the limit's
	// configuration.
	Deployment
)

// String is the role's name in help and documentation.
func (r Role) String() string {
	switch r {
	case System:
		return "system property"
	case Deployment:
		return "deployment"
	}
	return "setting"
}

// Scale is how a parameter's values are usually spread on a grid axis.
type Scale uint8

const (
	LinearScale Scale = iota // evenly spaced values
	LogScale                 // values spanning orders of magnitude
)

// Descriptor is everything one algorithm says about itself: its name and
// parameters, how to build its deciders and faster forms, and how others
// (reports, recommendations, exports, the sweep) describe it. Each
// algorithm declares one in its own file (gcra.go declares gcraAlgorithm)
// and the registry holds them in Algorithm order; nothing outside that file
// switches on the algorithm.
//
// The per-decision loops are concrete methods of the algorithm's decider,
// so the simulator's hot loops inline them; a Descriptor is consulted once
// per policy or batch, never per decision.
type Descriptor struct {
	// Name is the algorithm's snake_case name in specs, labels and the
	// Parquet column algorithm.
	Name string
	// Title is the short noun phrase a legend or heading uses ("sliding
	// window"); empty means Name.
	Title string
	// Family is the kind of bound it puts on a key's traffic.
	Family Family
	// Lesson marks the lesson's three algorithms, which the
	// report draws on its own trade-off figure.
	Lesson bool
	// ColorSlot is the algorithm's colour on every plot: an index into the
	// report's palette, or -1 for none (Color, or a colour made from the
	// name).
	ColorSlot int
	// Color is the algorithm's colour on every plot as "#rrggbb" when it has
	// no palette slot; "" lets the report make one from Name.
	Color string
	// Params are the parameters a policy must give (names in Params).
	Params []string
	// Optional are the parameters it may give (absent ones hold their
	// Default), besides the deployment parameters every algorithm takes.
	Optional []string
	// Example is the label of a valid policy of the algorithm (ParseLabel's
	// form, e.g. "fixed_window window_s=60 limit=600"): the policy tests,
	// generated docs and tables start from.
	Example string
	// CountsRejected is true when a rejected request still counts against
	// the key (sliding_log logs every attempt).
	CountsRejected bool
	// Cost is the simulation cost of one grid point relative to a
	// fixed_window point, in hundredths (the sweep deals shards by it); 0
	// means 100.
	Cost int64
	// Validate reports parameters out of the algorithm's range, as a
	// *FieldError naming the parameter; nil accepts every value within the
	// parameters' own minimums.
	Validate func(p Policy) error
	// Label is a short human name for a policy, e.g. "sliding window 60 s".
	Label func(p Policy) string
	// Why says in words when the policy cuts a request.
	Why func(p Policy) string
	// Bound states a client's traffic a (requests per second) against the
	// policy's bound, e.g. "up to 700 requests in 60 s against 600"; nil
	// says nothing.
	Bound func(p Policy, a []float64) string
	// ValueName names value v of parameter name where a word says it better
	// than the number (nginx's delay at or above burst is "nodelay"), given
	// the policy's other parameters (get); "" keeps the number.
	ValueName func(name string, v float64, get func(name string) float64) string
	// Shapes reports whether a policy delays some requests it admits (its
	// decider is then a Shaper); nil means never.
	Shapes func(p Policy) bool
	// AxisLabels name parameters on plot axes where the generic name with
	// its unit would mislead (concurrency's limit counts requests in flight).
	AxisLabels map[string]string
	// NewDecider returns a Decider for a valid policy, in the state of a new
	// key: the one constructor an algorithm registered from outside the
	// package gives. Policies that decide on two keys at once (key: both)
	// or on lagged shared state (sync_ms > 0) need a Decider that also
	// implements SharedState; Validate rejects them otherwise, and the
	// state_* metrics count the state of a SharedState decider only.
	NewDecider func(p Policy) Decider

	// blank returns an unconfigured decider (algorithms of this package).
	blank func() decider
	// kernel is the per-second form of the lesson's algorithms (fluid
	// arrivals, the lesson's semantics), or nil.
	kernel func(p Policy, a, adm []int32) int64
	// lockstep runs policies of the algorithm side by side on one key's
	// requests (Lockstep), or nil.
	lockstep func(ps []Policy, originNs int64) (Lockstep, bool)
	// count is the counting form of a count-based algorithm (CountFunc), or
	// nil.
	count func(p Policy, originNs int64) func(ts []int64, c []int32, cap int64)
}

// SharedState is the optional interface of a Decider that can decide under
// two keys at once (key: both) and on lagged shared state (sync_ms > 0),
// and whose state the state_* metrics measure.
type SharedState interface {
	// Peek reports whether a request at tNs would be admitted, without
	// changing a decision to come.
	Peek(tNs int64) bool
	// Charge commits one request at tNs to the state as an admitted one
	// would, whether or not it would be admitted.
	Charge(tNs int64)
	// Clone returns an independent copy.
	Clone() Decider
	// StateSize reports whether the decider holds state a new key would not
	// have at tNs, and its size in bytes.
	StateSize(tNs int64) (live bool, bytes int64)
}

// registry holds the algorithms' descriptors by Algorithm (index 0 unused),
// filled by init (the descriptors refer to code that reads it).
var registry []*Descriptor

func init() {
	registry = []*Descriptor{
		FixedWindow:         &fixedWindowAlgorithm,
		SlidingWindow:       &slidingWindowAlgorithm,
		TokenBucket:         &tokenBucketAlgorithm,
		SlidingLog:          &slidingLogAlgorithm,
		SlidingCounter:      &slidingCounterAlgorithm,
		GCRA:                &gcraAlgorithm,
		Nginx:               &nginxAlgorithm,
		FixedWindowAnchored: &anchoredWindowAlgorithm,
		Concurrency:         &concurrencyAlgorithm,
		HAProxyRate:         &haproxyRateAlgorithm,
		AWSWAFRate:          &awsWAFRateAlgorithm,
		CloudflareRule:      &cloudflareRuleAlgorithm,
		FastlyERL:           &fastlyERLAlgorithm,
		AllOf:               &allOfAlgorithm,
		Fail2ban:            &fail2banAlgorithm,
		Traefik:             &traefikAlgorithm,
	}
	for a := 1; a < len(registry); a++ {
		Algorithms = append(Algorithms, Algorithm(a))
	}
	buildLabelTables()
}

// Algorithms lists every algorithm in a stable order (the lesson's three
// first, then in the order registered).
var Algorithms []Algorithm

// Register adds an algorithm to the registry and returns its Algorithm. It
// is meant for package initialisation and tests (algorithms of this module
// are declared in its registry); it is not safe for use concurrently with
// anything else in the package. d must have a new Name, NewDecider, Label,
// parameters known to Params and a colour slot of its own (or -1).
func Register(d Descriptor) (Algorithm, error) {
	switch {
	case d.Name == "":
		return 0, fmt.Errorf("model: Register: no name")
	case d.NewDecider == nil && d.blank == nil:
		return 0, fmt.Errorf("model: Register %s: no NewDecider", d.Name)
	case d.Label == nil:
		return 0, fmt.Errorf("model: Register %s: no Label", d.Name)
	case len(registry) >= 255:
		return 0, fmt.Errorf("model: Register %s: too many algorithms", d.Name)
	}
	if _, dup := ParseAlgorithm(d.Name); dup {
		return 0, fmt.Errorf("model: Register %s: name taken", d.Name)
	}
	for _, a := range Algorithms {
		if d.ColorSlot >= 0 && registry[a].ColorSlot == d.ColorSlot {
			return 0, fmt.Errorf("model: Register %s: colour slot %d is %s's (-1: no slot, Color or a colour made from the name)", d.Name, d.ColorSlot, registry[a].Name)
		}
	}
	for _, n := range slices.Concat(d.Params, d.Optional) {
		if _, ok := LookupParam(n); !ok {
			return 0, fmt.Errorf("model: Register %s: unknown parameter %q", d.Name, n)
		}
	}
	registry = append(registry, &d)
	a := Algorithm(len(registry) - 1)
	Algorithms = append(Algorithms, a)
	buildLabelTables()
	return a, nil
}

// Describe returns the algorithm's descriptor (nil for an unknown one).
// The descriptor is shared: do not change it.
func (a Algorithm) Describe() *Descriptor {
	if int(a) <= 0 || int(a) >= len(registry) {
		return nil
	}
	return registry[a]
}

// Title is the algorithm's short noun phrase (its Name when it has none).
func (a Algorithm) Title() string {
	if d := a.Describe(); d != nil && d.Title != "" {
		return d.Title
	}
	return a.String()
}

// decider returns a new unconfigured decider of the algorithm.
func (d *Descriptor) decider() decider {
	if d.blank != nil {
		return d.blank()
	}
	return &foreignDecider{desc: d}
}

// deploymentParams are the parameters every algorithm takes (docs/keys.md).
var deploymentParams = []string{"key", "nodes", "lb", "state", "sync_ms"}

// foreignDecider is the decider of an algorithm registered from outside the
// package, whose Decider is rebuilt for each policy.
type foreignDecider struct {
	Decider
	desc *Descriptor
}

var _ decider = (*foreignDecider)(nil)

func (f *foreignDecider) configure(p Policy) { f.Decider = f.desc.NewDecider(p) }

func (f *foreignDecider) shared() SharedState {
	s, ok := f.Decider.(SharedState)
	if !ok {
		panic("model: " + f.desc.Name + " has no shared-state form (Validate rejects such policies)")
	}
	return s
}

func (f *foreignDecider) peek(t int64) bool { return f.shared().Peek(t) }
func (f *foreignDecider) charge(t int64)    { f.shared().Charge(t) }

func (f *foreignDecider) cloneInto(decider) decider {
	return &foreignDecider{Decider: f.shared().Clone(), desc: f.desc}
}

func (f *foreignDecider) stateSize(t int64) (bool, int64) {
	if s, ok := f.Decider.(SharedState); ok {
		return s.StateSize(t)
	}
	return false, 0
}

// ExamplePolicy returns the algorithm's Example policy (a valid policy of
// it); for all_of, two components at their examples. It panics on an
// algorithm whose Example does not parse: a registration error.
func ExamplePolicy(a Algorithm) Policy {
	if a == AllOf {
		return Policy{Algorithm: AllOf, Stack: &Stack{Components: []Policy{ExamplePolicy(FixedWindow), ExamplePolicy(TokenBucket)}}}
	}
	d := a.Describe()
	if d == nil {
		panic(fmt.Sprintf("model: no algorithm %d", a))
	}
	p, err := ParseLabel(d.Example)
	if err != nil || p.Algorithm != a {
		panic(fmt.Sprintf("model: %s: Example %q: %v", d.Name, d.Example, err))
	}
	return p
}
