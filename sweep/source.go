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
	tr, err := ingest.Load(ctx, spec.Traffic.Log, spec.Traffic.Options)
	if err != nil {
		return nil, err
	}
	if len(tr.Keys) == 0 {
		return nil, inputErrorf("%s: no requests to replay", spec.Traffic.Log)
	}
	return &trafficSource{cfg: spec.Traffic, tr: tr, grouping: tr.Rows(spec.Traffic.TopKeys)}, nil
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
// clients rows are the top keys plus "other keys" rows per label.
type trafficSource struct {
	cfg      *ingest.Config
	tr       *ingest.Traffic
	grouping *ingest.Rows
}

func (s *trafficSource) rows() ([]string, []model.Class, []model.Stage) {
	return s.grouping.Names, s.grouping.Class, s.grouping.Stage
}

func (s *trafficSource) newSim() pointSim {
	return &trafficSim{src: s, deciders: map[model.Algorithm]model.Decider{}}
}

type trafficSim struct {
	src      *trafficSource
	times    [][]int64
	replay   ingest.Replay
	perKey   []model.ClientResult
	deciders map[model.Algorithm]model.Decider
}

func (s *trafficSim) setReplicate(seed uint64, rep int) {
	s.times = s.src.tr.Realise(s.src.cfg.Spread, seed, rep, s.times)
}

func (s *trafficSim) run(p model.Policy, clients []model.ClientResult) model.Metrics {
	d, err := model.NewDeciderAt(p, s.src.cfg.WindowOrigin.OriginNs(s.src.tr))
	if err != nil {
		// The spec's corners were validated; a point inside them is valid.
		panic(fmt.Sprintf("sweep: invalid policy %v: %v", p, err))
	}
	s.src.tr.Replay(s.times, d, &s.replay)
	s.perKey = s.replay.Totals(s.perKey)
	copy(clients, s.src.grouping.Aggregate(s.perKey, clients[:0]))
	return s.replay.Metrics
}
