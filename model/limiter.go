package model

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// Algorithm names a rate-limiting algorithm.
type Algorithm uint8

const (
	FixedWindow         Algorithm = iota + 1 // counter reset at each window boundary
	SlidingWindow                            // admitted requests in the last window seconds
	TokenBucket                              // refilled bucket, starts full (x/time/rate)
	SlidingLog                               // every attempt in the last window seconds, rejected ones too
	SlidingCounter                           // Cloudflare/RussellLuo: previous window weighted
	GCRA                                     // generic cell rate algorithm (throttled, redis_rate)
	Nginx                                    // nginx limit_req: leaky bucket that delays within burst
	FixedWindowAnchored                      // fixed window opened by the first hit (express, ulule)
	Concurrency                              // Stripe in-flight limit, constant service time
	HAProxyRate                              // HAProxy stick-table rate (freq_ctr), periods from the key's first request
	AWSWAFRate                               // AWS WAF rate-based rule: trailing-window count checked every 10 s, lagged
	CloudflareRule                           // Cloudflare rate limiting rule: sliding counter, mitigation timeout
	FastlyERL                                // Fastly Edge Rate Limiting: 1 s buckets, rate per second, penalty box
	AllOf                                    // several limits at once (stacked): every component must admit
	Traefik                                  // Traefik's rateLimit middleware: x/time/rate Reserve, maxDelay, idle TTL
	Fail2ban                                 // fail2ban 1.0.2's jail: failures counted in a ticket rescaled past findtime, then a ban
)

// Algorithms and their descriptors: registry.go; each algorithm's own
// file (fixed_window.go, gcra.go, …) declares its Descriptor.

func (a Algorithm) String() string {
	if d := a.Describe(); d != nil {
		return d.Name
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// ParseAlgorithm returns the algorithm with the given snake_case name.
func ParseAlgorithm(name string) (Algorithm, bool) {
	for a := 1; a < len(registry); a++ {
		if registry[a].Name == name {
			return Algorithm(a), true
		}
	}
	return 0, false
}

// Param describes one policy parameter. Its Name is also its Parquet column.
// Which algorithms take it, and whether it is required there, is said by
// Algorithm.Params (required) and Algorithm.OptionalParams (default 0).
type Param struct {
	Name  string
	Int   bool   // an int64 column (whole numbers only); otherwise a double column
	Whole bool   // whole numbers only, even in a double column
	Unit  string // for help and axis labels
	Min   float64
	// MinOpen makes Min exclusive (value > Min) rather than inclusive.
	MinOpen bool
	// Values, when set, makes the parameter enumerated: value i (a whole
	// number) means Values[i]. Specs write the names; the Parquet column is a
	// string (dictionary) column of the names.
	Values []string
	// Default is the value an absent optional parameter has (0 unless said).
	Default float64
	// Role says who chooses the value: an operator (Setting), the system
	// the limiter guards (System) or the deployment (Deployment).
	Role Role
	// Scale is how its values are usually spread on a grid axis.
	Scale Scale
	// field reads and writes the parameter in a Policy (nil for the
	// parameters of all_of, which live in its components).
	field *access
}

// access reads and writes one parameter's field of a Policy as a float64:
// the field's offset in Policy and its kind, so that a read is a load and a
// conversion (the writer reads every parameter of every point).
type access struct {
	off  uintptr // the field's offset in Policy, bytes
	kind reflect.Kind
}

// fieldOf is the access to the field f points at (f returns the address
// of one field of the Policy it is given).
func fieldOf[T ~int | ~int64 | ~float64 | ~uint8](f func(p *Policy) *T) *access {
	var p Policy
	off := uintptr(unsafe.Pointer(f(&p))) - uintptr(unsafe.Pointer(&p))
	if off >= unsafe.Sizeof(p) {
		panic("model: fieldOf: not a field of Policy")
	}
	return &access{off: off, kind: reflect.TypeFor[T]().Kind()}
}

// get returns the field's value in p.
func (a *access) get(p *Policy) float64 {
	at := unsafe.Add(unsafe.Pointer(p), a.off)
	switch a.kind {
	case reflect.Int:
		return float64(*(*int)(at))
	case reflect.Int64:
		return float64(*(*int64)(at))
	case reflect.Float64:
		return *(*float64)(at)
	default: // reflect.Uint8: the enumerations
		return float64(*(*uint8)(at))
	}
}

// set sets the field in p to v; whole-number fields truncate v.
func (a *access) set(p *Policy, v float64) {
	at := unsafe.Add(unsafe.Pointer(p), a.off)
	switch a.kind {
	case reflect.Int:
		*(*int)(at) = int(v)
	case reflect.Int64:
		*(*int64)(at) = int64(v)
	case reflect.Float64:
		*(*float64)(at) = v
	default:
		*(*uint8)(at) = uint8(v)
	}
}

// Params lists every parameter of every algorithm, in column order.
var Params = []Param{
	{Name: "window_s", Whole: true, Unit: "s", Min: 0, MinOpen: true, Scale: LogScale, field: fieldOf(func(p *Policy) *int { return &p.WindowS })},
	{Name: "limit", Int: true, Unit: "requests", Min: 0, Scale: LogScale, field: fieldOf(func(p *Policy) *int64 { return &p.Limit })},
	{Name: "rate", Unit: "requests/s", Min: 0, MinOpen: true, Scale: LogScale, field: fieldOf(func(p *Policy) *float64 { return &p.Rate })},
	{Name: "capacity", Int: true, Unit: "requests", Min: 1, Scale: LogScale, field: fieldOf(func(p *Policy) *int64 { return &p.Capacity })},
	{Name: "phase_s", Int: true, Unit: "s", Min: 0, field: fieldOf(func(p *Policy) *int { return &p.PhaseS })},
	{Name: "burst", Int: true, Unit: "requests", Min: 0, Scale: LogScale, field: fieldOf(func(p *Policy) *int64 { return &p.Burst })},
	{Name: "delay", Int: true, Unit: "requests", Min: 0, field: fieldOf(func(p *Policy) *int64 { return &p.Delay })},
	{Name: "service_s", Unit: "s", Min: 0, MinOpen: true, Role: System, Scale: LogScale, field: fieldOf(func(p *Policy) *float64 { return &p.ServiceS })},
	// Keys and distributed state (docs/keys.md): every algorithm takes them.
	{Name: "key", Values: keyNames, Role: Deployment, field: fieldOf(func(p *Policy) *Key { return &p.Key })},
	{Name: "nodes", Int: true, Unit: "nodes", Min: 1, Default: 1, Role: Deployment, field: fieldOf(func(p *Policy) *int { return &p.Nodes })},
	{Name: "lb", Values: lbNames, Role: Deployment, field: fieldOf(func(p *Policy) *LB { return &p.LB })},
	{Name: "state", Values: stateNames, Role: Deployment, field: fieldOf(func(p *Policy) *State { return &p.State })},
	{Name: "sync_ms", Unit: "ms", Min: 0, Role: System, field: fieldOf(func(p *Policy) *float64 { return &p.SyncMs })},
	// HAProxy's stick-table rates (haproxy_rate, docs/haproxy-rate.md).
	{Name: "period_s", Unit: "s", Min: 0, MinOpen: true, Scale: LogScale, field: fieldOf(func(p *Policy) *float64 { return &p.PeriodS })},
	{Name: "counts", Values: []string{"all", "admitted"}, field: fieldOf(func(p *Policy) *HAProxyCounts { return &p.Counts })},
	// Managed rules (aws_waf_rate, cloudflare_rule, fastly_erl: docs/managed-rules.md).
	{Name: "lag_s", Unit: "s", Min: 0, MinOpen: true, Default: DefaultAWSLagS, Role: System, field: fieldOf(func(p *Policy) *float64 { return &p.LagS })},
	{Name: "requests_per_period", Int: true, Unit: "requests", Min: 1, Scale: LogScale, field: fieldOf(func(p *Policy) *int64 { return &p.RequestsPerPeriod })},
	{Name: "mitigation_timeout_s", Whole: true, Unit: "s", Min: 0, field: fieldOf(func(p *Policy) *int { return &p.MitigationTimeoutS })},
	{Name: "penalty_box_s", Whole: true, Unit: "s", Min: 60, field: fieldOf(func(p *Policy) *int { return &p.PenaltyBoxS })},
	{Name: "undercount_pct", Unit: "%", Min: 0, Role: System, field: fieldOf(func(p *Policy) *float64 { return &p.UndercountPct })},
	// The penalty box (docs/penalty-box.md): every algorithm takes it.
	{Name: "block_s", Unit: "s", Min: 0, field: fieldOf(func(p *Policy) *float64 { return &p.BlockS })},
}

// ParamName returns the name of value v of an enumerated parameter, or ""
// when v is not one of its values.
func (p Param) ParamName(v float64) string {
	if i := int(v); float64(i) == v && i >= 0 && i < len(p.Values) {
		return p.Values[i]
	}
	return ""
}

// ParamValue returns the value of name n of an enumerated parameter.
func (p Param) ParamValue(n string) (float64, bool) {
	i := slices.Index(p.Values, n)
	return float64(i), i >= 0
}

// LookupParam returns the parameter called name: one of Params, or an
// all_of policy's rejected_counts or all_of[i].name (LookupStackedParam).
func LookupParam(name string) (Param, bool) {
	for _, p := range Params {
		if p.Name == name {
			return p, true
		}
	}
	return LookupStackedParam(name)
}

// Params lists the parameter names an algorithm requires.
func (a Algorithm) Params() []string {
	if d := a.Describe(); d != nil {
		return d.Params
	}
	return nil
}

// OptionalParams lists the parameter names an algorithm takes but does not
// require. An absent optional parameter holds its Default (0 unless said),
// which gives the behaviour of a policy written before the parameter
// existed: fixed_window phase_s 0 puts boundaries at multiples of window_s
// (the lesson); nginx delay 0 is nginx's default (every request beyond the
// first of a burst waits).
func (a Algorithm) OptionalParams() []string {
	d := a.Describe()
	if d == nil {
		return deploymentParams
	}
	return append(append(d.Optional[:len(d.Optional):len(d.Optional)], deploymentParams...), modifierParams...)
}

// Takes reports whether parameter name applies to the algorithm (required or
// optional); the sweep writes null in the other columns.
func (a Algorithm) Takes(name string) bool {
	return slices.Contains(a.Params(), name) || slices.Contains(a.OptionalParams(), name)
}

// Policy is one algorithm with one setting of its parameters, applied per key.
type Policy struct {
	Algorithm Algorithm
	// WindowS is the window length, seconds (fixed, sliding and anchored
	// windows, sliding_log, sliding_counter).
	WindowS int
	// Limit is the number of requests admitted per window; for concurrency,
	// the number of requests in flight at once.
	Limit int64
	// Rate is the sustained rate, requests (tokens) per second: token_bucket,
	// gcra, nginx. The limiters read it as the decimal written (0.1 is 1/10
	// exactly) or as the fraction it rounds from (1/60): exact.go.
	Rate float64
	// Capacity is the number of requests admitted at once from idle
	// (token_bucket, gcra: the bucket starts full).
	Capacity int64
	// PhaseS offsets fixed_window's boundaries to phase_s + k·window_s,
	// seconds, 0 <= phase_s < window_s.
	PhaseS int
	// Burst is nginx's burst: requests accepted beyond the one in service, so
	// burst+1 pass at once from idle.
	Burst int64
	// Delay is nginx's delay: the first delay+1 requests of a burst pass at
	// once and the rest wait. delay >= burst is nginx's nodelay.
	Delay int64
	// ServiceS is how long an admitted request stays in flight, seconds
	// (concurrency).
	ServiceS float64

	// Key is what the limit hangs on (default: one key per client).
	Key Key
	// Nodes is the number of gateway instances behind the load balancer
	// (0 and 1 both mean one).
	Nodes int
	// LB is how the load balancer spreads requests over the nodes.
	LB LB
	// State says whether nodes keep their own limiter state or share it.
	State State
	// SyncMs is the shared-state lag, milliseconds: a write (an admitted
	// request's charge) reaches the shared store SyncMs after the node made
	// it; until then only that node sees it. 0 is an atomic store (Redis Lua).
	SyncMs float64

	// PeriodS is haproxy_rate's period, seconds (a whole number of ms).
	PeriodS float64
	// Counts is which requests haproxy_rate counts.
	Counts HAProxyCounts

	// LagS is aws_waf_rate's detection lag, seconds (0 means its default).
	LagS float64
	// RequestsPerPeriod is cloudflare_rule's requests_per_period.
	RequestsPerPeriod int64
	// MitigationTimeoutS is cloudflare_rule's mitigation timeout, seconds
	// (0: block only while the rate is over, Cloudflare's throttle).
	MitigationTimeoutS int
	// PenaltyBoxS is fastly_erl's penalty box TTL, seconds (whole minutes).
	PenaltyBoxS int
	// UndercountPct is fastly_erl's undercount, percent of the requests
	// counted (0 counts exactly).
	UndercountPct float64
	// BlockS is the penalty box's block, seconds (0: none): the first
	// request the limiter rejects blocks the key for BlockS (penaltybox.go).
	BlockS float64
	// BlockLevels escalates the block with the key's earlier blocks
	// (nil: every block is BlockS long). A pointer keeps Policy comparable;
	// policies share it: do not change it.
	BlockLevels *BlockLevels

	// CountIf is the response statuses a request must have to count against
	// the limit (count_if, docs/costs.md) in canonical form ("401,403",
	// "500-599"); "" counts every request.
	CountIf string
	// Costed says the traffic's requests carry costs: a request spends its
	// cost units (cost.go). The sweep sets it for traffic with costs.
	Costed bool
	// Stack holds the components of an all_of policy (allof.go), nil
	// otherwise. It is shared between copies of the policy: Set copies it
	// before changing it.
	Stack *Stack
}

// Limits on parameters so that times fit int64 nanoseconds.
const (
	maxWindowS = 1 << 30 // seconds (34 years)
	maxRate    = 1e9     // requests/s: one per nanosecond
	maxSpanNs  = 1 << 62 // any derived duration, ns

	maxNginxRate  = 1e6  // requests/s
	maxNginxBurst = 1e12 // requests
)

// Validate reports parameters out of range for the policy's algorithm, as a
// *FieldError naming the parameter.
func (p Policy) Validate() error {
	if err := p.validateAlgorithm(); err != nil {
		return err
	}
	if err := p.validateModifiers(); err != nil {
		return err
	}
	if err := p.validateDistribution(); err != nil {
		return err
	}
	return p.validatePenaltyBox()
}

func (p Policy) validateAlgorithm() error {
	d := p.Algorithm.Describe()
	if d == nil {
		return fieldErr("algorithm", "unknown algorithm %d", p.Algorithm)
	}
	if d.Validate != nil {
		if err := d.Validate(p); err != nil {
			return err
		}
	}
	if d.blank == nil && (p.Key == KeyBoth || p.SyncMs != 0) {
		if _, ok := d.NewDecider(p).(SharedState); !ok {
			if p.Key == KeyBoth {
				return fieldErr("key", "%s cannot decide on two keys at once (its decider has no shared-state form)", d.Name)
			}
			return fieldErr("sync_ms", "%s cannot run on lagged shared state (its decider has no shared-state form)", d.Name)
		}
	}
	return nil
}

// Get returns the value of parameter name (0 for parameters p does not have).
func (p *Policy) Get(name string) float64 {
	if j, ok := paramByName[name]; ok {
		return Params[j].field.get(p)
	}
	return p.getStacked(name)
}

// paramByName is the index in Params of each parameter's name.
var paramByName = func() map[string]int {
	m := make(map[string]int, len(Params))
	for j, prm := range Params {
		m[prm.Name] = j
	}
	return m
}()

// Value is Get with absent parameters at their Default (nodes 0 is 1): the
// value the sweep writes.
func (p *Policy) Value(name string) float64 {
	v := p.Get(name)
	if v == 0 {
		if prm, ok := LookupParam(name); ok {
			return prm.Default
		}
	}
	return v
}

// Values writes Value of every parameter into dst, in the order of Params
// (len(dst) >= len(Params)), without looking names up: the writer's per-point
// path.
func (p *Policy) Values(dst []float64) {
	_ = dst[len(Params)-1]
	for j := range Params {
		dst[j] = p.ValueAt(j)
	}
}

// ValueAt is Values' dst[j] alone: the value of parameter Params[j] (its
// default where the field holds 0).
func (p *Policy) ValueAt(j int) float64 {
	prm := &Params[j]
	if v := prm.field.get(p); v != 0 {
		return v
	}
	return prm.Default
}

// Set sets parameter name to v; it reports false for an unknown name.
// Whole-number parameters are truncated; range checks are Validate's job.
func (p *Policy) Set(name string, v float64) bool {
	j, ok := paramByName[name]
	if !ok {
		return p.setStacked(name, v)
	}
	return p.SetParam(j, v)
}

// SetParam is Set of Params[j] (by index, not by name: a grid sets one
// parameter per point).
func (p *Policy) SetParam(j int, v float64) bool {
	if j < 0 || j >= len(Params) {
		return false
	}
	Params[j].field.set(p, v)
	return true
}

// stringOrder is the order in which String lists parameters.
var stringOrder = []string{"limit", "window_s", "period_s", "counts", "rate", "capacity", "burst", "delay", "service_s", "phase_s",
	"key", "nodes", "lb", "state", "sync_ms", "requests_per_period", "mitigation_timeout_s", "lag_s", "penalty_box_s", "undercount_pct", "block_s"}

// String names the algorithm and its parameters, e.g.
// "fixed_window limit=600 window_s=60"; optional parameters appear only when
// they are not 0.
func (p Policy) String() string {
	if p.Stack != nil {
		return p.Canonical()
	}
	var b strings.Builder
	b.WriteString(p.Algorithm.String())
	for _, name := range stringOrder {
		v := p.Value(name)
		prm, _ := LookupParam(name)
		if slices.Contains(p.Algorithm.Params(), name) || (v != prm.Default && slices.Contains(p.Algorithm.OptionalParams(), name)) {
			if n := prm.ParamName(v); n != "" {
				fmt.Fprintf(&b, " %s=%s", name, n)
				continue
			}
			fmt.Fprintf(&b, " %s=%s", name, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	if p.CountIf != "" {
		b.WriteString(" count_if=" + p.CountIf)
	}
	return b.String()
}

// Shapes reports whether the policy delays admitted requests (nginx with
// delay < burst) rather than only admitting or rejecting them.
func (p Policy) Shapes() bool {
	d := p.Algorithm.Describe()
	return d != nil && d.Shapes != nil && d.Shapes(p)
}

// Admit runs policy p over one key's offered requests per second a (fluid
// arrivals: the a[t] requests of second t arrive together at t seconds),
// writes the admitted requests per second into adm (len(adm) >= len(a)) and
// returns the total admitted. The lesson's three algorithms have per-second
// kernels; the others run their Decider on the batches. p must be valid.
func Admit(p Policy, a, adm []int32) int64 {
	if n, ok := admitKernel(p, a, adm); ok {
		return n
	}
	return admitBatches(newDecider(p), a, adm, nil)
}

// admitKernel runs the per-second kernel of p's algorithm, if it has one.
func admitKernel(p Policy, a, adm []int32) (int64, bool) {
	k := p.Algorithm.Describe().kernel
	if k == nil || p.modified() {
		return 0, false
	}
	return k(p, a, adm[:len(a)]), true
}
