package reference

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/ratesweep/ratesweep/model"
)

// Random policies for differential tests: small parameters, so that short
// streams (seconds, a few requests per second) cross every limit. Each
// algorithm is a row of Leaves, each modifier a row of Modifiers; a test
// composes them from a table of shapes.

// LeafGen draws a policy of one algorithm.
type LeafGen struct {
	Name string
	// Product says the algorithm is modelled on a product (the reference
	// drives the model's decider for it) and counts requests, not costs.
	Product bool
	Draw    func(r *rand.Rand) model.Policy
}

var (
	rates      = []float64{0.1, 0.25, 0.5, 1, 1.5, 2, 2.5, 3, 1.0 / 3, 1.0 / 60, 7.0 / 3}
	statuses   = []int{200, 401, 403, 429, 500, 503}
	blockSs    = []float64{0.25, 1, 2.5, 5, 30}
	windowLeaf = func(name string) LeafGen {
		return LeafGen{Name: name, Draw: func(r *rand.Rand) model.Policy {
			return newPolicyOf(name, func(p *model.Policy) {
				p.WindowS, p.Limit = 1+r.IntN(10), int64(r.IntN(9))
				if name == "fixed_window" && r.IntN(2) == 0 {
					p.PhaseS = r.IntN(p.WindowS)
				}
			})
		}}
	}
	bucketLeaf = func(name string) LeafGen {
		return LeafGen{Name: name, Draw: func(r *rand.Rand) model.Policy {
			return newPolicyOf(name, func(p *model.Policy) { p.Rate, p.Capacity = pick(r, rates), int64(1+r.IntN(6)) })
		}}
	}
)

// Leaves lists every registered algorithm but all_of, in registry order.
var Leaves = []LeafGen{
	windowLeaf("fixed_window"),
	windowLeaf("sliding_window"),
	bucketLeaf("token_bucket"),
	windowLeaf("sliding_log"),
	windowLeaf("sliding_counter"),
	bucketLeaf("gcra"),
	{Name: "nginx", Product: true, Draw: func(r *rand.Rand) model.Policy {
		return newPolicyOf("nginx", func(p *model.Policy) { p.Rate, p.Burst, p.Delay = pick(r, rates), int64(r.IntN(6)), int64(r.IntN(7)) })
	}},
	windowLeaf("fixed_window_anchored"),
	{Name: "concurrency", Draw: func(r *rand.Rand) model.Policy {
		return newPolicyOf("concurrency", func(p *model.Policy) { p.Limit, p.ServiceS = int64(r.IntN(5)), pick(r, []float64{0.1, 0.5, 1, 2.5}) })
	}},
	{Name: "haproxy_rate", Product: true, Draw: func(r *rand.Rand) model.Policy {
		return newPolicyOf("haproxy_rate", func(p *model.Policy) {
			p.PeriodS, p.Limit, p.Counts = pick(r, []float64{0.5, 1, 2, 10}), int64(r.IntN(9)), model.HAProxyCounts(r.IntN(2))
		})
	}},
	{Name: "aws_waf_rate", Product: true, Draw: func(r *rand.Rand) model.Policy {
		return newPolicyOf("aws_waf_rate", func(p *model.Policy) {
			p.WindowS, p.Limit, p.LagS = pick(r, []int{60, 120}), int64(10+r.IntN(20)), pick(r, []float64{0, 1, 30})
		})
	}},
	{Name: "cloudflare_rule", Product: true, Draw: func(r *rand.Rand) model.Policy {
		return newPolicyOf("cloudflare_rule", func(p *model.Policy) {
			p.PeriodS, p.RequestsPerPeriod = pick(r, []float64{10, 60}), int64(1+r.IntN(10))
			p.MitigationTimeoutS, p.Counts = pick(r, []int{0, 10, 60}), model.HAProxyCounts(r.IntN(2))
		})
	}},
	{Name: "fastly_erl", Product: true, Draw: func(r *rand.Rand) model.Policy {
		return newPolicyOf("fastly_erl", func(p *model.Policy) {
			p.WindowS, p.Rate, p.PenaltyBoxS = pick(r, []int{1, 10}), float64(10+r.IntN(10)), pick(r, []int{60, 120})
		})
	}},
	{Name: "traefik", Product: true, Draw: func(r *rand.Rand) model.Policy {
		return newPolicyOf("traefik", func(p *model.Policy) {
			p.Rate, p.Capacity = pick(r, []float64{0.5, 1, 2, 3, 10}), int64(1+r.IntN(6))
		})
	}},
	{Name: "fail2ban", Product: true, Draw: func(r *rand.Rand) model.Policy {
		return newPolicyOf("fail2ban", func(p *model.Policy) {
			p.WindowS, p.Limit, p.MitigationTimeoutS = 1+r.IntN(10), int64(1+r.IntN(6)), pick(r, []int{1, 5, 30})
		})
	}},
}

// Modifier puts one modifier on a policy.
type Modifier struct {
	Name  string
	Apply func(r *rand.Rand, p *model.Policy)
}

// Modifiers lists the modifiers a policy may take. block_levels adds a
// penalty box when there is none.
var Modifiers = []Modifier{
	{"count_if", func(r *rand.Rand, p *model.Policy) {
		var sts []int
		for len(sts) == 0 {
			for _, s := range statuses {
				if r.IntN(3) == 0 {
					sts = append(sts, s)
				}
			}
		}
		p.CountIf, _ = model.CountIfOf(sts, 0, 0)
	}},
	{"block_s", func(r *rand.Rand, p *model.Policy) { p.BlockS = pick(r, blockSs) }},
	{"block_levels", func(r *rand.Rand, p *model.Policy) {
		if p.BlockS == 0 {
			p.BlockS = pick(r, blockSs)
		}
		ls := model.BlockLevels{{After: 1, BlockS: pick(r, blockSs)}}
		if r.IntN(2) == 0 {
			ls = append(ls, model.BlockLevel{After: 2 + int64(r.IntN(2)), BlockS: pick(r, blockSs)})
		}
		p.BlockLevels = &ls
	}},
}

// Deployment puts a policy on 2 or 3 nodes behind a round-robin balancer,
// with local or shared state (no lag).
var Deployment = Modifier{"nodes", func(r *rand.Rand, p *model.Policy) {
	p.Nodes, p.State = 2+r.IntN(2), model.State(r.IntN(2))
}}

// Stack returns the all_of policy of parts.
func Stack(rc model.RejectedCounts, parts ...model.Policy) model.Policy {
	return model.Policy{Algorithm: model.AllOf, Stack: &model.Stack{Components: parts, RejectedCounts: rc}}
}

// LeafNamed returns the row of Leaves called name.
func LeafNamed(name string) LeafGen {
	for _, l := range Leaves {
		if l.Name == name {
			return l
		}
	}
	panic("reference: no leaf " + name)
}

func newPolicyOf(name string, set func(p *model.Policy)) model.Policy {
	a, ok := model.ParseAlgorithm(name)
	if !ok {
		panic("reference: unknown algorithm " + name)
	}
	p := model.Policy{Algorithm: a}
	set(&p)
	return p
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// RandomScenario draws a short scenario of 1 to 3 clients; keyed ones send
// from several addresses to several accounts (round robin), some share
// pools and organisations; responses and costs are fixed per client.
func RandomScenario(r *rand.Rand, keyed, costed bool) *model.Scenario {
	sc := &model.Scenario{Name: "random", DurationS: 3 + r.IntN(18)}
	sc.Arrivals.Process = model.ArrivalProcess(r.IntN(4))
	if sc.Arrivals.Process == model.Clustered {
		sc.Arrivals.BurstSize, sc.Arrivals.SpreadS = 1+r.IntN(4), float64(r.IntN(3))*0.5
	}
	for i := range 1 + r.IntN(3) {
		c := model.Client{Name: fmt.Sprintf("c%d", i), Class: model.Class(r.IntN(2))}
		if c.Class == model.Abusive {
			c.Stage = model.StageNone
		}
		for range 1 + r.IntN(2) {
			t0 := r.IntN(sc.DurationS)
			g := model.Segment{T0: t0, T1: t0 + 1 + r.IntN(sc.DurationS-t0), Rate: float64(1 + r.IntN(4))}
			if r.IntN(6) == 0 { // a short burst, above the managed rules' least limits
				g.T1, g.Rate = min(g.T1, t0+1+r.IntN(2)), float64(10+r.IntN(10))
			}
			c.Segments = append(c.Segments, g)
		}
		slices.SortFunc(c.Segments, func(a, b model.Segment) int { return a.T0 - b.T0 })
		for j := 1; j < len(c.Segments); j++ { // segments must not overlap
			c.Segments[j].T0 = max(c.Segments[j].T0, c.Segments[j-1].T1)
			if c.Segments[j].T0 >= c.Segments[j].T1 {
				c.Segments = c.Segments[:j]
				break
			}
		}
		if r.IntN(2) == 0 {
			c.FailShare, c.FailStatus = 1, []int{401, 403, 500}[r.IntN(3)]
		}
		if costed {
			c.Cost = int64(1 + r.IntN(4))
		}
		if keyed {
			c.Keys.Addresses, c.Keys.Accounts = 1+r.IntN(3), 1+r.IntN(3)
			if r.IntN(2) == 0 {
				c.Keys.AddressPool = "office"
			}
			if r.IntN(2) == 0 {
				c.Keys.AccountPool = "users"
			}
		}
		if r.IntN(2) == 0 {
			c.Keys.Org = "acme"
		}
		sc.Clients = append(sc.Clients, c)
	}
	return sc
}

// ScenarioRequests merges the clients' requests at times into one stream in time
// order (ties in client order), with their keys as docs/keys.md assigns
// them: request j of a client comes from address j mod addresses and
// targets account j mod accounts, in its pool's key space or its own; a
// client without an org is an organisation of its own. Responses are a
// client's fail_status when its fail_share is 1, else 200 (draws between
// are not modelled). times are Workload.Realise's, ns.
func ScenarioRequests(sc *model.Scenario, times [][]int64) []Request {
	ids := map[string]int64{}
	id := func(s string) int64 {
		if _, ok := ids[s]; !ok {
			ids[s] = int64(len(ids))
		}
		return ids[s]
	}
	var out []Request
	for i, ts := range times {
		c := &sc.Clients[i]
		space := func(pool, kind string) string {
			if pool != "" {
				return kind + " pool " + pool
			}
			return fmt.Sprintf("%s of client %d", kind, i)
		}
		org := c.Keys.Org
		if org == "" {
			org = fmt.Sprintf("own %d", i)
		}
		status := 200
		if c.FailShare == 1 {
			status = c.FailStatus
			if status == 0 {
				status = model.DefaultFailStatus
			}
		}
		for j, t := range ts {
			out = append(out, Request{TimeNs: t, Client: int64(i),
				Address: id(fmt.Sprintf("%s %d", space(c.Keys.AddressPool, "address"), j%max(1, c.Keys.Addresses))),
				Account: id(fmt.Sprintf("%s %d", space(c.Keys.AccountPool, "account"), j%max(1, c.Keys.Accounts))),
				Org:     id("org " + org), Status: status, Cost: max(1, c.Cost)})
		}
	}
	slices.SortStableFunc(out, func(a, b Request) int { return int(min(max(a.TimeNs-b.TimeNs, -1), 1)) })
	return out
}
