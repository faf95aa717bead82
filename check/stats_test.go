package check

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// bruteMWU enumerates every split of the pooled values into len(x) and
// len(y) and returns U of x and the two-sided p-value 2·min(tail), capped at 1.
func bruteMWU(x, y []float64) (u, p float64) {
	pool := append(append([]float64{}, x...), y...)
	n, n1 := len(pool), len(x)
	uOf := func(inX []bool) float64 {
		var s float64
		for i := range n {
			if !inX[i] {
				continue
			}
			for j := range n {
				if inX[j] {
					continue
				}
				switch {
				case pool[i] > pool[j]:
					s++
				case pool[i] == pool[j]:
					s += 0.5
				}
			}
		}
		return s
	}
	first := make([]bool, n)
	for i := range n1 {
		first[i] = true
	}
	u = uOf(first)
	var total, lo, hi float64
	inX := make([]bool, n)
	var rec func(i, left int)
	rec = func(i, left int) {
		if left == 0 {
			v := uOf(inX)
			total++
			if v <= u {
				lo++
			}
			if v >= u {
				hi++
			}
			return
		}
		if n-i < left {
			return
		}
		inX[i] = true
		rec(i+1, left-1)
		inX[i] = false
		rec(i+1, left)
	}
	rec(0, n1)
	return u, min(1, 2*min(lo, hi)/total)
}

func TestMannWhitneyUReference(t *testing.T) {
	// R's ?wilcox.test example: W = 35; one-sided p = 0.1272, so two-sided 0.2544.
	x := []float64{0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46}
	y := []float64{1.15, 0.88, 0.90, 0.74, 1.21}
	r := MannWhitneyU(x, y)
	if r.U != 35 || math.Abs(r.P-0.2544122544) > 1e-9 || !r.Exact {
		t.Errorf("R example: got U=%v p=%v exact=%v, want U=35 p=0.2544 exact", r.U, r.P, r.Exact)
	}
	// Complete separation of 5 and 5: p = 2/C(10,5).
	r = MannWhitneyU([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10})
	if r.U != 0 || math.Abs(r.P-2.0/252) > 1e-12 {
		t.Errorf("separated 5/5: got U=%v p=%v, want 0 and %v", r.U, r.P, 2.0/252)
	}
	if got := MWUMinP(5, 5); math.Abs(got-2.0/252) > 1e-12 {
		t.Errorf("MWUMinP(5,5) = %v, want %v", got, 2.0/252)
	}
	if got := MWUMinP(3, 3); math.Abs(got-0.1) > 1e-12 {
		t.Errorf("MWUMinP(3,3) = %v, want 0.1", got)
	}
	if got := MWUMinP(4, 4); got >= 0.05 {
		t.Errorf("MWUMinP(4,4) = %v, want < 0.05", got)
	}
}

// The exact p-value equals a brute-force enumeration, with and without ties.
func TestMannWhitneyUExactMatchesEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := range 300 {
		n1, n2 := 1+rng.IntN(7), 1+rng.IntN(7)
		levels := 2 + rng.IntN(12) // few levels: many ties
		draw := func(n int, shift int) []float64 {
			s := make([]float64, n)
			for i := range s {
				s[i] = float64(rng.IntN(levels) + shift)
			}
			return s
		}
		x, y := draw(n1, 0), draw(n2, rng.IntN(3))
		wantU, wantP := bruteMWU(x, y)
		got := MannWhitneyU(x, y)
		if got.U != wantU || math.Abs(got.P-wantP) > 1e-12 || !got.Exact {
			t.Fatalf("trial %d: x=%v y=%v: got U=%v p=%v exact=%v, want U=%v p=%v", trial, x, y, got.U, got.P, got.Exact, wantU, wantP)
		}
	}
}

// Beyond 40 values the normal approximation stays close to the exact test.
func TestMannWhitneyUNormalApproximation(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for trial := range 50 {
		x, y := make([]float64, 20), make([]float64, 20)
		for i := range x {
			x[i] = math.Round(rng.NormFloat64() * 3)
			y[i] = math.Round(rng.NormFloat64()*3 + 1.5)
		}
		exact := MannWhitneyU(x, y)
		// Recompute with the normal approximation on the same tie groups.
		sizes := tieSizes(append(append([]float64{}, x...), y...))
		approx := mwuNormalP(sizes, 20, 20, exact.U)
		if !exact.Exact || math.Abs(exact.P-approx) > 0.01 {
			t.Errorf("trial %d: exact p=%v (exact=%v), normal p=%v", trial, exact.P, exact.Exact, approx)
		}
	}
	// 30 and 30 are past the exact limit.
	x, y := make([]float64, 30), make([]float64, 30)
	for i := range x {
		x[i], y[i] = float64(i), float64(i+30)
	}
	r := MannWhitneyU(x, y)
	if r.Exact || r.P > 1e-9 || r.U != 0 {
		t.Errorf("separated 30/30: got %+v, want normal approximation with p < 1e-9", r)
	}
	if r := MannWhitneyU(x, x); r.P != 1 {
		t.Errorf("identical 30/30: p = %v, want 1", r.P)
	}
}

func tieSizes(v []float64) []int {
	counts := map[float64]int{}
	for _, x := range v {
		counts[x]++
	}
	var out []int
	for _, c := range counts {
		out = append(out, c)
	}
	return out
}

func TestMannWhitneyUTies(t *testing.T) {
	all := func(v float64, n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = v
		}
		return s
	}
	if r := MannWhitneyU(all(7, 6), all(7, 6)); r.P != 1 || r.U != 18 {
		t.Errorf("all equal: %+v, want U=18 p=1", r)
	}
	// Constant but different samples (a deterministic model replicated):
	// completely separated, p = 2/C(10,5) as without ties.
	if r := MannWhitneyU(all(880, 5), all(1020, 5)); math.Abs(r.P-2.0/252) > 1e-12 {
		t.Errorf("constant 880 vs 1020: p = %v, want %v", r.P, 2.0/252)
	}
	if r := MannWhitneyU(nil, all(1, 3)); r.P != 1 {
		t.Errorf("empty sample: p = %v, want 1", r.P)
	}
	if r := MannWhitneyU([]float64{1, math.NaN(), 2}, []float64{1, 2}); r.U != 2 {
		t.Errorf("NaN not dropped: U = %v, want 2", r.U)
	}
}

func TestMedianCI(t *testing.T) {
	cases := []struct {
		x           []float64
		med, lo, hi float64
		ok          bool
		confidence  float64
		descr       string
	}{
		{[]float64{5, 1, 4, 2, 3}, 3, math.NaN(), math.NaN(), false, 0.95, "n=5 cannot reach 95% (max coverage 93.75%)"},
		{[]float64{6, 1, 5, 2, 4, 3}, 3.5, 1, 6, true, 0.95, "n=6: extremes cover 96.9%"},
		{[]float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, 5.5, 2, 9, true, 0.95, "n=10: x(2), x(9) cover 97.9%"},
		{[]float64{5, 1, 4, 2, 3}, 3, 1, 5, true, 0.90, "n=5 at 90%"},
	}
	for _, c := range cases {
		med, lo, hi, ok := MedianCI(c.x, c.confidence)
		same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
		if !same(med, c.med) || !same(lo, c.lo) || !same(hi, c.hi) || ok != c.ok {
			t.Errorf("%s: got %v [%v, %v] ok=%v, want %v [%v, %v] ok=%v", c.descr, med, lo, hi, ok, c.med, c.lo, c.hi, c.ok)
		}
	}
}

func normalSample(rng *rand.Rand, n int, mean, sd float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.Round(mean + sd*rng.NormFloat64()) // whole requests: ties happen
	}
	return s
}

// A shifted distribution is flagged; a re-drawn sample of the same
// distribution is flagged about alpha of the time, no more.
func TestCompareMetricReplicated(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const trials, n = 2000, 10
	falsePos, power := 0, 0
	flagged := func(base, run []float64, tol Tolerance) bool {
		v, c := compareMetric("false_cut", base, run, tol)
		return v == metricMoved && c.P < DefaultAlpha
	}
	for range trials {
		base := normalSample(rng, n, 1000, 30)
		if flagged(base, normalSample(rng, n, 1000, 30), Tolerance{}) {
			falsePos++
		}
		if flagged(base, normalSample(rng, n, 1060, 30), Tolerance{}) {
			power++
		}
	}
	t.Logf("same distribution flagged in %d of %d trials, 2σ shift in %d", falsePos, trials, power)
	if rate := float64(falsePos) / trials; rate > 0.065 {
		t.Errorf("same distribution flagged in %.1f%% of trials, want about 5%% at most", 100*rate)
	}
	if rate := float64(power) / trials; rate < 0.9 {
		t.Errorf("a 2σ shift flagged in only %.1f%% of trials", 100*rate)
	}

	base := normalSample(rng, n, 1000, 30)
	v, c := compareMetric("false_cut", base, normalSample(rng, n, 1200, 30), Tolerance{})
	if v != metricMoved || !(c.P < 0.001) || math.IsNaN(c.BaselineLo) || !(c.Run > c.Baseline) {
		t.Errorf("shift by 200: verdict %v, change %+v", v, c)
	}
	// The same shift within a 25% relative tolerance is tolerated.
	if v, _ := compareMetric("false_cut", base, normalSample(rng, n, 1200, 30), Tolerance{Rel: 0.25}); v != metricTolerated {
		t.Errorf("shift by 20%% with --tol-rel 25%%: verdict %v, want tolerated", v)
	}
	// The same values in another order are the same sample.
	rev := append([]float64{}, base...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if v, _ := compareMetric("false_cut", base, rev, Tolerance{}); v != metricSame {
		t.Errorf("reordered replicates: verdict %v, want same", v)
	}
}

// Three replicates a side can never reach p < 0.05: the move is not
// flagged, and the check warns.
func TestFewReplicatesWarn(t *testing.T) {
	mk := func(key string, id int64, base, run []float64) *checkPoint {
		return newCheckPoint(key, id, [][]float64{base}, [][]float64{run})
	}
	res := &Result{Metrics: []string{"false_cut"}}
	res.compare([]*checkPoint{
		mk("a", 0, []float64{10, 11, 12}, []float64{50, 51, 52}),
		mk("b", 1, []float64{10, 11, 12}, []float64{10, 11, 12}),
	})
	if res.Points != 0 || res.Tolerated != 1 || res.Identical != 1 || res.Failed() {
		t.Errorf("3 vs 3 replicates: %d changed, %d tolerated, %d identical, failed %v; want 0, 1, 1, false", res.Points, res.Tolerated, res.Identical, res.Failed())
	}
	joined := strings.Join(res.Warnings, "\n")
	if !strings.Contains(joined, "too few replicates") || !strings.Contains(joined, "at least 4") || !strings.Contains(joined, "confidence interval") {
		t.Errorf("warnings %q lack the replicate advice", joined)
	}
	// Four a side can.
	res = &Result{Metrics: []string{"false_cut"}}
	res.compare([]*checkPoint{mk("a", 0, []float64{10, 11, 12, 13}, []float64{50, 51, 52, 53})})
	if res.Points != 1 || !res.Failed() || strings.Contains(strings.Join(res.Warnings, "\n"), "too few replicates") {
		t.Errorf("4 vs 4 separated: %d changed, warnings %q", res.Points, res.Warnings)
	}
}

// Many replicated comparisons: a re-drawn run of the same distributions
// passes (Benjamini–Hochberg keeps the per-test alpha from flagging about 5%
// of them), while the few points that really moved are flagged.
func TestCheckMultipleComparisons(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	const points, n = 300, 10
	build := func(shifted map[int]bool) []*checkPoint {
		var out []*checkPoint
		for i := range points {
			var base, run [][]float64
			for m := range 3 {
				mean := 1000 + 100*float64(m)
				shift := 0.0
				if shifted[i] {
					shift = 150
				}
				base = append(base, normalSample(rng, n, mean, 30))
				run = append(run, normalSample(rng, n, mean+shift, 30))
			}
			out = append(out, newCheckPoint(fmt.Sprintf("p%03d", i), int64(i), base, run))
		}
		return out
	}
	res := &Result{Metrics: []string{"caught", "missed", "false_cut"}}
	order := build(nil)
	res.compare(order)
	raw := 0
	for _, p := range order {
		for m := range 3 {
			if MannWhitneyU(sample(p.base, 3, m), sample(p.run, 3, m)).P < DefaultAlpha {
				raw++
			}
		}
	}
	t.Logf("same distributions: %d of %d comparisons have p < 0.05 on their own; flagged %d", raw, 3*points, len(res.Changes))
	if res.Failed() || raw == 0 {
		t.Errorf("same distributions: failed %v with %d changes (raw p < alpha: %d)", res.Failed(), len(res.Changes), raw)
	}
	shifted := map[int]bool{7: true, 123: true, 250: true}
	res = &Result{Metrics: []string{"caught", "missed", "false_cut"}}
	res.compare(build(shifted))
	got := map[string]bool{}
	for _, c := range res.Changes {
		got[c.Point] = true
	}
	if res.Points != 3 || !got["p007"] || !got["p123"] || !got["p250"] {
		t.Errorf("3 shifted points: flagged %d points %v", res.Points, got)
	}
}
