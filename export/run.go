package export

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// Point is one policy's metrics in a run, means over its replicates.
type Point struct {
	Policy                       model.Policy
	Label                        string
	PointID                      int64
	Replicates                   int
	OfferedLegit, OfferedAbusive float64
	Caught, Missed, FalseCut     float64
}

// LegitCutPct is the share of legitimate requests cut, %.
func (p *Point) LegitCutPct() float64 { return pct(p.FalseCut, p.OfferedLegit) }

// MissedPct is the share of abusive requests admitted, %.
func (p *Point) MissedPct() float64 { return pct(p.Missed, p.OfferedAbusive) }

func pct(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * a / b
}

// ReadRun reads a run directory's points, one Point per policy (label),
// in point_id order. The run is opened by sweep.OpenRun with opts: an
// incomplete run, or NULL or NaN metrics, are refused unless
// opts.AllowIncomplete.
func ReadRun(ctx context.Context, dir string, opts sweep.OpenOptions) ([]*Point, error) {
	r, err := sweep.OpenRun(dir, opts)
	if err != nil {
		return nil, err
	}
	rows, err := sweep.ReadRunPoints(ctx, r)
	if err != nil {
		return nil, err
	}
	var out []*Point
	byLabel := map[string]*Point{}
	weigh := runWeighing(r.SpecYAML)
	for i := range rows {
		r := &rows[i]
		label, w := r.Key(), weigh(r.PointID)
		p := byLabel[label]
		if p == nil {
			pol, err := model.ParseLabel(label)
			if err != nil {
				return nil, fmt.Errorf("%s: point %d: %w", dir, r.PointID, err)
			}
			pol.CountIf, pol.Costed = w.CountIf, w.Costed
			p = &Point{Policy: pol, Label: label, PointID: r.PointID}
			byLabel[label] = p
			out = append(out, p)
		}
		p.Replicates++
		p.OfferedLegit += float64(r.OfferedLegit)
		p.OfferedAbusive += float64(r.OfferedAbusive)
		p.Caught += float64(r.Caught)
		p.Missed += float64(r.Missed)
		p.FalseCut += float64(r.FalseCut)
	}
	for _, p := range out {
		n := float64(p.Replicates)
		p.OfferedLegit, p.OfferedAbusive = p.OfferedLegit/n, p.OfferedAbusive/n
		p.Caught, p.Missed, p.FalseCut = p.Caught/n, p.Missed/n, p.FalseCut/n
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PointID < out[j].PointID })
	return out, nil
}

// sameDistribution reports whether two policies hang on the same key over
// the same nodes and state.
func sameDistribution(a, b model.Policy) bool {
	return a.Key == b.Key && max(a.Nodes, 1) == max(b.Nodes, 1) && a.LB == b.LB && a.State == b.State && a.SyncMs == b.SyncMs
}

// distance is how differently two points treat the same traffic: the
// change in legitimate requests cut plus the change in abusive requests
// missed, each as a share of what was offered.
func distance(a, b *Point) float64 {
	return math.Abs(a.FalseCut-b.FalseCut)/math.Max(1, a.OfferedLegit) +
		math.Abs(a.Missed-b.Missed)/math.Max(1, a.OfferedAbusive)
}

// NearestIn is Export for a policy measured in a run: when target cannot
// express p, it exports the point of the run that target can express and
// whose metrics are closest to p's (distance; the same key and nodes),
// and returns both points so that the user sees what the translation
// costs. asked is nil when p is not in the run; exported is nil when the
// exported policy is not in the run (a rule-based translation, as Export).
//
// Its look-ups over run (by label, and the points each target can express)
// are built once per run and reused while later calls pass the same points.
func NearestIn(p model.Policy, target string, run []*Point, o Options) (res *Result, asked, exported *Point, err error) {
	return lastIndex.of(run).Nearest(p, target, o)
}

// Index holds a run's look-ups for Nearest: its points by label, and per
// target the points the target can express. It is safe for simultaneous use.
type Index struct {
	run     []*Point
	byLabel map[string]*Point
	mu      sync.Mutex
	expr    map[string][]*Point // by target, in run order
}

// NewIndex indexes run (the points of ReadRun); run must not change after.
func NewIndex(run []*Point) *Index {
	x := &Index{run: slices.Clone(run), byLabel: make(map[string]*Point, len(run)), expr: map[string][]*Point{}}
	for _, q := range run {
		x.byLabel[q.Label] = q
	}
	return x
}

// expressible is the run's points that target configures.
func (x *Index) expressible(target string) []*Point {
	x.mu.Lock()
	defer x.mu.Unlock()
	if out, ok := x.expr[target]; ok {
		return out
	}
	out := []*Point{}
	for _, c := range x.run {
		if ok, _ := Expressible(c.Policy, target); ok {
			out = append(out, c)
		}
	}
	x.expr[target] = out
	return out
}

// indexMemo keeps the last run's Index for NearestIn, reused while a call
// passes the same points (compared element by element: a changed run is
// indexed anew).
type indexMemo struct {
	mu  sync.Mutex
	idx *Index
}

var lastIndex indexMemo

func (m *indexMemo) of(run []*Point) *Index {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.idx == nil || !slices.Equal(m.idx.run, run) {
		m.idx = NewIndex(run)
	}
	return m.idx
}

// Nearest is NearestIn over the indexed run.
func (x *Index) Nearest(p model.Policy, target string, o Options) (res *Result, asked, exported *Point, err error) {
	byLabel := x.byLabel
	asked = byLabel[p.Canonical()]
	if p.Stack != nil { // the same zones with nginx's counting: both measured when the run has them
		if res, err = exportStack(p, target, o); err != nil {
			return nil, nil, nil, err
		}
		return res, asked, byLabel[res.Exported.Canonical()], nil
	}
	q, fit, why, err := Translate(p, target)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := resolveKey(p, o.Key); err != nil {
		return nil, nil, nil, err
	}
	// A policy the target configures in its own form (Traefik's, which
	// decides otherwise) is exported as asked; another is replaced by the
	// run's closest point that the target configures.
	_, _, _, own := configurable(limitOnly(p), targets[target])
	if fit == Nearest && asked != nil && !own {
		var best *Point
		for _, c := range x.expressible(target) {
			if !sameDistribution(c.Policy, p) {
				continue
			}
			if best == nil || distance(asked, c) < distance(asked, best) {
				best = c
			}
		}
		if best != nil {
			q, _, _, err = Translate(best.Policy, target) // its exact or equivalent form
			if err != nil {
				return nil, nil, nil, err
			}
			exported = best
		}
	}
	if exported == nil {
		exported = byLabel[q.Canonical()]
	}
	res, err = Render(p, q, fit, why, target, o)
	if err == nil && res.Exported.Canonical() != q.Canonical() { // the writer chose another (Cloudflare: the nearest rule within a plan)
		exported = byLabel[res.Exported.Canonical()]
	}
	if err == nil && o.Nodes > 1 {
		res.Notes = append(res.Notes, nodesEffect(p, o.Nodes, byLabel)...)
	}
	return res, asked, exported, err
}

// nodesEffect states, from the run's nodes/state points, what n replicas
// counting alone do to p: the whole limit on each (over-admission) and the
// limit divided by n.
func nodesEffect(p model.Policy, n int, byLabel map[string]*Point) []string {
	one := limitOnly(p)
	base := byLabel[one.Canonical()]
	if base == nil {
		return nil
	}
	var out []string
	say := func(what string, q model.Policy) {
		q.Nodes, q.State = n, model.Local
		m := byLabel[q.Canonical()]
		if m == nil {
			out = append(out, fmt.Sprintf("the run has no %s (sweep nodes: %d, state: local to measure %s)", q.Canonical(), n, what))
			return
		}
		out = append(out, fmt.Sprintf("in the run, %s (%s): false cut %.2f%% (%+.2f pp), missed %.2f%% (%+.2f pp) against one node",
			q.Canonical(), what, m.LegitCutPct(), m.LegitCutPct()-base.LegitCutPct(), m.MissedPct(), m.MissedPct()-base.MissedPct()))
	}
	say(fmt.Sprintf("%d replicas each enforcing the whole limit: the over-admission", n), one)
	if div := perNode(one, n); div.Canonical() != one.Canonical() {
		say(fmt.Sprintf("the limit divided over %d replicas", n), div)
	}
	return out
}

// Write prints a result: a comment header (what was asked and exported,
// the fit, the metrics from the run when given, the key and the notes),
// then the configuration.
func Write(w io.Writer, r *Result, asked, exported *Point, runDir string) error {
	t, ok := targets[r.Target]
	if !ok {
		return fmt.Errorf("unknown target %q (one of %s)", r.Target, strings.Join(Targets, ", "))
	}
	var b strings.Builder
	// Every header line, free text included, goes through the target's one
	// comment function.
	line := func(format string, args ...any) {
		b.WriteString(t.comment(fmt.Sprintf(format, args...)))
		b.WriteByte('\n')
	}
	line("ratesweep export --to %s", r.Target)
	line("asked:    %s", r.Asked.Canonical())
	switch r.Fit {
	case Nearest:
		line("exported: %s (nearest: %s cannot express the policy; %s)", r.Exported.Canonical(), r.Target, r.Why)
	case Equivalent:
		line("exported: %s (equivalent: the same decisions)", r.Exported.Canonical())
	default:
		line("exported: %s (exact)", r.Exported.Canonical())
	}
	if runDir != "" {
		point := func(name string, p *Point) {
			if p == nil {
				line("  %-9s not in the run", name+":")
				return
			}
			line("  %-9s false cut %s (%.2f%% of legitimate), missed %s (%.2f%% of abusive)  [%s]",
				name+":", count(p.FalseCut), p.LegitCutPct(), count(p.Missed), p.MissedPct(), p.Label)
		}
		line("in run %s:", runDir)
		point("asked", asked)
		if r.Fit == Nearest {
			point("exported", exported)
			if asked != nil && exported != nil {
				dc, dm := exported.LegitCutPct()-asked.LegitCutPct(), exported.MissedPct()-asked.MissedPct()
				gain := ""
				if dc < 0 || dm < 0 {
					gain = " (a negative cost: the exported policy does better there)"
				}
				line("  the translation costs %+.2f pp of legitimate requests cut and %+.2f pp of abusive requests missed%s",
					dc, dm, gain)
			}
		}
	}
	line("key: %s", r.Key)
	for _, n := range r.Notes {
		line("- %s", n)
	}
	b.WriteString("\n")
	b.WriteString(r.Config)
	_, err := io.WriteString(w, b.String())
	return err
}

func count(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}
