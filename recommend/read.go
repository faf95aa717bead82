package recommend

// Reading a run's points and clients into per-setting measures, replicate by replicate.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ratesweep/ratesweep/internal/choice"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// Run is one run directory's policies by label.
type Run struct {
	Dir      string
	Labels   []string // in point_id order
	Measures map[string]*Measure
	// Offered is each client's requests per second, for scenario runs
	// (from the spec in the files' metadata; nil for log runs).
	Offered map[string][]float64
	// spec is the sweep in the files' metadata (nil when unreadable): the
	// grid edges of a setting, for the choice rule.
	spec *sweep.Spec
}

// scenarioOffered reads the scenario of a run from its metadata and
// returns each client's requests per second (nil for a log run).
func scenarioOffered(run *sweep.RunDir) map[string][]float64 {
	spec, err := sweep.ParseSpec([]byte(run.SpecYAML), nil)
	if err != nil || spec.Scenario == nil {
		return nil
	}
	out := map[string][]float64{}
	for _, c := range spec.Scenario.Clients {
		a := make([]float64, spec.Scenario.DurationS)
		for _, sg := range c.Segments {
			for t := sg.T0; t < sg.T1 && t < len(a); t++ {
				a[t] += sg.Rate
			}
		}
		out[c.Name] = a
	}
	return out
}

// structure fills in the optional parameters and grid edges of the
// setting whose index in r.Labels is k.PointID (choice.Keys.Structure).
func (r *Run) structure() func(k *choice.Keys) {
	return func(k *choice.Keys) {
		l := r.Labels[k.PointID]
		if p, err := model.ParseLabel(l); err == nil {
			k.Optional = choice.Optional(p)
		}
		if r.spec != nil {
			k.Edges = len(choice.EdgesOfRange(r.spec, r.Measures[l].PointID))
		}
	}
}

// specOf is the sweep in run's metadata, or nil.
func specOf(run *sweep.RunDir) *sweep.Spec {
	spec, err := sweep.ParseSpec([]byte(run.SpecYAML), func(string) (string, []byte, error) {
		return "", nil, fmt.Errorf("no file references in a run's spec")
	})
	if err != nil {
		return nil
	}
	return spec
}

// clientWhy states a client's traffic against policy p's bound, as p's
// algorithm words it (its most requests in one window, its largest burst
// above the rate), or "".
func clientWhy(p model.Policy, a []float64) string {
	if d := p.Algorithm.Describe(); d != nil && d.Bound != nil {
		return d.Bound(p, a)
	}
	return ""
}

// ReadRun reads a run directory's points and clients, accepting an
// incomplete run or NULL metrics (RecommendDirs refuses them unless
// Options.AllowIncomplete); rows listed twice are refused.
func ReadRun(ctx context.Context, dir string) (*Run, error) {
	d, err := sweep.OpenRun(dir, sweep.OpenOptions{AllowIncomplete: true})
	if err != nil {
		return nil, err
	}
	return readRun(ctx, d)
}

// readRun is ReadRun of an opened run.
func readRun(ctx context.Context, d *sweep.RunDir) (*Run, error) { return readRunList(ctx, d, true) }

// readRunList is readRun; with list false, without each policy's list of
// clients cut (only its worst client per replicate), in memory that does
// not grow with the clients.
func readRunList(ctx context.Context, d *sweep.RunDir, list bool) (*Run, error) {
	dir := d.Dir
	rows, err := sweep.ReadRunPoints(ctx, d)
	if err != nil {
		return nil, err
	}
	run := &Run{Dir: dir, Measures: map[string]*Measure{}, spec: specOf(d)}
	if list { // the clients cut say why from their offered rates
		run.Offered = scenarioOffered(d)
	}
	byID := map[int64]*repAcc{}
	var order []*repAcc
	var labels []string
	for i := range rows {
		r := &rows[i]
		a := byID[r.PointID]
		if a == nil {
			a = &repAcc{id: r.PointID}
			byID[r.PointID] = a
			order = append(order, a)
			labels = append(labels, r.Key())
		}
		a.add(&r.Metrics)
	}
	perClient := map[int64]*clientAcc{}
	err = sweep.ScanClients(ctx, dir, func(c *sweep.ClientRow) error {
		pc := perClient[c.PointID]
		if pc == nil {
			pc = newClientAcc()
			pc.worstOnly = !list
			perClient[c.PointID] = pc
		}
		pc.add(c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, a := range order {
		m := a.measure()
		pc := perClient[m.PointID]
		if pc == nil {
			pc = newClientAcc()
		}
		pc.fill(m, len(a.fc), list)
		if _, dup := run.Measures[labels[i]]; !dup {
			run.Labels = append(run.Labels, labels[i])
		}
		run.Measures[labels[i]] = m
	}
	if len(run.Labels) == 0 {
		return nil, &sweep.InputError{Msg: dir + ": no points"}
	}
	return run, nil
}

// repAcc gathers one point's replicates (in replicate order).
type repAcc struct {
	id                     int64
	fc, mi, ca, lp, mp, cp []float64
	lb                     []float64 // legit_blocked_s
	offL, offA             float64
	// delaySum is Σ mean delay × admitted requests, admitted their sum
	// and p99 the largest replicate's p99 delay (as the report pools them).
	delaySum, admitted, p99 float64
	react                   reactAcc
	cost                    costAcc
}

func (a *repAcc) add(r *model.Metrics) {
	a.fc = append(a.fc, float64(r.FalseCut))
	a.mi = append(a.mi, float64(r.Missed))
	a.ca = append(a.ca, float64(r.Caught))
	a.lp = append(a.lp, r.LegitCutPct)
	a.mp = append(a.mp, r.MissedPct)
	a.cp = append(a.cp, pct(float64(r.Caught), float64(r.OfferedAbusive)))
	a.lb = append(a.lb, r.LegitBlockedS)
	a.offL += float64(r.OfferedLegit)
	a.offA += float64(r.OfferedAbusive)
	adm := float64(r.OfferedLegit - r.FalseCut + r.Missed)
	a.delaySum += r.MeanDelayS * adm
	a.admitted += adm
	a.p99 = max(a.p99, r.P99DelayS)
	if r.Reactions.Measured {
		a.react.add(r)
	}
	if r.Cost.Measured {
		a.cost.add(r)
	}
}

// reset empties a for point id, keeping its buffers.
func (a *repAcc) reset(id int64) {
	a.react.reset()
	a.cost.reset()
	*a = repAcc{id: id, fc: a.fc[:0], mi: a.mi[:0], ca: a.ca[:0], lp: a.lp[:0], mp: a.mp[:0], cp: a.cp[:0], lb: a.lb[:0], react: a.react, cost: a.cost}
}

// measure is the point's metrics over its replicates (no clients).
func (a *repAcc) measure() *Measure {
	n := float64(len(a.fc))
	m := &Measure{PointID: a.id, OfferedLegit: a.offL / n, OfferedAbusive: a.offA / n,
		FalseCut: interval(a.fc), Missed: interval(a.mi), Caught: interval(a.ca),
		LegitCutPct: pctInterval(a.lp), MissedPct: pctInterval(a.mp), CaughtPct: pctInterval(a.cp),
		LegitBlockedS: interval(a.lb), P99DelayS: a.p99}
	if a.admitted > 0 {
		m.MeanDelayS = a.delaySum / a.admitted
	}
	a.react.fill(m)
	a.cost.fill(m)
	return m
}

// clientAcc sums one point's legitimate clients over its replicates
// ("other keys" rows of log runs aggregate many keys and are left out),
// and keeps each replicate's worst client. Rows come in replicate order.
type clientAcc struct {
	sums           map[string]*[2]float64 // offered, cut
	rep            int64                  // the replicate being read; -1 before the first
	repPct, repCut float64                // its worst client so far
	pcts, cuts     []float64              // the worst client of each replicate read
	worstOnly      bool                   // no sums: the worst clients only
}

func newClientAcc() *clientAcc { return &clientAcc{sums: map[string]*[2]float64{}, rep: -1} }

func (pc *clientAcc) add(c *sweep.ClientRow) {
	if c.Class != "legit" || strings.HasPrefix(c.Client, "other keys") {
		return
	}
	if int64(c.Replicate) != pc.rep {
		pc.endReplicate()
		pc.rep = int64(c.Replicate)
	}
	pc.repPct = max(pc.repPct, pct(float64(c.Cut), float64(c.Offered)))
	pc.repCut = max(pc.repCut, float64(c.Cut))
	if pc.worstOnly {
		return
	}
	x := pc.sums[c.Client]
	if x == nil {
		x = &[2]float64{}
		pc.sums[strings.Clone(c.Client)] = x // the row's string may be a batch's buffer
	}
	x[0] += float64(c.Offered)
	x[1] += float64(c.Cut)
}

func (pc *clientAcc) endReplicate() {
	if pc.rep >= 0 {
		pc.pcts, pc.cuts = append(pc.pcts, pc.repPct), append(pc.cuts, pc.repCut)
	}
	pc.rep, pc.repPct, pc.repCut = -1, 0, 0
}

// fill sets m's worst client (the largest share and count cut from one
// legitimate client in each replicate, as means over reps replicates with
// their intervals; a replicate without rows cut nobody) and, when list,
// the clients cut (most first, means over the replicates).
func (pc *clientAcc) fill(m *Measure, reps int, list bool) {
	pc.endReplicate()
	for len(pc.pcts) < reps {
		pc.pcts, pc.cuts = append(pc.pcts, 0), append(pc.cuts, 0)
	}
	m.WorstClientPctI, m.WorstClientCutI = pctInterval(pc.pcts), interval(pc.cuts)
	m.WorstClientPct, m.WorstClientCut = m.WorstClientPctI.Mean, m.WorstClientCutI.Mean
	if !list {
		return
	}
	n := float64(reps)
	for name, x := range pc.sums {
		c := ClientCut{Client: name, Offered: x[0] / n, Cut: x[1] / n}
		c.Pct = pct(c.Cut, c.Offered)
		if c.Cut > 0 {
			m.Clients = append(m.Clients, c)
		}
	}
	sort.Slice(m.Clients, func(i, j int) bool {
		if m.Clients[i].Cut != m.Clients[j].Cut {
			return m.Clients[i].Cut > m.Clients[j].Cut
		}
		return m.Clients[i].Client < m.Clients[j].Client
	})
}

func pct(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * a / b
}
