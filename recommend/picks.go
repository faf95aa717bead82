package recommend

// The choices of one pass over the candidates, and the result built from
// them.

import (
	"github.com/ratesweep/ratesweep/internal/choice"
	"github.com/ratesweep/ratesweep/model"
)

// pick is a candidate policy: its keys in the choice rule (in the worst
// run; keys.PointID is its index) and its summed violation.
type pick struct {
	idx   int64
	label string
	keys  choice.Keys
	vio   float64
}

// picks are the choices made in one pass over the candidates in order.
type picks struct {
	own      []string  // each run's own best feasible policy
	ownVal   []float64 // and its objective
	overall  *pick
	byAlg    map[string]pick
	near     *pick // the least violation, when nothing is feasible
	feasible int
	// nearAlg is each algorithm's least violation (why an algorithm
	// without a feasible policy dropped out); algs its policies, in order.
	nearAlg map[string]pick
	algs    []string
	count   map[string]int
	// structure fills in a candidate's optional parameters and grid edges
	// from its PointID (choice.Keys.Structure).
	structure func(k *choice.Keys)
}

func newPicks(runs int, structure func(k *choice.Keys)) *picks {
	return &picks{own: make([]string, runs), ownVal: make([]float64, runs), byAlg: map[string]pick{},
		nearAlg: map[string]pick{}, count: map[string]int{}, structure: structure}
}

// nearer reports whether c misses the constraints by less than n.
func (c *pick) nearer(n *pick) bool {
	return c.vio < n.vio || (c.vio == n.vio && choice.Better(&c.keys, &n.keys))
}

// consider offers a candidate (keys.PointID its index in the first run's
// order) to the choices.
func (pk *picks) consider(label, alg string, keys choice.Keys, viol float64, ok bool) {
	keys.Structure = pk.structure
	c := pick{keys.PointID, label, keys, viol}
	if pk.near == nil || c.nearer(pk.near) {
		pk.near = &c
	}
	if pk.count[alg]++; pk.count[alg] == 1 {
		pk.algs = append(pk.algs, alg)
	}
	if n, seen := pk.nearAlg[alg]; !seen || c.nearer(&n) {
		pk.nearAlg[alg] = c
	}
	if !ok {
		return
	}
	pk.feasible++
	if j, seen := pk.byAlg[alg]; !seen || choice.Better(&c.keys, &j.keys) {
		pk.byAlg[alg] = c
	}
	if pk.overall == nil || choice.Better(&c.keys, &pk.overall.keys) {
		pk.overall = &c
	}
}

// build writes the choices of pk into res: runs hold (at least) the
// chosen policies and, among labels/pols, their grid neighbours.
func (o *Options) build(res *Result, runs []*Run, labels []string, pols []model.Policy, pk *picks) *Result {
	obj := o.objective()
	res.Feasible = pk.feasible
	choice := func(c *pick) *Choice {
		ch := &Choice{Label: c.label, Algorithm: algorithmOf(c.label), Worst: c.keys.Objective}
		for k, r := range runs {
			m := r.Measures[ch.Label]
			f := RunFit{Dir: r.Dir, Measure: m, Checks: o.checks(m)}
			if pk.own[k] != "" {
				f.Regret, f.Own = m.metric(obj)-pk.ownVal[k], pk.own[k]
			}
			ch.Runs = append(ch.Runs, f)
		}
		ch.Across = across(ch.Runs)
		neighbors(ch, labels, pols, runs, o)
		ch.Why = why(ch.Label)
		if p, err := model.ParseLabel(ch.Label); err == nil {
			for _, f := range ch.Runs {
				for i := range f.Measure.Clients {
					if a := runs[indexOfRun(runs, f.Dir)].Offered[f.Measure.Clients[i].Client]; a != nil {
						f.Measure.Clients[i].Why = clientWhy(p, a)
					}
				}
			}
		}
		return ch
	}
	res.Notes = append(o.traffic(runs), res.Notes...)
	for _, a := range pk.algs {
		if _, ok := pk.byAlg[a]; ok {
			continue
		}
		if n, ok := pk.nearAlg[a]; ok && n.label != "" {
			res.Notes = append(res.Notes, o.dropOut(a, pk.count[a], n.label, runs))
		}
	}
	if pk.overall == nil {
		res.NearestMiss = choice(pk.near)
		return res
	}
	res.Overall = choice(pk.overall)
	if n := catchesNothing(res.Overall, runs); n != "" {
		res.Notes = append([]string{n}, res.Notes...)
	}
	for _, a := range model.Algorithms {
		if c, ok := pk.byAlg[a.String()]; ok {
			res.ByAlgorithm = append(res.ByAlgorithm, choice(&c))
		}
	}
	return res
}
