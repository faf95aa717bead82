package report

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"github.com/ratesweep/ratesweep/internal/choice"
	"github.com/ratesweep/ratesweep/model"
)

// Point is one grid point's outcome, pooled over its replicates: the counts
// are sums over replicates and the percentages are recomputed from them.
type Point struct {
	ID         int64 // point_id
	Policy     model.Policy
	Replicates int // rows pooled into this point
	model.Metrics
	delaySum float64 // Σ mean delay × admitted requests over replicates
	tie      pickTie
}

// X is the point's position on the trade-off plot's x axis: legitimate
// requests cut, % of all legitimate requests.
func (p *Point) X() float64 { return p.LegitCutPct }

// Y is the point's position on the y axis: abusive requests missed, % of all
// abusive requests.
func (p *Point) Y() float64 { return p.MissedPct }

// add pools one more replicate's metrics into p.
func (p *Point) add(m *model.Metrics) {
	p.Replicates++
	p.OfferedLegit += m.OfferedLegit
	p.OfferedAbusive += m.OfferedAbusive
	p.Caught += m.Caught
	p.Missed += m.Missed
	p.FalseCut += m.FalseCut
	p.CutDesign += m.CutDesign
	p.CutCode += m.CutCode
	p.CutNone += m.CutNone
	p.LegitCutPct = pct(p.FalseCut, p.OfferedLegit)
	p.MissedPct = pct(p.Missed, p.OfferedAbusive)
	p.OnlyHerePct = pct(p.CutNone, p.Caught)
	p.addReactions(m)
	p.addCost(m)
	// Delays: the mean over every admitted request of every replicate, and
	// the largest replicate's p99 (percentiles do not pool).
	p.delaySum += m.MeanDelayS * float64(m.OfferedLegit-m.FalseCut+m.Missed)
	if adm := p.OfferedLegit - p.FalseCut + p.Missed; adm > 0 {
		p.MeanDelayS = p.delaySum / float64(adm)
	}
	p.P99DelayS = max(p.P99DelayS, m.P99DelayS)
}

func pct(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// FrontierPoint is a point on the Pareto frontier. Ties counts the other
// points with exactly the same (x, y); the kept point is the first one added
// (the lowest point_id when points arrive in file order: frontier.csv and
// explore.html agree on it). Shown returns the one a reader is shown.
type FrontierPoint struct {
	Point
	Ties int64
	alt  *Point // among the ties, the one the choice rule prefers, when not Point
}

// Shown is the frontier point as the report's tables and picks show it:
// among the settings tied with it, the one that adds the least delay, then
// the simpler one, then the one inside its swept ranges, then the first by
// point_id (the choice rule).
func (p FrontierPoint) Shown() FrontierPoint {
	if p.alt != nil {
		p.Point, p.alt = *p.alt, nil
	}
	return p
}

func (p *FrontierPoint) preferred() *Point {
	if p.alt != nil {
		return p.alt
	}
	return &p.Point
}

// Frontier is the Pareto frontier of points when both the legitimate cut %
// (x) and the missed % (y) are to be minimised. A point is dominated when
// another is no worse on both axes and better on one. It is built
// incrementally: Add buffers points and folds them in by batches (sort and
// sweep), so memory stays proportional to the frontier, not to the points
// seen, and each point costs O(log n) amortised whatever order points arrive
// in. The zero value is an empty frontier.
type Frontier struct {
	pts     []FrontierPoint // the frontier as of the last flush, by x ascending
	pending []pendingPoint  // added since
	seq     int64           // arrival counter (ties keep the earliest)
	order   []int64         // arrival number of each of pts
}

type pendingPoint struct {
	FrontierPoint
	seq int64
}

// minFlush is the smallest batch folded into the frontier.
const minFlush = 1024

// Add offers p to the frontier.
func (f *Frontier) Add(p Point) {
	f.pending = append(f.pending, pendingPoint{FrontierPoint{Point: p}, f.seq})
	f.seq++
	if len(f.pending) >= max(minFlush, 2*len(f.pts)) {
		f.flush()
	}
}

// flush folds the pending points into the frontier: sorted by x, then y,
// then arrival, a point stays when its y beats every point of smaller x;
// points equal in both to a kept one are counted as its ties.
func (f *Frontier) flush() {
	if len(f.pending) == 0 {
		return
	}
	all := f.pending
	for i, q := range f.pts {
		all = append(all, pendingPoint{q, f.order[i]})
	}
	slices.SortFunc(all, func(a, b pendingPoint) int {
		if c := cmp.Compare(a.X(), b.X()); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Y(), b.Y()); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	f.pts, f.order = f.pts[:0], f.order[:0]
	bestY := math.Inf(1)
	for _, q := range all {
		if n := len(f.pts); n > 0 && f.pts[n-1].X() == q.X() && f.pts[n-1].Y() == q.Y() {
			k := &f.pts[n-1]
			k.Ties += 1 + q.Ties
			c := q.preferred()
			if ck, kk := c.keys(), k.preferred().keys(); choice.Better(&ck, &kk) {
				alt := *c
				k.alt = &alt
			}
			continue
		}
		if q.Y() < bestY {
			f.pts = append(f.pts, q.FrontierPoint)
			f.order = append(f.order, q.seq)
			bestY = q.Y()
		}
	}
	f.pending = all[:0]
	if cap(f.pending) > 4*max(minFlush, 2*len(f.pts)) {
		f.pending = nil // give back the memory of a large first batch
	}
}

// Points returns the frontier sorted by x ascending (do not modify).
func (f *Frontier) Points() []FrontierPoint {
	f.flush()
	return f.pts
}

// Len is the number of frontier points (ties not counted).
func (f *Frontier) Len() int { return len(f.Points()) }

// Best returns the frontier point with the least legitimate cut among those
// missing at most maxMissedPct % of the abusive requests (as Shown), and
// whether any does.
func (f *Frontier) Best(maxMissedPct float64) (FrontierPoint, bool) {
	for _, p := range f.Points() {
		if p.Y() <= maxMissedPct {
			return p.Shown(), true
		}
	}
	return FrontierPoint{}, false
}

// Knees returns up to n frontier points where the frontier bends most: the
// point farthest below the straight line between the frontier's ends, then
// recursively the farthest in the remaining pieces. Distances are measured in
// percentage points on both axes. The result is sorted by x.
func (f *Frontier) Knees(n int) []FrontierPoint {
	type span struct{ lo, hi int }
	f.flush()
	var picked []int
	spans := []span{{0, len(f.pts) - 1}}
	for len(picked) < n {
		best, bestD, bestS := -1, 0.0, -1
		for si, s := range spans {
			k, d := f.farthest(s.lo, s.hi)
			if k >= 0 && d > bestD {
				best, bestD, bestS = k, d, si
			}
		}
		if best < 0 || bestD < 1e-9 {
			break
		}
		s := spans[bestS]
		spans = append(spans[:bestS], spans[bestS+1:]...)
		spans = append(spans, span{s.lo, best}, span{best, s.hi})
		picked = append(picked, best)
	}
	sort.Ints(picked)
	out := make([]FrontierPoint, len(picked))
	for i, k := range picked {
		out[i] = f.pts[k].Shown()
	}
	return out
}

// farthest returns the index strictly between lo and hi farthest from the
// chord pts[lo]–pts[hi], on the origin's side, and its distance.
func (f *Frontier) farthest(lo, hi int) (int, float64) {
	if hi-lo < 2 {
		return -1, 0
	}
	ax, ay := f.pts[lo].X(), f.pts[lo].Y()
	bx, by := f.pts[hi].X(), f.pts[hi].Y()
	dx, dy := bx-ax, by-ay
	norm := dx*dx + dy*dy
	if norm == 0 {
		return -1, 0
	}
	best, bestD := -1, 0.0
	for k := lo + 1; k < hi; k++ {
		px, py := f.pts[k].X()-ax, f.pts[k].Y()-ay
		// c > 0: the point lies below-left of the chord, bending towards the
		// ideal corner (0, 0).
		c := dy*px - dx*py
		if d := c * c / norm; c > 0 && d > bestD {
			best, bestD = k, d
		}
	}
	if best < 0 {
		return -1, 0
	}
	return best, math.Sqrt(bestD)
}
