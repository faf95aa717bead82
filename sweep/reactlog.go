package sweep

import (
	"fmt"
	"runtime"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/model"
)

// logReactions is a trafficSim's scratch for a log whose clients react:
// per worker a key replay and delay pools, per key its result.
type logReactions struct {
	krs       []*model.KeyReplay
	rowDelays [][]model.Delays // per worker, per clients row
	legit     []model.Delays   // per worker
	keys      []model.KeyReaction
	rows      []model.ClientReaction
	weights   []keyWeights // per worker
}

// keyWeights are one key's requests' costs and statuses, unpacked.
type keyWeights struct {
	costs    []int64
	statuses []int16
}

// unpack fills kw from a key's packed costs and statuses (ingest.Traffic.Costs).
func (kw *keyWeights) unpack(resp []uint32) {
	kw.costs, kw.statuses = kw.costs[:0], kw.statuses[:0]
	for _, r := range resp {
		c, st := ingest.UnpackResp(r)
		kw.costs = append(kw.costs, c)
		kw.statuses = append(kw.statuses, int16(st))
	}
}

// runReactions is run for a log whose clients react (traffic.reactions or
// an overlay client's on_reject or throttle): each key's logged requests
// and the retries its client's reaction makes go to a fresh state of the
// policy's limiter in time order (model.KeyReplay), key ranges on every
// core; a key whose client does not react is replayed as without
// reactions. Results are sums per key and pools of latencies, whichever
// goroutine took which key.
func (s *trafficSim) runReactions(p model.Policy, clients []model.ClientResult) model.Metrics {
	tr, g := s.tr, s.grouping
	rxs := s.src.reacts[s.log]
	if s.ranges == nil {
		s.ranges = keyRanges(tr, rangesPerCore*runtime.GOMAXPROCS(0))
	}
	workers := min(runtime.GOMAXPROCS(0), len(s.ranges)-1)
	lr := &s.react
	nr := len(g.Names)
	for len(lr.krs) < workers {
		lr.krs = append(lr.krs, model.NewKeyReplay())
		lr.rowDelays = append(lr.rowDelays, nil)
		lr.legit = append(lr.legit, model.Delays{})
	}
	ds := make([]model.Decider, workers)
	for w := range workers {
		d, err := model.NewDeciderAt(p, s.origin())
		if err != nil {
			// The spec's corners were validated; a point inside them is valid.
			panic(fmt.Sprintf("sweep: invalid policy %v: %v", p, err))
		}
		ds[w] = d
		lr.rowDelays[w] = extendDelays(lr.rowDelays[w], nr)
		lr.legit[w].Reset()
	}
	lr.keys = grow(lr.keys, len(tr.Keys))
	endNs := int64(tr.DurationS) * int64(1e9)
	none := &model.Reaction{}
	shapes := p.Shapes()
	weighed := p.Weighed() && tr.Weighed()
	for len(lr.weights) < workers {
		lr.weights = append(lr.weights, keyWeights{})
	}
	ingest.ForKeyRanges(workers, s.ranges, func(w, lo, hi int) {
		kr, d := lr.krs[w], ds[w]
		for i := lo; i < hi; i++ {
			rx := rxs[i]
			if rx == nil {
				rx = none
			}
			if weighed {
				kw := &lr.weights[w]
				kw.unpack(tr.Costs(i))
				kr.Weigh(kw.costs, kw.statuses)
			}
			kr.Replay(d, rx, s.times[i], tr.Labels(i), endNs, shapes, s.seed, s.rep, tr.Keys[i].Name, &lr.keys[i])
			kr.Delays(&lr.rowDelays[w][g.Of[i]], &lr.legit[w])
		}
	})
	if cap(s.replay.Keys) < len(tr.Keys) {
		s.replay.Keys = make([]ingest.KeyResult, len(tr.Keys))
	}
	s.replay.Keys = s.replay.Keys[:len(tr.Keys)]
	lr.rows = grow(lr.rows, nr)
	clear(lr.rows)
	var rm model.ReactionMetrics
	for i := range lr.keys {
		k := &lr.keys[i]
		s.replay.Keys[i] = ingest.KeyResult{Offered: k.Offered, Admitted: k.Served, OfferedCost: k.OfferedCost, AdmittedCost: k.ServedCost, Blocks: k.Blocks, BlockedNs: k.BlockedNs}
		row := &lr.rows[g.Of[i]]
		for l, a := range k.Attempts {
			row.Attempts += a
			if model.Stage(l) == model.NoStage {
				rm.AttemptsLegit += a
			} else {
				rm.AttemptsAbusive += a
			}
		}
		row.GaveUp += k.GaveUp
		row.Throttled += k.Throttled
		rm.GaveUp += k.GaveUp
		rm.Throttled += k.Throttled
	}
	for w := 1; w < workers; w++ {
		for r := range nr {
			lr.rowDelays[0][r].Merge(&lr.rowDelays[w][r])
		}
		lr.legit[0].Merge(&lr.legit[w])
	}
	for r := range nr {
		d := &lr.rowDelays[0][r]
		lr.rows[r].DelayNs, lr.rows[r].MeanS, lr.rows[r].P99S = d.SumNs(), d.MeanS(), d.P99S()
	}
	m := tr.Metrics(s.replay.Keys) // with the penalty box's blocks
	s.perKey = s.replay.Totals(s.perKey)
	copy(clients, g.Aggregate(s.perKey, clients[:0]))
	rm.LegitDelayMeanS, rm.LegitDelayP99S = lr.legit[0].MeanS(), lr.legit[0].P99S()
	rm.Finish(&m)
	m.Reactions = rm
	return m
}

// clientReactions are the clients rows' reaction measures of the last run.
func (s *trafficSim) clientReactions() []model.ClientReaction { return s.react.rows }

// extendDelays returns ds with n empty pools, reusing their storage.
func extendDelays(ds []model.Delays, n int) []model.Delays {
	for len(ds) < n {
		ds = append(ds, model.Delays{})
	}
	ds = ds[:n]
	for i := range ds {
		ds[i].Reset()
	}
	return ds
}
