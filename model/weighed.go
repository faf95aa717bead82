package model

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// Weighed simulation (docs/costs.md): a policy whose requests carry costs
// or whose count_if asks for their responses runs on its RequestDecider,
// each request with its client's cost and a response status drawn for it.
// A client answers 200, or its fail_status (401 by default) on a share
// fail_share of its requests, drawn per request from the seed, the
// replicate and the client, the same for every policy (common random
// numbers).

// DefaultFailStatus is a failing response's status when a client gives no
// fail_status.
const DefaultFailStatus = 401

// OKStatus is the status of a client's responses that do not fail.
const OKStatus = 200

// RequestCost is what each of the client's requests costs, units (>= 1).
func (c *Client) RequestCost() int64 { return max(1, c.Cost) }

// failStatus is the status of the client's failing responses.
func (c *Client) failStatus() int {
	if c.FailStatus == 0 {
		return DefaultFailStatus
	}
	return c.FailStatus
}

// seedFails seeds the draws of client i's failing responses in realisation
// (seed, replicate).
func seedFails(pcg *rand.PCG, seed uint64, replicate, i int) {
	pcg.Seed(seed, streamSeed(replicate, i)^0x6661696c) // "fail"
}

// nextStatus draws the status of the client's next request.
func (c *Client) nextStatus(rng *rand.Rand) int {
	if c.FailShare > 0 && rng.Float64() < c.FailShare {
		return c.failStatus()
	}
	return OKStatus
}

func (c *Client) validateResponses(p string) error {
	switch {
	case c.Cost < 0 || c.Cost > MaxCost:
		return fieldErr(p+".cost", "must be a whole number of units between 1 and %d, got %d", int64(MaxCost), c.Cost)
	case !(c.FailShare >= 0 && c.FailShare <= 1):
		return fieldErr(p+".fail_share", "must be a share between 0 and 1, got %v", c.FailShare)
	case c.FailStatus != 0 && (c.FailStatus < MinStatus || c.FailStatus > MaxStatus):
		return fieldErr(p+".fail_status", "must be an HTTP status (%d-%d), got %d", MinStatus, MaxStatus, c.FailStatus)
	}
	return nil
}

// decodeClientResponses reads a client's cost, fail_share and fail_status.
func decodeClientResponses(m *yamlx.Map, cl *Client) error {
	var c yamlx.Collector
	if n := m.Get("cost"); n != nil {
		v, err := yamlx.Int(n, m.FieldPath("cost"))
		switch {
		case c.Add(err):
		case v < 1 || v > MaxCost:
			c.Errorf(n, m.FieldPath("cost"), "must be a whole number of units between 1 and %d, got %d", int64(MaxCost), v)
		default:
			cl.Cost = v
		}
	}
	if n := m.Get("fail_share"); n != nil {
		v, err := yamlx.Float(n, m.FieldPath("fail_share"))
		switch {
		case c.Add(err):
		case !(v >= 0 && v <= 1):
			c.Errorf(n, m.FieldPath("fail_share"), "must be a share between 0 and 1 of the client's requests, got %v", v)
		default:
			cl.FailShare = v
		}
	}
	if n := m.Get("fail_status"); n != nil {
		v, err := yamlx.Int(n, m.FieldPath("fail_status"))
		switch {
		case c.Add(err):
		case v < MinStatus || v > MaxStatus:
			c.Errorf(n, m.FieldPath("fail_status"), "must be an HTTP status (%d-%d), got %d", MinStatus, MaxStatus, v)
		default:
			cl.FailStatus = int(v)
		}
	}
	return c.Err()
}

// writeResponses writes the client's cost and failing responses, if any,
// in the canonical YAML.
func (c *Client) writeResponses(b *strings.Builder) {
	if c.Cost > 1 {
		fmt.Fprintf(b, "    cost: %d\n", c.Cost)
	}
	if c.FailShare > 0 {
		fmt.Fprintf(b, "    fail_share: %v\n", c.FailShare)
	}
	if c.FailStatus != 0 {
		fmt.Fprintf(b, "    fail_status: %d\n", c.FailStatus)
	}
}

// failsStochastic reports whether some client's responses are drawn.
func (s *Scenario) failsStochastic() bool {
	for i := range s.Clients {
		if f := s.Clients[i].FailShare; f > 0 && f < 1 {
			return true
		}
	}
	return false
}

// Costed reports whether some client's requests cost more than one unit:
// the sweep then runs every policy Costed.
func (s *Scenario) Costed() bool {
	for i := range s.Clients {
		if s.Clients[i].Cost > 1 {
			return true
		}
	}
	return false
}

// weighClient decides client i's requests at times on d (reset first) in
// realisation (seed, replicate) and calls f with each decision.
func weighClient(d RequestDecider, c *Client, i int, times []int64, seed uint64, replicate int, f func(t int64, ok bool)) {
	pcg := rand.NewPCG(0, 0)
	rng := rand.New(pcg)
	seedFails(pcg, seed, replicate, i)
	cost := c.RequestCost()
	d.Reset()
	for _, t := range times {
		f(t, d.AllowRequest(t, cost, c.nextStatus(rng)))
	}
}

// runWeighed is Run for a Weighed policy, each client on a key of its own.
func (s *Simulator) runWeighed(p Policy, out *Outcome) {
	w := s.w
	times := s.events
	if w.Scenario.Arrivals.Process == Fluid {
		if s.fluidTimes == nil {
			s.fluidTimes = w.Realise(0, 0, nil)
		}
		times = s.fluidTimes
	}
	d := newDecider(p).(RequestDecider)
	var blocks int64
	for i := range w.Scenario.Clients {
		var adm int64
		weighClient(d, &w.Scenario.Clients[i], w.Scenario.stream(i), times[i], s.keySeed, s.keyRep, func(_ int64, ok bool) {
			if ok {
				adm++
			}
		})
		out.Clients[i] = ClientResult{Offered: int64(len(times[i])), Admitted: adm}
		if n, ns, ok := BlockStats(d, int64(w.Scenario.DurationS)*secondNs); ok { // a penalty box
			blocks += n
			out.Clients[i].BlockedNs = ns
		}
	}
	out.Metrics = w.Metrics(out.Clients)
	out.Blocks = blocks
	w.costMetrics(p, out)
}

// CostMetrics are the judged numbers in cost units rather than requests,
// for traffic whose requests carry costs (all 0 otherwise).
type CostMetrics struct {
	OfferedLegit, OfferedAbusive int64
	Caught, Missed, FalseCut     int64
	// Measured says a run's files held the cost columns (set by their
	// readers; the simulators leave it false).
	Measured bool
}

// Add counts requests of one class costing offered units, admitted of them.
func (m *CostMetrics) Add(class Class, offered, admitted int64) {
	if class == Legit {
		m.OfferedLegit += offered
		m.FalseCut += offered - admitted
		return
	}
	m.OfferedAbusive += offered
	m.Caught += offered - admitted
	m.Missed += admitted
}

// costMetrics fills out.Cost from the clients' results and costs when p
// is Costed.
func (w *Workload) costMetrics(p Policy, out *Outcome) {
	out.Cost = CostMetrics{}
	if !p.Costed {
		return
	}
	for i, r := range out.Clients {
		c := &w.Scenario.Clients[i]
		out.Cost.Add(c.Class, r.Offered*c.RequestCost(), r.Admitted*c.RequestCost())
	}
}

// weighedTimeline is Timeline for a Weighed policy.
func (w *Workload) weighedTimeline(p Policy, seed uint64, replicate int, offered, admitted [][]int32) {
	times := w.Realise(seed, replicate, nil) // fluid times do not depend on them; responses do
	d := newDecider(p).(RequestDecider)
	for i := range w.Scenario.Clients {
		offered[i] = make([]int32, w.Scenario.DurationS)
		admitted[i] = make([]int32, w.Scenario.DurationS)
		weighClient(d, &w.Scenario.Clients[i], w.Scenario.stream(i), times[i], seed, replicate, func(t int64, ok bool) {
			offered[i][t/secondNs]++
			if ok {
				admitted[i][t/secondNs]++
			}
		})
	}
}
