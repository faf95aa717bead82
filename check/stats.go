package check

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// MWU is the outcome of a two-sided Mann–Whitney U (Wilcoxon rank-sum) test.
type MWU struct {
	U     float64 // pairs (x, y) with x > y, a tie counting ½ (0 <= U <= len(x)·len(y))
	P     float64 // two-sided p-value; 1 when either sample is empty or all values are equal
	Exact bool    // P is from the exact permutation distribution (given the ties), not the normal approximation
}

// mwuExactMaxN is the largest len(x)+len(y) tested with the exact
// distribution; larger samples use the normal approximation, which is then
// accurate to about 0.001 in P.
const mwuExactMaxN = 40

// MannWhitneyU tests whether x and y come from the same distribution against
// the alternative that one tends to give larger values (two-sided). Ties get
// mid-ranks. Up to 40 values in all, P is exact: the share of the
// C(n, len(x)) ways to split the pooled values (ties kept) whose U is at least
// as far in the same tail, doubled and capped at 1. Beyond that it is the
// normal approximation with tie-corrected variance and a continuity
// correction. NaNs are dropped.
func MannWhitneyU(x, y []float64) MWU {
	x, y = dropNaN(x), dropNaN(y)
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return MWU{U: math.NaN(), P: 1, Exact: true}
	}
	type obs struct {
		v     float64
		first bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	// Tie groups in increasing order: size and how many come from x. Doubled
	// U is an integer: an x value gains 2 per smaller y and 1 per tied y.
	var sizes []int
	u2, ySoFar := 0, 0
	for i := 0; i < len(all); {
		j, kx := i, 0
		for j < len(all) && all[j].v == all[i].v {
			if all[j].first {
				kx++
			}
			j++
		}
		t := j - i
		u2 += 2*kx*ySoFar + kx*(t-kx)
		ySoFar += t - kx
		sizes = append(sizes, t)
		i = j
	}
	res := MWU{U: float64(u2) / 2}
	if len(sizes) == 1 {
		res.P, res.Exact = 1, true
		return res
	}
	if n1+n2 <= mwuExactMaxN {
		res.P, res.Exact = mwuExactP(sizes, n1, n2, u2), true
		return res
	}
	res.P = mwuNormalP(sizes, n1, n2, res.U)
	return res
}

// mwuExactP is the two-sided p-value of doubled statistic u2 under the
// permutation distribution of U given the tie group sizes: a dynamic program
// over the groups in order, counting the ways (products of binomials) to take
// a of the first sample so far with doubled U so far u.
func mwuExactP(sizes []int, n1, n2, u2 int) float64 {
	w := 2*n1*n2 + 1
	cur := make([]float64, (n1+1)*w)
	next := make([]float64, (n1+1)*w)
	cur[0] = 1
	placed, maxU := 0, 0
	for _, t := range sizes {
		clear(next)
		binom := pascalRow(t)
		newMax := 0
		for a := max(0, placed-n2); a <= min(placed, n1); a++ {
			b := placed - a
			row := cur[a*w : a*w+maxU+1]
			for u, c := range row {
				if c == 0 {
					continue
				}
				for k := max(0, t-(n2-b)); k <= t && a+k <= n1; k++ {
					du := 2*k*b + k*(t-k)
					next[(a+k)*w+u+du] += c * binom[k]
					newMax = max(newMax, u+du)
				}
			}
		}
		cur, next = next, cur
		placed += t
		maxU = newMax
	}
	dist := cur[n1*w : n1*w+maxU+1]
	var total, lo, hi float64
	for u, c := range dist {
		total += c
		if u <= u2 {
			lo += c
		}
		if u >= u2 {
			hi += c
		}
	}
	return min(1, 2*min(lo, hi)/total)
}

// pascalRow returns C(t, k) for k = 0..t.
func pascalRow(t int) []float64 {
	row := make([]float64, t+1)
	row[0] = 1
	for k := 1; k <= t; k++ {
		row[k] = row[k-1] * float64(t-k+1) / float64(k)
	}
	return row
}

// mwuNormalP is the two-sided p-value of U under the normal approximation:
// mean n1·n2/2, variance n1·n2/12·((n+1) − Σ(t³−t)/(n(n−1))) for tie group
// sizes t, with a continuity correction of ½.
func mwuNormalP(sizes []int, n1, n2 int, u float64) float64 {
	n := float64(n1 + n2)
	var ties float64
	for _, t := range sizes {
		tf := float64(t)
		ties += tf*tf*tf - tf
	}
	v := float64(n1) * float64(n2) / 12 * ((n + 1) - ties/(n*(n-1)))
	if v <= 0 {
		return 1
	}
	z := max(0, math.Abs(u-float64(n1)*float64(n2)/2)-0.5) / math.Sqrt(v)
	return min(1, 2*distuv.UnitNormal.Survival(z))
}

// MWUMinP is the smallest two-sided p-value MannWhitneyU can return for
// samples of n1 and n2 values (all distinct, completely separated):
// 2/C(n1+n2, n1). When it exceeds the significance level, no difference can
// ever be detected (n1 = n2 = 3 gives 0.1; 4 and 4 give 0.029).
func MWUMinP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	lc, _ := math.Lgamma(float64(n1 + n2 + 1))
	l1, _ := math.Lgamma(float64(n1 + 1))
	l2, _ := math.Lgamma(float64(n2 + 1))
	return min(1, 2*math.Exp(-(lc-l1-l2)))
}

// MedianCI returns the median of x and a distribution-free confidence
// interval for it at the given confidence (e.g. 0.95): the order statistics
// x(l) and x(n+1−l) for the largest l whose coverage 1 − 2·P(B <= l−1),
// B ~ Binomial(n, ½), is at least confidence. ok is false, and lo and hi are
// NaN, when no interval reaches it (n < 6 at 95%). NaNs are dropped.
func MedianCI(x []float64, confidence float64) (median, lo, hi float64, ok bool) {
	s := dropNaN(x)
	if len(s) == 0 {
		return math.NaN(), math.NaN(), math.NaN(), false
	}
	s = slices.Clone(s)
	slices.Sort(s)
	n := len(s)
	median = s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	b := distuv.Binomial{N: float64(n), P: 0.5}
	l := 0
	for k := 1; k <= (n+1)/2; k++ {
		if 1-2*b.CDF(float64(k-1)) < confidence {
			break
		}
		l = k
	}
	if l == 0 {
		return median, math.NaN(), math.NaN(), false
	}
	return median, s[l-1], s[n-l], true
}

func dropNaN(x []float64) []float64 {
	if !slices.ContainsFunc(x, math.IsNaN) {
		return x
	}
	out := make([]float64, 0, len(x))
	for _, v := range x {
		if !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}
