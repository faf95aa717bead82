package check

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestToleranceAllows(t *testing.T) {
	test := func(tol Tolerance, base, d float64, want bool) {
		t.Helper()
		if got := tol.Allows(base, d); got != want {
			t.Errorf("%+v.Allows(%v, %v) = %v, want %v", tol, base, d, got, want)
		}
	}
	test(Tolerance{}, 100, 0, true)
	test(Tolerance{}, 100, 1, false)
	test(Tolerance{Abs: 5}, 100, -5, true)
	test(Tolerance{Abs: 5}, 100, 5.5, false)
	test(Tolerance{Rel: 0.01}, 1000, 10, true)
	test(Tolerance{Rel: 0.01}, 1000, -10.5, false)
	test(Tolerance{Rel: 0.5}, 0, 1, false) // nothing is relative to zero
	test(Tolerance{Abs: 2, Rel: 0.01}, 1000, 9, true)
	test(Tolerance{Abs: 1e9}, 0, math.NaN(), false)
}

// checkFixture compares three deterministic points: one identical, one
// moved by 1 on false_cut, one moved by 140; and one baseline point missing.
func checkFixture(opts Options) *Result {
	mk := func(key string, id int64, base, run []float64) *checkPoint {
		var b, r [][]float64
		for i := range base {
			b = append(b, []float64{base[i]})
			if run != nil {
				r = append(r, []float64{run[i]})
			}
		}
		return newCheckPoint(key, id, b, r)
	}
	res := &Result{Metrics: []string{"false_cut", "legit_cut_pct"}, Options: opts}
	res.compare([]*checkPoint{
		mk("fixed_window window_s=60 limit=600", 0, []float64{405, 9.4}, []float64{405, 9.4}),
		mk("sliding_window window_s=60 limit=600", 1, []float64{880, 20.5}, []float64{1020, 23.7}),
		mk("sliding_window window_s=60 limit=800", 2, []float64{480, 11.2}, []float64{481, 11.2}),
		mk("token_bucket rate=10 capacity=900", 3, []float64{0, 0}, nil),
	})
	return res
}

func TestCheckCompareDeterministic(t *testing.T) {
	res := checkFixture(Options{})
	if res.Compared != 3 || res.Identical != 1 || res.Points != 2 || res.Removed != 1 || !res.Failed() {
		t.Fatalf("exact: compared %d identical %d changed %d removed %d; want 3 1 2 1", res.Compared, res.Identical, res.Points, res.Removed)
	}
	// Worst first: limit=600's false_cut (+15.9%), then its pct (+15.6%), then limit=800's false_cut (+0.2%).
	var got []string
	for _, c := range res.Changes {
		got = append(got, c.Point+" "+c.Metric)
	}
	want := []string{
		"sliding_window window_s=60 limit=600 false_cut",
		"sliding_window window_s=60 limit=600 legit_cut_pct",
		"sliding_window window_s=60 limit=800 false_cut",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if res.RemovedPoints[0] != "token_bucket rate=10 capacity=900" {
		t.Errorf("removed %v", res.RemovedPoints)
	}

	// Per-metric tolerances: 1 request of false_cut is fine, 140 is not.
	res = checkFixture(Options{Tolerances: map[string]Tolerance{"false_cut": {Abs: 1}}, AllowRemoved: true})
	if res.Points != 1 || res.Tolerated != 1 || len(res.Changes) != 2 || !res.Failed() {
		t.Errorf("--tol-abs false_cut=1: changed %d tolerated %d changes %d", res.Points, res.Tolerated, len(res.Changes))
	}
	// A 20% relative tolerance on every metric covers all moves; removed is allowed.
	res = checkFixture(Options{Default: Tolerance{Rel: 0.2}, AllowRemoved: true})
	if res.Points != 0 || res.Tolerated != 2 || res.Failed() {
		t.Errorf("--tol-rel 20%%: changed %d tolerated %d failed %v", res.Points, res.Tolerated, res.Failed())
	}
}

func TestWrite(t *testing.T) {
	res := checkFixture(Options{})
	res.Baseline = RunInfo{Dir: "base", Spec: "lesson", Points: 4, Rows: 4, ScenarioSHA256: "ff3c2253533bdeadbeef"}
	res.Run = RunInfo{Dir: "run", Spec: "lesson", Points: 3, Rows: 3, ScenarioSHA256: "ff3c2253533bdeadbeef"}
	res.Added, res.AddedPoints = 2, []string{"token_bucket rate=20 capacity=900", "token_bucket rate=30 capacity=900"}

	var text bytes.Buffer
	if err := Write(&text, res, "text", 2); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"baseline  base (spec lesson, 4 points, 4 rows, scenario ff3c2253533b)",
		"sliding_window window_s=60 limit=600  false_cut           880  1020  +140  +15.9%",
		"… and 1 more rows (--max-rows 2)",
		"token_bucket rate=30 capacity=900",
		"Removed: 1 baseline points missing from the run",
		"check FAIL: 3 points compared: 1 identical, 2 changed; 1 removed, 2 added (allowed",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}

	var md bytes.Buffer
	if err := Write(&md, res, "markdown", 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "### ratesweep check: FAIL") ||
		!strings.Contains(md.String(), "| sliding_window window_s=60 limit=800 | false_cut | 480 | 481 | +1 | +0.2% |") {
		t.Errorf("markdown output:\n%s", md.String())
	}

	var js bytes.Buffer
	if err := Write(&js, res, "json", 2); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Failed         bool
		Changes        []map[string]any
		ChangesOmitted int `json:"changes_omitted"`
		Removed        int
		RemovedPoints  []string `json:"removed_points"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatalf("json: %v\n%s", err, js.String())
	}
	if !got.Failed || len(got.Changes) != 2 || got.ChangesOmitted != 1 || got.Changes[0]["delta"] != 140.0 ||
		got.Changes[0]["point"] != "sliding_window window_s=60 limit=600" || got.Removed != 1 {
		t.Errorf("json: %+v", got)
	}
	if err := Write(&js, res, "yaml", 0); err == nil {
		t.Error("format yaml: no error")
	}
}

// newCheckPoint builds a point from per-metric samples (run nil: the run
// lacks the point).
func newCheckPoint(key string, id int64, base, run [][]float64) *checkPoint {
	p := &checkPoint{key: key, baseID: id, runID: id}
	flat := func(per [][]float64) []float64 {
		var out []float64
		for r := range per[0] {
			for m := range per {
				out = append(out, per[m][r])
			}
		}
		return out
	}
	p.base = flat(base)
	if run == nil {
		p.runID = -1
	} else {
		p.run = flat(run)
	}
	return p
}

// NaN equals NaN: single values and replicated samples (any order).
func TestCompareMetricNaN(t *testing.T) {
	nan := math.NaN()
	test := func(base, run []float64, want metricVerdict) {
		t.Helper()
		if v, _ := compareMetric("p99_delay_s", base, run, Tolerance{}); v != want {
			t.Errorf("%v vs %v: verdict %d, want %d", base, run, v, want)
		}
	}
	test([]float64{nan}, []float64{nan}, metricSame)
	test([]float64{nan}, []float64{1}, metricChanged)
	test([]float64{1}, []float64{nan}, metricChanged)
	test([]float64{nan, nan, nan, nan}, []float64{nan, nan, nan, nan}, metricSame)
	test([]float64{1, nan, 2, 3}, []float64{nan, 3, 2, 1}, metricSame)
}

// The listings keep the MaxRows worst changes; the counts stay exact.
func TestCheckMaxRowsKeepsWorst(t *testing.T) {
	res := &Result{Metrics: []string{"false_cut"}, Options: Options{MaxRows: 2}}
	var order []*checkPoint
	for i := range 500 {
		order = append(order, newCheckPoint("p", int64(i), [][]float64{{100}}, [][]float64{{100 + float64(i%97)}}))
	}
	res.compare(order)
	if res.ChangedValues != 500-6 || res.Points != 494 || len(res.Changes) != 2 {
		t.Fatalf("changed values %d points %d kept %d; want 494 494 2", res.ChangedValues, res.Points, len(res.Changes))
	}
	if res.Changes[0].Run != 196 || res.Changes[0].BaselineID != 96 || res.Changes[1].BaselineID != 193 {
		t.Errorf("kept %+v, want the +96 moves of points 96 and 193", res.Changes)
	}
}
