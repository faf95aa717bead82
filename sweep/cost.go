package sweep

import (
	"slices"

	"github.com/ratesweep/ratesweep/model"
)

// relativeCost is the simulation cost of one grid point of algorithm a, in
// hundredths of a fixed_window point: its descriptor's Cost, CPU time per
// point on the lesson's scenario (configs/bench-large.yaml and the default
// spec, one thread; a 2-core VM shared with other jobs, so about ±15%). The
// cost of these kernels hardly depends on the parameters (the sliding
// window keeps a running sum, so window_s does not matter); it depends on
// the algorithm. An algorithm without a Cost counts as 100. Integers keep
// the dealing identical on every machine of a cluster. Re-measure when a
// kernel changes much.
func relativeCost(a model.Algorithm) int64 {
	if d := a.Describe(); d != nil && d.Cost > 0 {
		return d.Cost
	}
	return 100
}

// partCost estimates the cost of simulating part p of grid g.
func partCost(g *Grid, p Part) int64 {
	var cost int64
	for e := range g.spec.Entries {
		lo := g.offsets[e]
		hi := lo + g.spec.Entries[e].Size()
		if n := min(hi, p.To) - max(lo, p.From); n > 0 {
			cost += n * relativeCost(g.spec.Entries[e].Algorithm)
		}
	}
	return cost
}

// ShardParts lists the parts of grid g that belong to shard s, in index
// order. Part boundaries depend on the grid alone (PartPoints); the parts
// are dealt to the s.Count shards by estimated cost, most costly first, each
// to the least loaded shard (ties: lowest part index, lowest shard index), so
// every shard computes the same dealing from the spec and s.Count alone.
func ShardParts(g *Grid, s Shard) []Part {
	all := Parts(g.Points(), Shard{0, 1})
	if s.Count <= 1 {
		return all
	}
	costs := make([]int64, len(all))
	order := make([]int, len(all))
	for i, p := range all {
		costs[i] = partCost(g, p)
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case costs[a] > costs[b]:
			return -1
		case costs[a] < costs[b]:
			return 1
		}
		return a - b
	})
	load := make([]int64, s.Count)
	var out []Part
	for _, i := range order {
		best := 0
		for k := 1; k < s.Count; k++ {
			if load[k] < load[best] {
				best = k
			}
		}
		load[best] += costs[i]
		if best == s.Index {
			out = append(out, all[i])
		}
	}
	slices.SortFunc(out, func(a, b Part) int { return a.Index - b.Index })
	return out
}
