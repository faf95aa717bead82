package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// defaultTargets are the missed-% targets of the best-settings section when
// none is given and the run reaches them.
var defaultTargets = []float64{50, 25, 10}

// Target is a missed-% bound the best-settings section answers, and why it
// was chosen.
type Target struct {
	MissedPct float64
	Why       string // "" for a target given with --target or a default the run reaches
}

func (t Target) label() string {
	if t.Why == "" {
		return fmt.Sprintf("%g%%", t.MissedPct)
	}
	return fmt.Sprintf("%g%% (%s)", t.MissedPct, t.Why)
}

// Targets are the missed-% bounds the best-settings section answers: the
// ones given (Options.Targets), else the defaults (50, 25, 10 %) the run
// reaches, completed from what it can reach when fewer than two do: the
// frontier's knee, and the least miss the run reaches plus 0, 5, 10 and 20
// percentage points, each rounded up to a whole percent, each kept only
// when it picks a setting no other target picks.
func (r *Run) Targets() []Target {
	if r.targets != nil {
		return r.targets
	}
	var out []Target
	if len(r.opts.Targets) > 0 {
		for _, v := range r.opts.Targets {
			out = append(out, Target{MissedPct: v})
		}
		r.targets = out
		return out
	}
	pts := r.Frontier.Points()
	if len(pts) == 0 || r.NoAbuse() {
		r.targets = []Target{}
		return r.targets
	}
	low := pts[len(pts)-1].Y()
	var picks []int64 // the setting each target picks
	for _, v := range defaultTargets {
		if v >= low {
			out = append(out, Target{MissedPct: v})
			b, _ := r.Frontier.Best(v)
			picks = append(picks, b.ID)
		}
	}
	if len(out) >= 2 {
		r.targets = nil
		for _, v := range defaultTargets { // an unreached one says how to reach it
			r.targets = append(r.targets, Target{MissedPct: v})
		}
		return r.targets
	}
	// A target that picks the same setting as another says nothing more.
	add := func(v float64, why string) {
		v = math.Min(math.Ceil(v-1e-9), 100)
		b, ok := r.Frontier.Best(v)
		if !ok || slices.Contains(picks, b.ID) {
			return
		}
		out = append(out, Target{MissedPct: v, Why: why})
		picks = append(picks, b.ID)
	}
	if k := r.Frontier.Knees(1); len(k) == 1 {
		add(k[0].Y(), "the frontier's knee")
	}
	add(low, "the least the run misses")
	for _, step := range []float64{5, 10, 20} {
		add(low+step, fmt.Sprintf("%g points above the least", step))
	}
	slices.SortStableFunc(out, func(a, b Target) int { return -cmpFloat(a.MissedPct, b.MissedPct) })
	r.targets = out
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// NoAbuse reports whether no request of the run is labelled abusive: every
// setting then misses nothing, and only the legitimate cut tells settings
// apart.
func (r *Run) NoAbuse() bool {
	for _, p := range r.Frontier.Points() {
		if p.OfferedAbusive > 0 {
			return false
		}
	}
	return true
}

// noAbuseLine says so, and names the setting that cuts the fewest
// legitimate requests.
func (r *Run) noAbuseLine() string {
	s := "no request of the run is labelled abusive (no abusive client in the scenario, or no rule of the log matches), so every setting misses nothing and targets mean nothing; label abusive traffic (classes, or traffic rules) to compare settings on what they stop"
	if pts := r.Frontier.Points(); len(pts) > 0 {
		b := pts[0].Shown()
		s += fmt.Sprintf(". The setting that cuts the fewest legitimate requests: %s %s, %.2f%%", b.Policy.Algorithm, paramsCell(b.Policy), b.X())
	}
	return s
}

// unreachable says, for a target no setting reaches, the least the run
// misses and which way its grid would have to extend.
func (r *Run) unreachable(f *Frontier) string {
	pts := f.Points()
	if len(pts) == 0 {
		return "no setting of the run"
	}
	low := pts[len(pts)-1].Shown()
	s := fmt.Sprintf("the least this run misses is %.2f%% (%s %s)", low.Y(), low.Policy.Algorithm, paramsCell(low.Policy))
	var ways []string
	for _, e := range EdgesOfRange(r.Spec, low.ID) {
		ways = append(ways, e.String())
	}
	if len(ways) > 0 {
		return s + "; to miss less, extend the grid: " + strings.Join(ways, "; ")
	}
	return s + ", inside its swept ranges: a stricter setting of another algorithm, or traffic labelled otherwise, is needed to miss less"
}
