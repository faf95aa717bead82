package reference

import (
	"math/rand/v2"

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
