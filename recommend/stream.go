package recommend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/ratesweep/ratesweep/internal/choice"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// RecommendDirs is Recommend on run directories, in memory bounded by the
// grid's shape rather than its size: when every run holds the complete
// grid of the same sweep (the spec in the files' metadata), one pass over
// the points keeps per algorithm only the best feasible policy, and the
// nearest miss; a second pass reads the points and clients rows of the
// chosen policies and their grid neighbours only. Other runs (incomplete,
// sharded with parts missing, different grids) are read whole by ReadRun.
func RecommendDirs(ctx context.Context, dirs []string, o Options) (*Result, error) {
	if err := o.prepare(); err != nil {
		return nil, err
	}
	opened := make([]*sweep.RunDir, len(dirs))
	for k, d := range dirs {
		var err error
		if opened[k], err = sweep.OpenRun(d, sweep.OpenOptions{AllowIncomplete: o.AllowIncomplete}); err != nil {
			return nil, err
		}
	}
	grid, reps, ok := sameGrid(opened)
	if !ok {
		var runs []*Run
		for _, d := range opened {
			r, err := readRun(ctx, d)
			if err != nil {
				return nil, err
			}
			runs = append(runs, r)
		}
		return Recommend(runs, o)
	}
	pk, err := o.firstPass(ctx, opened, grid, specOf(opened[0]), reps)
	if err != nil {
		return nil, err
	}
	// The chosen points, each run's own best and the chosen points' grid
	// neighbours: every policy equal to a chosen one but for one parameter.
	chosen := []int64{pk.near.idx}
	if pk.overall != nil {
		chosen = []int64{pk.overall.idx}
		for _, c := range pk.byAlg {
			chosen = append(chosen, c.idx)
		}
	}
	want := map[int64]bool{}
	for _, id := range chosen {
		want[id] = true
	}
	for a, c := range pk.nearAlg { // why an algorithm dropped out
		if _, ok := pk.byAlg[a]; !ok {
			want[c.idx] = true
		}
	}
	for _, l := range pk.own {
		if l != "" {
			want[ownID(l)] = true
		}
	}
	for _, id := range gridNeighbours(grid, chosen) {
		want[id] = true
	}
	runs := make([]*Run, len(dirs))
	for k, d := range opened {
		if runs[k], err = readSelected(ctx, d, want); err != nil {
			return nil, err
		}
	}
	// Labels of the ids the first pass chose, from the rows read.
	labelOf := map[int64]string{}
	for _, l := range runs[0].Labels {
		labelOf[runs[0].Measures[l].PointID] = l
	}
	relabel := func(c *pick) {
		if c != nil {
			c.label = labelOf[c.idx]
		}
	}
	relabel(pk.overall)
	relabel(pk.near)
	for a, c := range pk.byAlg {
		relabel(&c)
		pk.byAlg[a] = c
	}
	for a, c := range pk.nearAlg {
		relabel(&c)
		pk.nearAlg[a] = c
	}
	for k, l := range pk.own {
		if l != "" {
			pk.own[k] = labelOf[ownID(l)]
		}
	}
	labels := runs[0].Labels
	pols := make([]model.Policy, len(labels))
	for i, l := range labels {
		if pols[i], err = model.ParseLabel(l); err != nil {
			return nil, fmt.Errorf("%s: %w", dirs[0], err)
		}
	}
	res := o.result(runs)
	res.Policies = int(grid.Points())
	return o.build(res, runs, labels, pols, pk), nil
}

// prepare checks that o has a constraint and sets the defaults.
func (o *Options) prepare() error {
	if o.MaxFalseCut == nil && o.MaxMissed == nil && o.MinCaught == nil && o.MaxClientCut == nil && o.MaxFalseCutCost == nil {
		return fmt.Errorf("no constraint: give --max-false-cut and/or --max-missed, --min-caught, --max-client-cut, --max-false-cut-cost")
	}
	if err := o.checkReactionBounds(); err != nil {
		return err
	}
	switch {
	case o.CliffPP < 0 || math.IsNaN(o.CliffPP) || math.IsInf(o.CliffPP, 0):
		return fmt.Errorf("the cliff threshold must be a positive number of percentage points, not %v", o.CliffPP)
	case o.CliffPP == 0:
		o.CliffPP = 5
	}
	return nil
}

// The first pass keeps point ids, not labels, for each run's own best:
// ownLabel/ownID carry the id in the label's place until the second pass
// names it.
func ownLabel(id int64) string { return strconv.FormatInt(id, 10) }
func ownID(l string) int64 {
	id, _ := strconv.ParseInt(l, 10, 64)
	return id
}

// sameGrid returns the grid of dirs' spec and each run's replicates when
// every run holds exactly that grid's rows (complete, same sweep).
func sameGrid(runs []*sweep.RunDir) (*sweep.Grid, []int, bool) {
	var first *sweep.Spec
	var reps []int
	for _, d := range runs {
		spec, err := sweep.ParseSpec([]byte(d.SpecYAML), func(string) (string, []byte, error) {
			return "", nil, fmt.Errorf("no file references in a run's spec")
		})
		if err != nil || spec.Replicates < 1 {
			return nil, nil, false
		}
		if first == nil {
			first = spec
		} else if !reflect.DeepEqual(spec.Entries, first.Entries) {
			return nil, nil, false
		}
		if d.Rows != spec.Rows() {
			return nil, nil, false
		}
		reps = append(reps, spec.Replicates)
	}
	if overlapping(first) {
		return nil, nil, false
	}
	return sweep.NewGrid(first), reps, true
}

// overlapping reports whether two entries of the spec share a policy (then
// a label names several points, which only the in-memory join handles).
// Each axis holds distinct values.
func overlapping(s *sweep.Spec) bool {
	values := func(e *sweep.Entry, name string) []float64 {
		for _, ax := range e.Axes {
			if ax.Param == name {
				return ax.Values
			}
		}
		p := model.Policy{Algorithm: e.Algorithm}
		return []float64{p.Value(name)}
	}
	for i := range s.Entries {
		for j := range i {
			a, b := &s.Entries[i], &s.Entries[j]
			if a.Algorithm != b.Algorithm {
				continue
			}
			shared := true
			for _, prm := range model.Params {
				va, vb := values(a, prm.Name), values(b, prm.Name)
				if !slices.ContainsFunc(va, func(v float64) bool { return slices.Contains(vb, v) }) {
					shared = false
					break
				}
			}
			if shared {
				return true
			}
		}
	}
	return false
}

// streamed is one point of a run in the first pass.
type streamed struct {
	alg string
	m   *Measure
}

// worstClient is one point's worst legitimate client over its replicates.
type worstClient struct{ pct, cut Interval }

// producer streams one run's points (and, for a per-client bound, each
// point's worst client) in point order on its own goroutine.
type producer struct {
	points  <-chan []streamed
	clients <-chan []worstClient // one per point
	errs    chan error
}

func startProducer(ctx context.Context, dir *sweep.RunDir, n int64, reps int, withClients bool) *producer {
	const batch = 1024
	pts := make(chan []streamed, 2)
	p := &producer{points: pts, errs: make(chan error, 2)}
	go func() {
		defer close(pts)
		var buf []streamed
		err := scanPoints(ctx, dir, nil, nil, func(alg, _ string, a *repAcc) error {
			buf = append(buf, streamed{alg, a.measure()})
			if len(buf) == batch {
				if !send(ctx, pts, buf) {
					return ctx.Err()
				}
				buf = nil
			}
			return nil
		})
		if err == nil && len(buf) > 0 {
			send(ctx, pts, buf)
		}
		p.errs <- err
	}()
	if !withClients {
		p.errs <- nil
		return p
	}
	cls := make(chan []worstClient, 2)
	p.clients = cls
	go func() {
		defer close(cls)
		var buf []worstClient
		var next int64
		flush := func(force bool) bool {
			if len(buf) >= batch || (force && len(buf) > 0) {
				ok := send(ctx, cls, buf)
				buf = nil
				return ok
			}
			return true
		}
		err := scanClients(ctx, dir, nil, nil, func(id int64, pc *clientAcc) error {
			for ; next <= id; next++ {
				var m Measure
				if next == id {
					pc.fill(&m, reps, false)
				} else { // a point without legitimate clients' rows
					newClientAcc().fill(&m, reps, false)
				}
				buf = append(buf, worstClient{m.WorstClientPctI, m.WorstClientCutI})
				if !flush(false) {
					return ctx.Err()
				}
			}
			return nil
		})
		for ; err == nil && next < n; next++ { // points without legitimate clients
			var m Measure
			newClientAcc().fill(&m, reps, false)
			buf = append(buf, worstClient{m.WorstClientPctI, m.WorstClientCutI})
			if !flush(false) {
				err = ctx.Err()
			}
		}
		if err == nil {
			flush(true)
		}
		p.errs <- err
	}()
	return p
}

// send sends a batch unless ctx is done first.
func send[T any](ctx context.Context, ch chan<- []T, b []T) bool {
	select {
	case ch <- b:
		return true
	case <-ctx.Done():
		return false
	}
}

// cursor reads a channel of batches item by item.
type cursor[T any] struct {
	ch  <-chan []T
	buf []T
}

func (c *cursor[T]) next() (T, bool) {
	for len(c.buf) == 0 {
		b, ok := <-c.ch
		if !ok {
			var zero T
			return zero, false
		}
		c.buf = b
	}
	v := c.buf[0]
	c.buf = c.buf[1:]
	return v, true
}

// firstPass streams every run's points in lockstep and makes the choices.
func (o *Options) firstPass(ctx context.Context, dirs []*sweep.RunDir, grid *sweep.Grid, spec *sweep.Spec, reps []int) (*picks, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := grid.Points()
	K := len(dirs)
	prods := make([]*producer, K)
	pcs := make([]cursor[streamed], K)
	ccs := make([]cursor[worstClient], K)
	for k, d := range dirs {
		prods[k] = startProducer(ctx, d, n, reps[k], o.MaxClientCut != nil)
		pcs[k].ch = prods[k].points
		ccs[k].ch = prods[k].clients
	}
	pk := newPicks(K, func(k *choice.Keys) {
		k.Optional = choice.Optional(grid.Policy(k.PointID))
		if spec != nil {
			k.Edges = len(choice.EdgesOfRange(spec, k.PointID))
		}
	})
	ownKeys := make([]choice.Keys, K) // each run's own best so far
	for k := range pk.ownVal {
		pk.ownVal[k] = math.Inf(1)
	}
	// A stream that ended early ended on its producer's error: that one
	// names the cause (the cancelled producers' errors do not).
	fail := func(err error) (*picks, error) {
		cancel()
		var first error
		for _, p := range prods {
			for range 2 {
				if e := <-p.errs; e != nil && first == nil && !errors.Is(e, context.Canceled) {
					first = e
				}
			}
		}
		if first != nil {
			return nil, first
		}
		return nil, err
	}
	var cs []Check
	for id := int64(0); id < n; id++ {
		var keys choice.Keys
		var viol float64
		ok := true
		alg := ""
		for k := range K {
			s, more := pcs[k].next()
			if !more || s.m.PointID != id {
				return fail(fmt.Errorf("%s: points are not in point order at point %d (rewritten by another tool?)", dirs[k].Dir, id))
			}
			m := s.m
			if ccs[k].ch != nil {
				w, more := ccs[k].next()
				if !more {
					return fail(fmt.Errorf("%s: clients end before point %d", dirs[k].Dir, id))
				}
				m.WorstClientPctI, m.WorstClientCutI = w.pct, w.cut
				m.WorstClientPct, m.WorstClientCut = w.pct.Mean, w.cut.Mean
			}
			cs = o.checkInto(cs[:0], m, false)
			f := feasible(cs)
			mk := o.keys(m)
			if f {
				mk.PointID, mk.Structure = id, pk.structure
				if pk.own[k] == "" || choice.Better(&mk, &ownKeys[k]) {
					pk.own[k], pk.ownVal[k], ownKeys[k] = ownLabel(id), mk.Objective, mk
				}
			}
			ok = ok && f
			viol += violation(cs)
			keys = worse(keys, mk)
			if k == 0 {
				alg = s.alg
			}
		}
		keys.PointID = id
		pk.consider("", alg, keys, viol, ok)
	}
	for k := range K {
		if _, more := pcs[k].next(); more {
			return fail(fmt.Errorf("%s: more points than its spec's %d", dirs[k].Dir, n))
		}
		if ccs[k].ch != nil {
			if _, more := ccs[k].next(); more {
				return fail(fmt.Errorf("%s: clients of points beyond its spec's %d", dirs[k].Dir, n))
			}
		}
	}
	for _, p := range prods {
		for range 2 {
			if err := <-p.errs; err != nil {
				return nil, err
			}
		}
	}
	return pk, nil
}

// gridNeighbours lists the points of g equal to a chosen point in every
// parameter but one grid (non-enumerated) parameter, without reading data.
func gridNeighbours(g *sweep.Grid, chosen []int64) []int64 {
	ps := make([]model.Policy, len(chosen))
	for i, id := range chosen {
		ps[i] = g.Policy(id)
	}
	var out []int64
	for id := range g.Points() {
		q := g.Policy(id)
		for _, p := range ps {
			if q.Algorithm != p.Algorithm {
				continue
			}
			diff, grid := 0, true
			for _, prm := range model.Params {
				if q.Value(prm.Name) != p.Value(prm.Name) {
					diff++
					grid = grid && prm.Values == nil && p.Algorithm.Takes(prm.Name)
				}
			}
			if diff == 0 || (diff == 1 && grid) {
				out = append(out, id)
				break
			}
		}
	}
	return out
}
