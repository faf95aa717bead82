package report

// Planning what the report draws: per entry, the curves and heat maps it keeps and the points it selects.

import (
	"fmt"
	"math"
	"slices"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// entryPlan maps an entry's point ids to axis indices and routes points to
// curves and heat-map cells.
type entryPlan struct {
	entry     *sweep.Entry
	first     int64
	size      int64
	primary   int   // axis swept along curves (-1: the entry has no axes)
	secondary int   // axis whose values pick the curve (-1: none)
	refIdx    []int // index each other axis must have to be drawn
	curveOf   map[int]*Curve
	slot      map[int]int // swept-axis index → curve slot when thinned (nil: identity)
	others    []int       // further swept axes (more than one value), one heat map per combination
	heats     []*Heat     // by mixed-radix index over others' indices; nil: no heat maps
	heatAll   bool        // heats cover every combination (else one heat on the refIdx slice)
	idx       []int       // scratch
	lo, hi    []float64   // each axis's least and greatest value
}

// plan decides, from the spec alone, which curves and heat maps to gather.
func (r *Run) plan() []*entryPlan {
	var plans []*entryPlan
	var first int64
	for ei := range r.Spec.Entries {
		e := &r.Spec.Entries[ei]
		pl := &entryPlan{entry: e, first: first, size: e.Size(), primary: -1, secondary: -1,
			curveOf: map[int]*Curve{}, idx: make([]int, len(e.Axes))}
		first += pl.size
		plans = append(plans, pl)
		for _, ax := range e.Axes {
			pl.lo, pl.hi = append(pl.lo, slices.Min(ax.Values)), append(pl.hi, slices.Max(ax.Values))
		}
		if len(e.Axes) == 0 {
			continue
		}
		// Primary: the axis with the most values (the last on ties), e.g.
		// limit or capacity; secondary: the next, e.g. window_s or rate.
		order := make([]int, len(e.Axes))
		for i := range order {
			order[i] = len(e.Axes) - 1 - i
		}
		slices.SortStableFunc(order, func(a, b int) int { return len(e.Axes[b].Values) - len(e.Axes[a].Values) })
		pl.primary = order[0]
		if len(order) > 1 && len(e.Axes[order[1]].Values) > 1 {
			pl.secondary = order[1]
		}
		pl.refIdx = make([]int, len(e.Axes))
		var fixed []ParamValue
		for i, ax := range e.Axes {
			pl.refIdx[i] = -1
			if i == pl.primary || i == pl.secondary {
				continue
			}
			pl.refIdx[i] = refIndex(e.Algorithm, ax)
			if len(ax.Values) > 1 {
				fixed = append(fixed, fixedValue(e, ax.Param, ax.Values[pl.refIdx[i]]))
				pl.others = append(pl.others, i)
			}
		}
		prim := &e.Axes[pl.primary]
		keep := thinAxis(prim.Values, r.opts.MaxCurvePoints)
		kept := make([]float64, len(keep))
		if len(keep) < len(prim.Values) {
			pl.slot = make(map[int]int, len(keep))
		}
		for slot, k := range keep {
			kept[slot] = prim.Values[k]
			if pl.slot != nil {
				pl.slot[k] = slot
			}
		}
		picks := []int{0}
		if pl.secondary >= 0 {
			sec := &e.Axes[pl.secondary]
			picks = pickIndices(sec.Values, r.opts.MaxCurves, refIndexOK(e.Algorithm, *sec))
		}
		for _, k := range picks {
			c := &Curve{Algorithm: e.Algorithm, Param: prim.Param, Total: len(prim.Values),
				Values: kept, acc: make([]acc, len(kept))}
			if pl.secondary >= 0 {
				c.Fixed = append(c.Fixed, fixedValue(e, e.Axes[pl.secondary].Param, e.Axes[pl.secondary].Values[k]))
			} else {
				// A single-valued other axis still names the curve.
				for i, ax := range e.Axes {
					if i != pl.primary && len(ax.Values) == 1 {
						c.Fixed = append(c.Fixed, fixedValue(e, ax.Param, ax.Values[0]))
					}
				}
			}
			c.Fixed = append(c.Fixed, fixed...)
			pl.curveOf[k] = c
			r.Curves = append(r.Curves, c)
		}
		if pl.secondary >= 0 {
			xs, ys := prim.Values, e.Axes[pl.secondary].Values
			combos := 1
			for _, i := range pl.others {
				combos *= len(e.Axes[i].Values)
			}
			pl.heatAll = combos <= maxHeatsPerEntry
			if !pl.heatAll {
				combos = 1
			}
			for k := range combos {
				hf := fixed
				if pl.heatAll {
					hf = nil
					rest := k
					for j := len(pl.others) - 1; j >= 0; j-- {
						ax := &e.Axes[pl.others[j]]
						hf = append([]ParamValue{fixedValue(e, ax.Param, ax.Values[rest%len(ax.Values)])}, hf...)
						rest /= len(ax.Values)
					}
				}
				h := &Heat{Algorithm: e.Algorithm, XParam: prim.Param, YParam: e.Axes[pl.secondary].Param,
					XValues: xs, YValues: ys, NX: min(len(xs), r.opts.MaxHeatBins), NY: min(len(ys), r.opts.MaxHeatBins), Fixed: hf}
				h.cells = make([]acc, h.NX*h.NY)
				pl.heats = append(pl.heats, h)
				r.Heats = append(r.Heats, h)
			}
		}
	}
	return plans
}

// maxHeatsPerEntry bounds the heat maps of one sweep entry: one per
// combination of its further swept parameters when there are at most this
// many, else one at the lesson's (or the middle) values.
const maxHeatsPerEntry = 6

// thinAxis picks at most k indices of an axis's values for a curve, in
// ascending order: all of them when there are few; else half evenly spaced
// and, for a sorted positive axis spanning a factor of 10 or more, half
// spaced geometrically, so that the low values (where curves bend) keep
// their detail. The first and last are always kept.
func thinAxis(vals []float64, k int) []int {
	n := len(vals)
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	lo, hi := vals[0], vals[n-1]
	geo := lo > 0 && hi/lo >= 10 && slices.IsSorted(vals)
	even := k
	if geo {
		even = k / 2
	}
	var out []int
	for i := range even {
		out = append(out, int(math.Round(float64(i)*float64(n-1)/float64(max(even-1, 1)))))
	}
	if geo {
		m := k - even
		for i := range m {
			target := lo * math.Pow(hi/lo, float64(i)/float64(max(m-1, 1)))
			j, _ := slices.BinarySearch(vals, target)
			if j > 0 && (j == n || target-vals[j-1] < vals[j]-target) {
				j--
			}
			out = append(out, j)
		}
	}
	if geo { // round values (1, 2, 5 × 10^k) that the axis has, for labels
		for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
			for _, m := range []float64{1, 2, 5} {
				if j, found := slices.BinarySearch(vals, m*math.Pow(10, e)); found {
					out = append(out, j)
				}
			}
		}
	}
	out = append(out, 0, n-1)
	slices.Sort(out)
	return slices.Compact(out)
}

// refIndex is the index of the lesson's value for ax's parameter when the
// axis has it, else the middle index.
func refIndex(a model.Algorithm, ax sweep.Axis) int {
	if k := refIndexOK(a, ax); k >= 0 {
		return k
	}
	return len(ax.Values) / 2
}

// refIndexOK is the index of the lesson's value for ax's parameter, or -1.
func refIndexOK(a model.Algorithm, ax sweep.Axis) int {
	for _, ref := range lessonRefs {
		if ref.Algorithm == a {
			return slices.Index(ax.Values, ref.Get(ax.Param))
		}
	}
	return -1
}

// pickIndices picks at most k indices of the sorted values vals, spread
// evenly over their range (geometrically when it spans a factor of 10 or
// more), always including must (when >= 0), in ascending order.
func pickIndices(vals []float64, k, must int) []int {
	n := len(vals)
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	lo, hi := slices.Min(vals), slices.Max(vals)
	geo := lo > 0 && hi/lo >= 10
	var out []int
	for i := range k {
		f := float64(i) / float64(max(k-1, 1))
		target := lo + f*(hi-lo)
		if geo {
			target = lo * math.Pow(hi/lo, f)
		}
		best := 0
		for j, v := range vals {
			if math.Abs(v-target) < math.Abs(vals[best]-target) {
				best = j
			}
		}
		out = append(out, best)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if must >= 0 && !slices.Contains(out, must) {
		// Replace the nearest pick that is not an end (ends show the range).
		best := -1
		for i, v := range out {
			if (i == 0 || i == len(out)-1) && len(out) > 2 {
				continue
			}
			if best < 0 || abs(v-must) < abs(out[best]-must) {
				best = i
			}
		}
		out[best] = must
		slices.Sort(out)
		out = slices.Compact(out)
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// atEnd reports whether the point whose axis indices are in pl.idx has a
// swept axis at its smallest or largest value.
func (pl *entryPlan) atEnd() bool {
	for i, ax := range pl.entry.Axes {
		if len(ax.Values) < 2 {
			continue
		}
		if v := ax.Values[pl.idx[i]]; v == pl.lo[i] || v == pl.hi[i] {
			return true
		}
	}
	return false
}

func findPlan(plans []*entryPlan, id int64) *entryPlan {
	for _, pl := range plans {
		if id >= pl.first && id < pl.first+pl.size {
			return pl
		}
	}
	return nil
}

// selectPoints picks the points shown per client: the lesson's reference
// points present in the run, then the overall frontier's knees.
func (r *Run) selectPoints() {
	seen := map[int64]bool{}
	for _, p := range r.Refs {
		seen[p.ID] = true
		r.Selected = append(r.Selected, Selected{Point: p, Why: "lesson: " + lessonName(p.Policy)})
	}
	for _, k := range r.Frontier.Knees(r.opts.Knees) {
		if seen[k.ID] {
			continue
		}
		seen[k.ID] = true
		r.Selected = append(r.Selected, Selected{Point: k.Point, Why: "frontier knee"})
	}
	for i := range r.Selected {
		r.Selected[i].Slug = fmt.Sprintf("%02d-%s", i+1, slug(r.Selected[i].Policy))
	}
}
