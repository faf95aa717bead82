package recommend

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestSpread(t *testing.T) {
	s := spread([]float64{3, 1, 2})
	if s.Min != 1 || s.Median != 2 || s.Max != 3 || s.Mean.Mean != 2 || s.Mean.N != 3 {
		t.Errorf("%+v", s)
	}
	// mean 2.5, sd 1.291, t(3) 3.182: half width 2.054
	if s := spread([]float64{4, 1, 3, 2}); s.Median != 2.5 || math.Abs(s.Mean.Hi-2.5-2.054) > 0.001 {
		t.Errorf("%+v", s)
	}
}

// Several runs: the choice's metrics in each run, summarised across them.
func TestAcrossRuns(t *testing.T) {
	a, b, c := grid("a", 0), grid("b", 1), grid("c", 0.5)
	res, err := Recommend([]*Run{a, b, c}, Options{MaxFalseCut: bound("1.5%")})
	if err != nil {
		t.Fatal(err)
	}
	// limit 400 cuts 1%, 0%, 0.5% in the three runs and misses 50% in all.
	x := res.Overall.Across
	if res.Overall.Label != "sliding_window window_s=60 limit=400" || x == nil ||
		x.LegitCutPct.Min != 0 || x.LegitCutPct.Median != 0.5 || x.LegitCutPct.Max != 1 || x.MissedPct.Max != 50 || x.MissedPct.Mean.Hi != 50 {
		t.Fatalf("%s %+v", res.Overall.Label, x)
	}
	if one, _ := Recommend([]*Run{a}, Options{MaxFalseCut: bound("1.5%")}); one.Overall.Across != nil {
		t.Errorf("one run has a spread across runs")
	}
	var out bytes.Buffer
	Write(&out, res, "text")
	if !strings.Contains(out.String(), "false cut  0.00% / 0.50% / 1.00%; mean 0.50% [0.00, 1.74]") {
		t.Errorf("text:\n%s", out.String())
	}
}

// Golden text of two days (Poisson arrivals, three replicates each, other
// seeds) of the lesson's grid, read from Parquet by the command's path.
func TestGoldenTwoRuns(t *testing.T) {
	a := runDir(t, "embedded:baseline-lesson.yaml", "replicates=3", "scenario.arrivals=poisson", "seed=1")
	b := runDir(t, "embedded:baseline-lesson.yaml", "replicates=3", "scenario.arrivals=poisson", "seed=2")
	res, err := RecommendDirs(context.Background(), []string{a, b}, Options{MaxFalseCut: bound("1%"), MaxClientCut: bound("2%")})
	if err != nil || res.Overall == nil {
		t.Fatalf("%v %+v", err, res)
	}
	var out bytes.Buffer
	if err := Write(&out, res, "text"); err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "two-runs.text"), []byte(strings.NewReplacer(a, "RUN1", b, "RUN2").Replace(out.String())))
}
