package sweep

import (
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/model"
)

// source is the traffic a run simulates: a scenario (model.Workload) or a
// replayed access log (ingest.Traffic). It names the clients rows of a point
// and hands each worker its own simulator.
type source interface {
	rows() (names []string, classes []model.Class, stages []model.Stage)
	newSim() pointSim
}

// pointSim simulates one point on one realisation; one per goroutine.
type pointSim interface {
	// setReplicate selects the realisation (seed, replicate).
	setReplicate(seed uint64, rep int)
	// run applies p and writes len(rows) client results and the metrics.
	run(p model.Policy, clients []model.ClientResult) model.Metrics
}

// batchSim is a pointSim that simulates several points in one pass.
type batchSim interface {
	// runBatch simulates a prefix of ps (of the same replicate) in one pass
	// and returns its length, 0 when the first point needs run. Point k's
	// client results and metrics go to put, in order.
	runBatch(ps []model.Policy, put func(k int, clients []model.ClientResult, m *model.Metrics)) int
}

// fastSim is a pointSim with closed forms that answer runs of points at
// once, writing straight into the part's rows.
type fastSim interface {
	// runFast simulates a prefix of ps (of the same replicate) and returns
	// its length, 0 when the first point needs run. The results go to dst
	// (model.Simulator.RunFastCols).
	runFast(ps []model.Policy, dst *model.FastRun) int
}

// maxBatch bounds a batch of count-based points, maxLockstep one of points
// of a model.Lockstep and maxMany one of points replayed by their Deciders:
// the scratch is points × clients rows, and the runner checks for
// cancellation between batches. A Lockstep's state, a few int64 per point,
// stays in the L1 cache.
const (
	maxBatch    = 1024
	maxLockstep = 64
	maxMany     = 64
)

// newSource loads the spec's workload: its scenario (streamed: per-second
// series built per client, see model.NewStreamedWorkload), or its log.
func newSource(ctx context.Context, spec *Spec, streamed bool) (source, error) {
	if spec.Traffic == nil {
		load := model.NewWorkload
		if streamed {
			load = model.NewStreamedWorkload
		}
		wl, err := load(spec.Scenario)
		if err != nil {
			return nil, err
		}
		return scenarioSource{wl}, nil
	}
	logs := spec.Traffic.Logs
	if len(logs) == 0 {
		logs = []string{spec.Traffic.Log}
	}
	src := &trafficSource{cfg: spec.Traffic}
	opt, err := spec.weighedOptions()
	if err != nil {
		return nil, err
	}
	for _, log := range logs {
		tr, err := ingest.Load(ctx, log, opt)
		if err != nil {
			return nil, err
		}
		if ov := spec.Traffic.Overlay; ov != nil {
			if tr, err = tr.WithOverlay(ov, spec.Traffic.Spread, spec.Seed); err != nil {
				return nil, inputErrorf("%s: %v", log, err)
			}
		}
		if len(tr.Keys) == 0 && spec.Traffic.Options.Partition.All() {
			return nil, inputErrorf("%s: no requests to replay", log)
		}
		src.trs = append(src.trs, tr)
	}
	src.tr = src.trs[0]
	if len(src.trs) == 1 {
		src.groupings = []*ingest.Rows{src.tr.Rows(spec.Traffic.TopKeys)}
	} else {
		src.groupings = ingest.LabelRows(src.trs)
	}
	src.grouping = src.groupings[0]
	if spec.Traffic.Reacts() {
		for _, tr := range src.trs {
			src.reacts = append(src.reacts, tr.KeyReactions(spec.Traffic))
		}
	}
	src.views = make([][][]int64, len(src.trs))
	for i, tr := range src.trs {
		if tr.Unspread(spec.Traffic.Spread) {
			src.views[i] = tr.KeyTimes()
		}
	}
	return src, nil
}

type scenarioSource struct{ wl *model.Workload }

func (s scenarioSource) rows() ([]string, []model.Class, []model.Stage) {
	var names []string
	var classes []model.Class
	var stages []model.Stage
	for _, c := range s.wl.Scenario.Clients {
		names, classes, stages = append(names, c.Name), append(classes, c.Class), append(stages, c.Stage)
	}
	return names, classes, stages
}

func (s scenarioSource) newSim() pointSim { return &scenarioSim{sim: s.wl.NewSimulator(), wl: s.wl} }

type scenarioSim struct {
	sim  *model.Simulator
	wl   *model.Workload // its clients cost (costcols.go)
	out  model.Outcome
	outs []model.Outcome // runBatch
}

// runBatch runs leading points of ps in one pass over an event workload's
// requests: those that differ only in their limit, when the algorithm is
// count-based (Simulator.RunLimits), or up to maxLockstep of one
// state-dependent algorithm (Simulator.RunLockstep); otherwise it declines.
func (s *scenarioSim) runBatch(ps []model.Policy, put func(k int, clients []model.ClientResult, m *model.Metrics)) int {
	if noBatch {
		return 0
	}
	if s.sim.CanRunLockstep(ps[0]) {
		n := 1
		for n < len(ps) && n < maxLockstep && ps[n].Algorithm == ps[0].Algorithm && s.sim.CanRunLockstep(ps[n]) {
			n++
		}
		if n < 2 {
			return 0
		}
		if len(s.outs) < n {
			s.outs = append(s.outs, make([]model.Outcome, n-len(s.outs))...)
		}
		if !s.sim.RunLockstep(ps[:n], s.outs[:n]) {
			return 0
		}
		for k := range n {
			put(k, s.outs[k].Clients, &s.outs[k].Metrics)
		}
		return n
	}
	if !s.sim.CanRunLimits(ps[0]) {
		return 0
	}
	n := 1
	for n < len(ps) && n < maxBatch && ps[n].Algorithm == ps[0].Algorithm {
		q := ps[n]
		q.Limit = ps[0].Limit
		if q != ps[0] {
			break
		}
		n++
	}
	if n < 2 {
		return 0
	}
	if len(s.outs) < n {
		s.outs = append(s.outs, make([]model.Outcome, n-len(s.outs))...)
	}
	if !s.sim.RunLimits(ps[:n], s.outs[:n]) {
		return 0
	}
	for k := range n {
		put(k, s.outs[k].Clients, &s.outs[k].Metrics)
	}
	return n
}

func (s *scenarioSim) runFast(ps []model.Policy, dst *model.FastRun) int {
	if noBatch {
		return 0
	}
	return s.sim.RunFastCols(ps, dst)
}

func (s *scenarioSim) setReplicate(seed uint64, rep int) { s.sim.SetReplicate(seed, rep) }

func (s *scenarioSim) run(p model.Policy, clients []model.ClientResult) model.Metrics {
	s.out.Clients = clients
	s.sim.Run(p, &s.out)
	return s.out.Metrics
}

// trafficSource replays a log: every key is offered its requests, and the
// clients rows are the top keys plus "other keys" rows per label. Several
// logs (days) are the replicates, replicate r replaying log r mod n, with
// one clients row per label.
type trafficSource struct {
	cfg       *ingest.Config
	tr        *ingest.Traffic // the first log
	grouping  *ingest.Rows    // the first log's rows
	trs       []*ingest.Traffic
	groupings []*ingest.Rows
	// views[i] is trs[i].KeyTimes() where the spread leaves its times as
	// logged (every worker reads them; nil otherwise).
	views [][][]int64
	// reacts[i] is trs[i]'s keys' clients' reactions (Traffic.KeyReactions)
	// when some react, else nil (reactlog.go).
	reacts [][]*model.Reaction
}

func (s *trafficSource) rows() ([]string, []model.Class, []model.Stage) {
	return s.grouping.Names, s.grouping.Class, s.grouping.Stage
}

func (s *trafficSource) newSim() pointSim {
	return &trafficSim{src: s, tr: s.tr, grouping: s.grouping, deciders: map[model.Algorithm]model.Decider{}}
}

type trafficSim struct {
	src      *trafficSource
	tr       *ingest.Traffic // the replicate's log
	grouping *ingest.Rows    // and its clients rows
	times    [][]int64       // the replicate's request times (read-only)
	spread   [][]int64       // storage of times spread inside their second
	replay   ingest.Replay
	perKey   []model.ClientResult
	deciders map[model.Algorithm]model.Decider

	ranges []int // key range bounds for the goroutines of run (keyRanges)

	// The replicate: its log's index, seed and number (reactions).
	log, rep int
	seed     uint64
	react    logReactions

	// One pass for many limits of a count-based policy (runBatch).
	counts  ingest.CountReplay
	limits  []int64
	rows    []model.ClientResult
	metrics []model.Metrics
}

// keyRanges splits t's keys into up to n ranges of about equal requests
// (bounds, first 0, last len(t.Keys)); logs below minParallelRequests get one.
func keyRanges(t *ingest.Traffic, n int) []int {
	total := t.Requests()
	if total < minParallelRequests {
		n = 1
	}
	bounds := []int{0}
	var sum int64
	for i := range t.Keys {
		sum += int64(len(t.Times(i)))
		if len(bounds) < n && sum*int64(n) >= total*int64(len(bounds)) && i+1 < len(t.Keys) {
			bounds = append(bounds, i+1)
		}
	}
	return append(bounds, len(t.Keys))
}

// rangesPerCore is how many key ranges a log's replay is split into per
// core: cores take them in turn, so one that drew light keys takes more
// (the heaviest keys, first in key order, cost more than their share of
// requests where a lockstep settles light keys at once).
const rangesPerCore = 8

// minParallelRequests is the smallest log whose per-point replay is split
// into key ranges (a variable for the tests).
var minParallelRequests int64 = 1 << 16

// noBatch turns runBatch off (tests compare the two paths).
var noBatch = false

// runBatch replays up to maxBatch leading points of ps in one pass over the
// log. Points that differ only in their limit, of a count-based algorithm
// (model.CountFunc), take each request's count once and every limit from it
// (ReplayCounts); points of one state-dependent algorithm decide each
// request together (model.Lockstep); other points run their Deciders key by
// key over the same requests while they are in cache; both by ReplayMany,
// in key ranges over every core. Every way the decisions are the per-point
// replay's.
func (s *trafficSim) runBatch(ps []model.Policy, put func(k int, clients []model.ClientResult, m *model.Metrics)) int {
	if noBatch || ps[0].Weighed() || s.src.reacts != nil { // weighed policies and reactions replay request by request (run)
		return 0
	}
	// The batch paths replay times alone: a weighed point (its requests'
	// costs or statuses decide) ends the batch, wherever it stands.
	if k := slices.IndexFunc(ps, model.Policy.Weighed); k >= 0 {
		ps = ps[:k]
	}
	tr := s.tr
	nr := len(s.grouping.Names)
	if s.ranges == nil {
		s.ranges = keyRanges(tr, rangesPerCore*runtime.GOMAXPROCS(0))
	}
	n := 1
	if count, ok := model.CountFunc(ps[0], s.origin()); ok {
		same := func(p model.Policy) bool {
			p.Limit = ps[0].Limit
			return p == ps[0]
		}
		for n < len(ps) && n < maxBatch && same(ps[n]) {
			n++
		}
		s.limits = s.limits[:0]
		for _, p := range ps[:n] {
			s.limits = append(s.limits, p.Limit)
		}
		s.rows = grow(s.rows, n*nr)
		s.metrics = grow(s.metrics, n)
		counts := []func(ts []int64, c []int32, cap int64){count} // one per goroutine: each has its state
		for len(counts) < min(runtime.GOMAXPROCS(0), len(s.ranges)-1) {
			c, _ := model.CountFunc(ps[0], s.origin())
			counts = append(counts, c)
		}
		tr.ReplayCounts(s.times, counts, s.limits, s.ranges, s.grouping, s.rows, s.metrics, &s.counts)
	} else {
		bs := make([]ingest.Batch, min(runtime.GOMAXPROCS(0), len(s.ranges)-1)) // one per goroutine
		for n < len(ps) && n < maxLockstep && ps[n].Algorithm == ps[0].Algorithm {
			n++
		}
		for r := range bs {
			ls, ok := model.NewLockstep(ps[:n], s.origin())
			if !ok {
				break
			}
			bs[r] = ls
		}
		if bs[0] == nil {
			n = 1
			for n < len(ps) && n < maxMany && !model.CountBased(ps[n].Algorithm) {
				n++
			}
			for r := range bs {
				ds := make([]ingest.Decider, n)
				for k, p := range ps[:n] {
					d, err := model.NewDeciderAt(p, s.origin())
					if err != nil {
						// The spec's corners were validated; a point inside them is valid.
						panic(fmt.Sprintf("sweep: invalid policy %v: %v", p, err))
					}
					ds[k] = d
				}
				bs[r] = ingest.Deciders(ds)
			}
		}
		s.rows = grow(s.rows, n*nr)
		s.metrics = grow(s.metrics, n)
		tr.ReplayMany(s.times, bs, s.ranges, s.grouping, s.rows, s.metrics, &s.counts)
	}
	for k := range n {
		put(k, s.rows[k*nr:(k+1)*nr], &s.metrics[k])
	}
	return n
}

// origin is the Unix time (ns) the replay's windows are placed from (the
// replicate's log).
func (s *trafficSim) origin() int64 { return s.src.cfg.WindowOrigin.OriginNs(s.tr) }

func (s *trafficSim) setReplicate(seed uint64, rep int) {
	i := rep % len(s.src.trs)
	s.log, s.seed, s.rep = i, seed, rep
	if s.src.trs[i] != s.tr {
		s.ranges = nil // key ranges are per log
	}
	s.tr, s.grouping = s.src.trs[i], s.src.groupings[i]
	if s.src.views[i] != nil {
		s.times = s.src.views[i]
		return
	}
	s.spread = s.tr.Realise(s.src.cfg.Spread, seed, rep, s.spread)
	s.times = s.spread
}

func (s *trafficSim) run(p model.Policy, clients []model.ClientResult) model.Metrics {
	if s.src.reacts != nil {
		return s.runReactions(p, clients)
	}
	decider := func() model.Decider {
		d, err := model.NewDeciderAt(p, s.origin())
		if err != nil {
			// The spec's corners were validated; a point inside them is valid.
			panic(fmt.Sprintf("sweep: invalid policy %v: %v", p, err))
		}
		return d
	}
	tr := s.tr
	if s.ranges == nil {
		s.ranges = keyRanges(tr, rangesPerCore*runtime.GOMAXPROCS(0))
	}
	if len(s.ranges) <= 2 {
		tr.Replay(s.times, decider(), &s.replay)
	} else {
		// Key ranges at once (every core busy even when the grid is one
		// part), taken in turn by one goroutine per core; each key's result
		// is its own, so the order does not matter.
		if cap(s.replay.Keys) < len(tr.Keys) {
			s.replay.Keys = make([]ingest.KeyResult, len(tr.Keys))
		}
		s.replay.Keys = s.replay.Keys[:len(tr.Keys)]
		ds := make([]model.Decider, min(runtime.GOMAXPROCS(0), len(s.ranges)-1))
		for w := range ds {
			ds[w] = decider()
		}
		ingest.ForKeyRanges(len(ds), s.ranges, func(w, lo, hi int) {
			tr.ReplayKeys(s.times, ds[w], s.replay.Keys, lo, hi)
		})
		s.replay.Metrics = tr.Metrics(s.replay.Keys)
	}
	s.perKey = s.replay.Totals(s.perKey)
	copy(clients, s.grouping.Aggregate(s.perKey, clients[:0]))
	return s.replay.Metrics
}
