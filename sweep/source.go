package sweep

import (
	"context"
	"fmt"

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

// newSource loads the spec's workload: its scenario, or its log.
func newSource(ctx context.Context, spec *Spec) (source, error) {
	if spec.Traffic == nil {
		wl, err := model.NewWorkload(spec.Scenario)
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
	for _, log := range logs {
		tr, err := ingest.Load(ctx, log, spec.Traffic.Options)
		if err != nil {
			return nil, err
		}
		if ov := spec.Traffic.Overlay; ov != nil {
			if tr, err = tr.WithOverlay(ov, spec.Traffic.Spread, spec.Seed); err != nil {
				return nil, inputErrorf("%s: %v", log, err)
			}
		}
		if len(tr.Keys) == 0 {
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

func (s scenarioSource) newSim() pointSim { return &scenarioSim{sim: s.wl.NewSimulator()} }

type scenarioSim struct {
	sim *model.Simulator
	out model.Outcome
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
}

func (s *trafficSource) rows() ([]string, []model.Class, []model.Stage) {
	return s.grouping.Names, s.grouping.Class, s.grouping.Stage
}

func (s *trafficSource) newSim() pointSim {
	return &trafficSim{src: s, deciders: map[model.Algorithm]model.Decider{}}
}

type trafficSim struct {
	src      *trafficSource
	tr       *ingest.Traffic // the replicate's log
	grouping *ingest.Rows
	times    [][]int64
	replay   ingest.Replay
	perKey   []model.ClientResult
	deciders map[model.Algorithm]model.Decider
}

func (s *trafficSim) setReplicate(seed uint64, rep int) {
	i := rep % len(s.src.trs)
	s.tr, s.grouping = s.src.trs[i], s.src.groupings[i]
	s.times = s.tr.Realise(s.src.cfg.Spread, seed, rep, s.times)
}

func (s *trafficSim) run(p model.Policy, clients []model.ClientResult) model.Metrics {
	d, err := model.NewDeciderAt(p, s.src.cfg.WindowOrigin.OriginNs(s.tr)) // the replicate's log
	if err != nil {
		// The spec's corners were validated; a point inside them is valid.
		panic(fmt.Sprintf("sweep: invalid policy %v: %v", p, err))
	}
	s.tr.Replay(s.times, d, &s.replay)
	s.perKey = s.replay.Totals(s.perKey)
	copy(clients, s.grouping.Aggregate(s.perKey, clients[:0]))
	return s.replay.Metrics
}
