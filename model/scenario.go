// Package model holds ratesweep's workloads, limiter algorithms, simulation and
// metrics. It does no I/O and draws nothing: callers hand it bytes or values and
// get values back.
package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Class says whether a client's requests are legitimate or abusive.
type Class uint8

const (
	Legit Class = iota
	Abusive
)

func (c Class) String() string {
	if c == Abusive {
		return "abusive"
	}
	return "legit"
}

// Stage says where an abusive client could have been closed more cheaply than
// by the rate limiter. Legitimate clients have NoStage.
type Stage uint8

const (
	NoStage     Stage = iota // legitimate clients
	StageDesign              // the workflow could have closed it
	StageCode                // code (e.g. a second factor) could have closed it
	StageNone                // only the rate limiter can close it
)

// Stages lists the abusive stages in report order.
var Stages = []Stage{StageDesign, StageCode, StageNone}

func (s Stage) String() string {
	switch s {
	case StageDesign:
		return "design"
	case StageCode:
		return "code"
	case StageNone:
		return "none"
	}
	return ""
}

// Segment is a piecewise-constant stretch of arrivals: Rate requests in each
// second t with T0 <= t < T1 (seconds from the start of the scenario).
type Segment struct {
	T0, T1 int
	Rate   float64 // requests per second
}

// Client is one source of traffic with one rate-limit key.
type Client struct {
	Name     string
	Class    Class
	Stage    Stage // abusive clients only
	Segments []Segment
	Keys     ClientKeys // addresses and accounts (default: one of each)
	React    Reaction   // retries and throttling (default: none)
	// Cost is what each of its requests costs, units (0 means 1;
	// docs/costs.md).
	Cost int64
	// FailShare is the share of its requests whose response fails, with
	// status FailStatus (0 means 401); the others answer 200. Which ones is
	// drawn per request from the seed and replicate.
	FailShare  float64
	FailStatus int
}

// Scenario is a traffic model: clients and their arrivals over DurationS seconds.
type Scenario struct {
	Name      string
	DurationS int
	Clients   []Client
	Arrivals  Arrivals // how requests are placed inside each second (default fluid)

	// streams is each client's index in the scenario a key shard was cut
	// from (KeepClients): the client draws that index's random streams.
	// Nil means the clients' own indices.
	streams []int
	// keyed says the scenario a key shard was cut from is Keyed: the shard
	// takes the same simulation path.
	keyed bool
}

// FieldError is a validation error at a field path such as
// "clients[2].segments[0]". Loaders attach the file name and line.
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func fieldErr(path, format string, args ...any) error {
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// MaxDurationS bounds a scenario's length (one week of seconds).
const MaxDurationS = 7 * 24 * 3600

// maxSegmentRate bounds a segment's rate (the per-second series is int32).
const maxSegmentRate = 1e9

// MaxEventRequests bounds the expected requests of a scenario with event
// (non-fluid) arrivals: a Simulator keeps every request time (8 bytes each).
const MaxEventRequests = 50_000_000

// Validate checks a scenario and returns the first problem as a *FieldError.
func (s *Scenario) Validate() error {
	if s.Name == "" {
		return fieldErr("name", "missing")
	}
	if s.DurationS <= 0 {
		return fieldErr("duration_s", "must be a positive number of seconds, got %d", s.DurationS)
	}
	if s.DurationS > MaxDurationS {
		return fieldErr("duration_s", "at most %d seconds, got %d", MaxDurationS, s.DurationS)
	}
	if err := s.Arrivals.validate(); err != nil {
		return err
	}
	if len(s.Clients) == 0 && s.streams == nil { // a key shard may hold none
		return fieldErr("clients", "at least one client is needed")
	}
	seen := make(map[string]int, len(s.Clients))
	var expected float64 // requests, all clients
	for i, c := range s.Clients {
		p := fmt.Sprintf("clients[%d]", i)
		if c.Name == "" {
			return fieldErr(p+".name", "missing")
		}
		if j, dup := seen[c.Name]; dup {
			return fieldErr(p+".name", "duplicate client name %q (also clients[%d])", c.Name, j)
		}
		seen[c.Name] = i
		switch {
		case c.Class == Legit && c.Stage != NoStage:
			return fieldErr(p+".stage", "only abusive clients have a stage")
		case c.Class == Abusive && c.Stage == NoStage:
			return fieldErr(p+".stage", "missing for an abusive client (design | code | none)")
		}
		if err := c.Keys.validate(p); err != nil {
			return err
		}
		if err := c.validateResponses(p); err != nil {
			return err
		}
		if len(c.Segments) == 0 {
			return fieldErr(p+".segments", "at least one segment [t0, t1, requests per second] is needed")
		}
		for k, g := range c.Segments {
			sp := segPath(p, k)
			switch {
			case math.IsNaN(g.Rate) || math.IsInf(g.Rate, 0) || g.Rate < 0:
				return fieldErr(sp(), "rate must be a finite number >= 0, got %v", g.Rate)
			case g.Rate != math.Trunc(g.Rate) && s.Arrivals.Process == Fluid:
				return fieldErr(sp(), "rate must be a whole number of requests per second with fluid arrivals, got %v (uniform, poisson and clustered arrivals take fractional rates)", g.Rate)
			case g.Rate > maxSegmentRate:
				return fieldErr(sp(), "rate must be at most %g requests per second, got %v", float64(maxSegmentRate), g.Rate)
			case g.T0 >= g.T1:
				return fieldErr(sp(), "t0 must be less than t1, got [%d, %d)", g.T0, g.T1)
			case g.T0 < 0 || g.T1 > s.DurationS:
				return fieldErr(sp(), "[%d, %d) reaches outside 0 <= t < duration_s = %d", g.T0, g.T1, s.DurationS)
			}
			expected += float64(g.T1-g.T0) * g.Rate
		}
		if k, m, ok := overlap(c.Segments); ok {
			g, o := c.Segments[k], c.Segments[m]
			return fieldErr(segPath(p, k)(), "[%d, %d) overlaps segments[%d] [%d, %d)", g.T0, g.T1, m, o.T0, o.T1)
		}
	}
	if err := s.validateKeyCounts(); err != nil {
		return err
	}
	if err := s.validateReactions(); err != nil {
		return err
	}
	if s.Arrivals.Process != Fluid && expected > MaxEventRequests {
		return fieldErr("clients", "%.0f requests expected; %s arrivals allow at most %d (fluid arrivals have no such limit)",
			expected, s.Arrivals.Process, MaxEventRequests)
	}
	return nil
}

// segPath returns the field path of segment k of client path p, built
// only when an error needs it (a client may have 300,000 segments).
func segPath(p string, k int) lazyPath {
	return func() string { return fmt.Sprintf("%s.segments[%d]", p, k) }
}

type lazyPath func() string

// overlap finds two segments sharing a second, in n log n: it sorts them by
// start and compares neighbours. It returns the pair whose later index k is
// smallest (k > m), as a pairwise scan would report first.
func overlap(segs []Segment) (k, m int, ok bool) {
	order := make([]int, len(segs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(segs[a].T0, segs[b].T0) })
	end := -1 // index of the segment reaching furthest so far
	for _, i := range order {
		if end >= 0 && segs[i].T0 < segs[end].T1 {
			hi, lo := max(i, end), min(i, end)
			if !ok || hi < k || (hi == k && lo < m) {
				k, m, ok = hi, lo, true
			}
		}
		if end < 0 || segs[i].T1 > segs[end].T1 {
			end = i
		}
	}
	return k, m, ok
}

// Series returns the client's offered requests in each second of a scenario
// of durationS seconds under fluid arrivals (fractional rates truncated).
func (c *Client) Series(durationS int) []int32 {
	a := make([]int32, durationS)
	for _, g := range c.Segments {
		for t := max(g.T0, 0); t < min(g.T1, durationS); t++ {
			a[t] = int32(g.Rate)
		}
	}
	return a
}
