package check

// Comparing joined points metric by metric: within tolerance, or by a test across replicates.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// checkPoint is one baseline point and the run's values for it, replicate
// by replicate: row r's metric m is at r·len(metrics)+m.
type checkPoint struct {
	key           string
	baseID, runID int64 // runID is -1 when the run lacks the point
	base, run     []float64
}

// sample returns metric m of every replicate of one side (nm metrics).
func sample(side []float64, nm, m int) []float64 {
	n := len(side) / nm
	if n == 1 {
		return side[m : m+1]
	}
	out := make([]float64, n)
	for r := range out {
		out[r] = side[r*nm+m]
	}
	return out
}

// accum is compare's running state: replicated moves awaiting the
// Benjamini–Hochberg step-up, and counts for the warnings.
type accum struct {
	moved      []pending // replicated moves beyond tolerance, awaiting the test
	tests      int       // replicated comparisons made
	fewForTest int
	fewForCI   int
	fewN       [2]int
	ordinal    int // compared points so far
}

type pending struct {
	point  int           // the point's ordinal among compared points
	status metricVerdict // the point's verdict without its untested moves
	change Change
}

// compare classifies every point of order (runID < 0: removed) and sorts
// the changes; Compare does the same point by point as it streams.
func (res *Result) compare(order []*checkPoint) {
	for _, p := range order {
		if p.runID < 0 {
			res.Removed++
			res.RemovedPoints = append(res.RemovedPoints, p.key)
			continue
		}
		res.comparePoint(p)
	}
	res.finish()
}

// comparePoint compares one point present on both sides.
func (res *Result) comparePoint(p *checkPoint) {
	a := &res.acc
	alpha := res.Options.alpha()
	nm := len(res.Metrics)
	res.Compared++
	a.ordinal++
	nb, nr := len(p.base)/nm, len(p.run)/nm
	if nb > 1 || nr > 1 {
		res.Replicated = true
		a.tests += nm
		if MWUMinP(nb, nr) > alpha {
			if a.fewForTest == 0 {
				a.fewN = [2]int{nb, nr}
			}
			a.fewForTest++
		}
		if min(nb, nr) < 6 {
			a.fewForCI++
		}
	}
	status := metricSame
	firstMoved := len(a.moved)
	for m, metric := range res.Metrics {
		v, c := compareMetric(metric, sample(p.base, nm, m), sample(p.run, nm, m), res.Options.tolerance(metric))
		c.Point, c.BaselineID, c.RunID = p.key, p.baseID, p.runID
		switch v {
		case metricChanged:
			res.addChange(c)
		case metricMoved:
			a.moved = append(a.moved, pending{point: a.ordinal, change: c})
			v = metricTolerated // unless the test flags it
		}
		status = max(status, v)
	}
	for i := firstMoved; i < len(a.moved); i++ {
		a.moved[i].status = status
	}
	switch status {
	case metricChanged:
		res.Points++
	case metricTolerated:
		res.Tolerated++
	default:
		res.Identical++
	}
}

// addChange keeps c if it is among the MaxRows worst changes.
func (res *Result) addChange(c Change) {
	res.ChangedValues++
	res.Changes = append(res.Changes, c)
	if limit := res.Options.MaxRows; limit > 0 && len(res.Changes) >= 2*limit+64 {
		res.sortChanges()
		res.Changes = res.Changes[:limit]
	}
}

// finish runs the Benjamini–Hochberg step-up over the replicated moves,
// writes the warnings and sorts the changes worst first.
//
// Replicated comparisons are many tests at once (points × metrics), so a
// per-test level alpha would flag about alpha of them in a mere re-run with
// another seed. Their p-values go through the Benjamini–Hochberg step-up at
// level alpha over every replicated comparison made (those within tolerance
// count with p = 1): the expected share of false flags among the flagged is
// at most alpha, and a re-run of the same distribution fails with
// probability about alpha.
func (res *Result) finish() {
	a := &res.acc
	alpha := res.Options.alpha()
	// Benjamini–Hochberg: flag the k smallest p-values, k the largest with
	// p(k) <= k/tests·alpha.
	slices.SortStableFunc(a.moved, func(x, y pending) int { return cmp.Compare(x.change.P, y.change.P) })
	k := 0
	for i, mv := range a.moved {
		if mv.change.P <= float64(i+1)/float64(a.tests)*alpha {
			k = i + 1
		}
	}
	flagged := map[int]bool{}
	for _, mv := range a.moved[:k] {
		res.addChange(mv.change)
		if mv.status != metricChanged && !flagged[mv.point] {
			flagged[mv.point] = true
			res.Tolerated-- // it counted as tolerated: its moves were untested
			res.Points++
		}
	}
	if a.fewForTest > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d points have too few replicates to detect a change (e.g. %d in the baseline, %d in the run: the smallest possible p-value is %.3g, above alpha %g); use at least 4 replicates on each side",
			a.fewForTest, a.fewN[0], a.fewN[1], MWUMinP(a.fewN[0], a.fewN[1]), alpha))
	}
	if a.fewForCI > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d points have fewer than 6 replicates on a side: no %.0f%% confidence interval for their medians", a.fewForCI, 100*CIConfidence))
	}
	if len(a.moved) > k {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d replicated metric values moved beyond tolerance but not significantly (Mann–Whitney U, Benjamini–Hochberg over %d comparisons at alpha %g): not flagged", len(a.moved)-k, a.tests, alpha))
	}
	res.acc = accum{}
	res.sortChanges()
	if limit := res.Options.MaxRows; limit > 0 && len(res.Changes) > limit {
		res.Changes = res.Changes[:limit]
	}
}

// sortChanges orders the changes worst first: largest relative change, then
// largest change, then baseline point_id and metric order.
func (res *Result) sortChanges() {
	slices.SortStableFunc(res.Changes, func(a, b Change) int {
		if c := cmp.Compare(math.Abs(b.RelDelta()), math.Abs(a.RelDelta())); c != 0 {
			return c
		}
		if c := cmp.Compare(math.Abs(b.Delta()), math.Abs(a.Delta())); c != 0 {
			return c
		}
		if c := cmp.Compare(a.BaselineID, b.BaselineID); c != 0 {
			return c
		}
		return cmp.Compare(slices.Index(res.Metrics, a.Metric), slices.Index(res.Metrics, b.Metric))
	})
}

type metricVerdict uint8

const (
	metricSame      metricVerdict = iota // equal values (or identical samples)
	metricTolerated                      // moved within tolerance (or, after the test, not significantly)
	metricMoved                          // replicated: the median moved beyond tolerance; to be tested
	metricChanged                        // moved beyond tolerance (and significantly)
)

// compareMetric compares one metric of one point: base and run hold a value
// per replicate. Single values on both sides compare exactly up to tol
// (metricChanged when beyond it); NaN (a NULL or NaN let through by
// --allow-incomplete) equals NaN. Otherwise the medians are
// compared up to tol, and a move beyond it is metricMoved with the
// Mann–Whitney p-value in the Change, for the caller to judge. The Change's
// point fields are left to the caller.
func compareMetric(metric string, base, run []float64, tol Tolerance) (metricVerdict, Change) {
	c := Change{Metric: metric, NBaseline: len(base), NRun: len(run), P: math.NaN(),
		BaselineLo: math.NaN(), BaselineHi: math.NaN(), RunLo: math.NaN(), RunHi: math.NaN()}
	if len(base) == 1 && len(run) == 1 {
		c.Baseline, c.Run = base[0], run[0]
		switch {
		case sameValue(c.Baseline, c.Run):
			return metricSame, c
		case tol.Allows(c.Baseline, c.Delta()):
			return metricTolerated, c
		}
		return metricChanged, c
	}
	if sameSample(base, run) {
		return metricSame, c
	}
	c.Baseline, c.BaselineLo, c.BaselineHi, _ = MedianCI(base, CIConfidence)
	c.Run, c.RunLo, c.RunHi, _ = MedianCI(run, CIConfidence)
	if sameValue(c.Baseline, c.Run) || tol.Allows(c.Baseline, c.Delta()) {
		return metricTolerated, c
	}
	c.P = MannWhitneyU(base, run).P
	return metricMoved, c
}

// sameValue is == with NaN equal to NaN.
func sameValue(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

// sameSample reports whether a and b hold the same values in any order
// (NaN equal to NaN).
func sameSample(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	if slices.EqualFunc(a, b, sameValue) {
		return true
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x) // NaNs first
	slices.Sort(y)
	return slices.EqualFunc(x, y, sameValue)
}
