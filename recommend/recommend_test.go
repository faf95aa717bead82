package recommend

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/internal/choice"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func bound(s string) *Bound {
	b, err := ParseBound(s)
	if err != nil {
		panic(err)
	}
	return &b
}

// mk is a measured policy: 1000 legitimate and 1000 abusive requests
// offered, legitimate cut lc %, abusive missed mi %, the worst client cut
// wc % of its requests.
func mk(lc, mi, wc float64) *Measure {
	one := func(v float64) Interval { return Interval{v, v, v, 1} }
	return &Measure{OfferedLegit: 1000, OfferedAbusive: 1000,
		FalseCut: one(lc * 10), Missed: one(mi * 10), Caught: one(1000 - mi*10),
		LegitCutPct: one(lc), MissedPct: one(mi), CaughtPct: one(100 - mi),
		WorstClientPct: wc, WorstClientCut: wc}
}

func run(dir string, ms map[string]*Measure, order ...string) *Run {
	return &Run{Dir: dir, Labels: order, Measures: ms}
}

// A sliding window swept over limit 100…500: more limit, fewer cuts, more missed.
func grid(dir string, shift float64) *Run {
	ms := map[string]*Measure{}
	var order []string
	for i, lim := range []string{"100", "200", "300", "400", "500"} {
		l := "sliding_window window_s=60 limit=" + lim
		ms[l] = mk(math.Max(0, 4-float64(i)-shift), 20+10*float64(i), 0)
		order = append(order, l)
	}
	return run(dir, ms, order...)
}

func TestConstraintsAndMargins(t *testing.T) {
	res, err := Recommend([]*Run{grid("a", 0)}, Options{MaxFalseCut: bound("1.5%")})
	if err != nil {
		t.Fatal(err)
	}
	// limit 300 cuts 2%, 400 cuts 1%: the fewest missed within 1.5% is 400.
	if res.Overall == nil || res.Overall.Label != "sliding_window window_s=60 limit=400" {
		t.Fatalf("overall %+v", res.Overall)
	}
	ck := res.Overall.Runs[0].Checks[0]
	if ck.Margin != 0.5 || ck.Unit != "pp" || res.Feasible != 2 {
		t.Errorf("margin %+v, feasible %d", ck, res.Feasible)
	}
	// A bound in requests: 20 legitimate requests = 2%.
	res, _ = Recommend([]*Run{grid("a", 0)}, Options{MaxFalseCut: bound("20")})
	if res.Overall.Label != "sliding_window window_s=60 limit=300" || res.Overall.Runs[0].Checks[0].Unit != "requests" {
		t.Errorf("count bound: %s %+v", res.Overall.Label, res.Overall.Runs[0].Checks)
	}
	// With a bound on missed, the objective is the fewest cut.
	res, _ = Recommend([]*Run{grid("a", 0)}, Options{MaxFalseCut: bound("5%"), MaxMissed: bound("40%")})
	if res.Objective != "legit_cut_pct" || res.Overall.Label != "sliding_window window_s=60 limit=300" {
		t.Errorf("max missed: %s %s", res.Objective, res.Overall.Label)
	}
	res, _ = Recommend([]*Run{grid("a", 0)}, Options{MaxFalseCut: bound("5%"), MinCaught: bound("70%")})
	if res.Overall.Label != "sliding_window window_s=60 limit=200" {
		t.Errorf("min caught: %s", res.Overall.Label)
	}
}

func TestTies(t *testing.T) {
	// Equal objective: the fewer legitimate cut wins; equal in both: the
	// earlier point of the first run.
	ms := map[string]*Measure{
		"fixed_window window_s=60 limit=10":   mk(1, 30, 0),
		"sliding_window window_s=60 limit=10": mk(0.5, 30, 0),
		"sliding_log window_s=60 limit=10":    mk(0.5, 30, 0),
	}
	r := run("a", ms, "fixed_window window_s=60 limit=10", "sliding_window window_s=60 limit=10", "sliding_log window_s=60 limit=10")
	res, _ := Recommend([]*Run{r}, Options{MaxFalseCut: bound("2%")})
	if res.Overall.Label != "sliding_window window_s=60 limit=10" {
		t.Errorf("tie: %s", res.Overall.Label)
	}
	if len(res.ByAlgorithm) != 3 {
		t.Errorf("%d algorithms", len(res.ByAlgorithm))
	}
	// Minimising the cut (missed bounded): among policies that cut nothing,
	// the one missing the least abuse wins, whatever the grid order.
	ms = map[string]*Measure{
		"fixed_window window_s=300 limit=1720": mk(0, 40.76, 0),
		"token_bucket rate=1 capacity=1430":    mk(0, 40.02, 0),
		"sliding_log window_s=60 limit=1250":   mk(0, 48.26, 0),
	}
	r = run("a", ms, "fixed_window window_s=300 limit=1720", "token_bucket rate=1 capacity=1430", "sliding_log window_s=60 limit=1250")
	res, _ = Recommend([]*Run{r}, Options{MaxFalseCut: bound("5%"), MaxMissed: bound("50%")})
	if res.Overall == nil || res.Overall.Label != "token_bucket rate=1 capacity=1430" {
		t.Errorf("tie on zero cut: %+v", res.Overall)
	}
}

func TestNoFeasiblePoint(t *testing.T) {
	res, err := Recommend([]*Run{grid("a", 0)}, Options{MaxFalseCut: bound("1%"), MaxMissed: bound("25%")})
	if err != nil {
		t.Fatal(err)
	}
	// limit 100 misses by 3 pp of false cut; limit 400 by 25 pp of missed.
	if res.Overall != nil || res.NearestMiss == nil || res.NearestMiss.Label != "sliding_window window_s=60 limit=100" {
		t.Fatalf("overall %v, nearest %+v", res.Overall, res.NearestMiss)
	}
	var b bytes.Buffer
	Write(&b, res, "text")
	if !strings.Contains(b.String(), "no policy meets") || !strings.Contains(b.String(), "MISSED") {
		t.Errorf("output:\n%s", b.String())
	}
}

func TestEdgeAndCliff(t *testing.T) {
	res, _ := Recommend([]*Run{grid("a", 0)}, Options{MaxFalseCut: bound("5%")})
	if res.Overall.Label != "sliding_window window_s=60 limit=100" || len(res.Overall.Edges) != 1 ||
		!strings.Contains(res.Overall.Edges[0], "extend limit below") {
		t.Errorf("edge: %s %v", res.Overall.Label, res.Overall.Edges)
	}
	if res.Overall.Cliff { // one step moves 1 pp and 10 pp of missed… with the default 5 pp
		if n := res.Overall.Neighbors[0]; math.Abs(n.DMissed) != 10 {
			t.Errorf("neighbour %+v", n)
		}
	}
	res, _ = Recommend([]*Run{grid("a", 0)}, Options{MaxFalseCut: bound("1.5%"), CliffPP: 20})
	if res.Overall.Cliff || len(res.Overall.Neighbors) != 2 || len(res.Overall.Edges) != 0 {
		t.Errorf("no cliff at 20 pp: %+v", res.Overall)
	}
	res, _ = Recommend([]*Run{grid("a", 0)}, Options{MaxFalseCut: bound("1.5%"), CliffPP: 9})
	if !res.Overall.Cliff {
		t.Errorf("a 10 pp step is a cliff at 9 pp")
	}
	n := res.Overall.Neighbors
	if n[0].Value != 300 || n[0].Feasible || n[1].Value != 500 || !n[1].Feasible || n[1].DMissed != 10 {
		t.Errorf("neighbours %+v", n)
	}
}

func TestMultiRunWorstCase(t *testing.T) {
	// Run b cuts one point less at every limit: alone it would choose 300.
	a, b := grid("a", 0), grid("b", 1)
	alone, _ := Recommend([]*Run{b}, Options{MaxFalseCut: bound("1.5%")})
	if alone.Overall.Label != "sliding_window window_s=60 limit=300" {
		t.Fatalf("b alone: %s", alone.Overall.Label)
	}
	res, err := Recommend([]*Run{a, b}, Options{MaxFalseCut: bound("1.5%")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Overall.Label != "sliding_window window_s=60 limit=400" {
		t.Fatalf("worst case: %s", res.Overall.Label)
	}
	if r := res.Overall.Runs; r[0].Regret != 0 || r[1].Regret != 10 || r[1].Own != "sliding_window window_s=60 limit=300" {
		t.Errorf("regrets %+v %+v", r[0], r[1])
	}
	// A policy missing from one run is left out, with a note.
	delete(b.Measures, "sliding_window window_s=60 limit=500")
	b.Labels = b.Labels[:4]
	res, _ = Recommend([]*Run{a, b}, Options{MaxFalseCut: bound("1.5%")})
	if res.Policies != 4 || len(res.Notes) != 1 {
		t.Errorf("policies %d, notes %v", res.Policies, res.Notes)
	}
}

func TestPerClientConstraint(t *testing.T) {
	ms := map[string]*Measure{
		"token_bucket rate=1 capacity=10": mk(0.5, 20, 30), // one client loses 30%
		"token_bucket rate=1 capacity=20": mk(0.8, 25, 0.9),
		"token_bucket rate=1 capacity=40": mk(0.1, 40, 0),
	}
	r := run("a", ms, "token_bucket rate=1 capacity=10", "token_bucket rate=1 capacity=20", "token_bucket rate=1 capacity=40")
	res, _ := Recommend([]*Run{r}, Options{MaxFalseCut: bound("1%"), MaxClientCut: bound("1%")})
	if res.Overall.Label != "token_bucket rate=1 capacity=20" {
		t.Errorf("per client: %s", res.Overall.Label)
	}
	res, _ = Recommend([]*Run{r}, Options{MaxFalseCut: bound("1%")})
	if res.Overall.Label != "token_bucket rate=1 capacity=10" {
		t.Errorf("without it: %s", res.Overall.Label)
	}
}

func TestParseBound(t *testing.T) {
	for _, bad := range []string{"", "x", "-1", "101%", "1%%", "NaN"} {
		if _, err := ParseBound(bad); err == nil {
			t.Errorf("ParseBound(%q) accepted", bad)
		}
	}
	if b, _ := ParseBound("2.5%"); !b.Pct || b.Value != 2.5 {
		t.Errorf("%+v", b)
	}
}

func TestInterval(t *testing.T) {
	v := interval([]float64{1, 2, 3, 4})
	// mean 2.5, sd 1.291, t(3) 3.182: half width 2.054
	if v.Mean != 2.5 || math.Abs(v.Hi-v.Mean-2.054) > 0.001 || v.N != 4 {
		t.Errorf("%+v", v)
	}
}

// The real thing: the lesson baseline grid, written to Parquet and read
// back; golden text output, and the choice is the brute-force optimum.
func TestGoldenLessonGrid(t *testing.T) {
	r := runSpec(t, "embedded:baseline-lesson.yaml")
	dir := r.Dir
	o := Options{MaxFalseCut: bound("1%"), MaxClientCut: bound("2%")}
	res, err := Recommend([]*Run{r}, o)
	if err != nil {
		t.Fatal(err)
	}
	best := ""
	for _, l := range r.Labels {
		m := r.Measures[l]
		if m.LegitCutPct.Mean <= 1 && m.WorstClientPct <= 2 && (best == "" || m.MissedPct.Mean < r.Measures[best].MissedPct.Mean ||
			m.MissedPct.Mean == r.Measures[best].MissedPct.Mean && m.LegitCutPct.Mean < r.Measures[best].LegitCutPct.Mean) {
			best = l
		}
	}
	if res.Overall.Label != best {
		t.Errorf("chose %s, brute force %s", res.Overall.Label, best)
	}
	for _, c := range res.Overall.Runs[0].Measure.Clients {
		if c.Why == "" { // a scenario run: the client's traffic against the bound
			t.Errorf("no why for %s", c.Client)
		}
	}
	for _, format := range []string{"text", "markdown"} {
		var b bytes.Buffer
		if err := Write(&b, res, format); err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("testdata", "lesson."+format), []byte(strings.ReplaceAll(b.String(), dir, "RUN")))
	}
	var b bytes.Buffer
	if err := Write(&b, res, "json"); err != nil || !strings.Contains(b.String(), `"policy": "`+best+`"`) {
		t.Errorf("json: %v\n%.400s", err, b.String())
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, got, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./recommend -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./recommend -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// recommend on the default run and the three real-log examples: a choice
// that meets the constraint and is the brute-force optimum, per algorithm too.
func TestDefaultAndRealLogs(t *testing.T) {
	for _, name := range []string{"embedded:default.yaml", "../configs/examples/antlr-org.yaml",
		"../configs/examples/elastic-apache.yaml", "../configs/examples/nasa-ksc.yaml"} {
		r := runSpec(t, name)
		res, err := Recommend([]*Run{r}, Options{MaxFalseCut: bound("1%")})
		if err != nil || res.Overall == nil {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		best := map[string]string{}
		bestKeys := map[string]choice.Keys{}
		for i, l := range r.Labels {
			m, alg := r.Measures[l], algorithmOf(l)
			if m.LegitCutPct.Mean > 1 {
				continue
			}
			p, err := model.ParseLabel(l)
			if err != nil {
				t.Fatal(err)
			}
			k := choice.Keys{Objective: m.MissedPct.Mean, Other: m.LegitCutPct.Mean, MeanDelayS: m.MeanDelayS, P99DelayS: m.P99DelayS,
				Optional: choice.Optional(p), Edges: len(choice.EdgesOfRange(r.spec, m.PointID)), PointID: int64(i)}
			b, ok := bestKeys[alg]
			if !ok || choice.Better(&k, &b) {
				best[alg], bestKeys[alg] = l, k
			}
		}
		if len(res.ByAlgorithm) != len(best) {
			t.Errorf("%s: %d algorithms chosen, %d have a feasible policy", name, len(res.ByAlgorithm), len(best))
		}
		for _, c := range res.ByAlgorithm {
			if c.Label != best[c.Algorithm] {
				t.Errorf("%s: %s: chose %s, brute force %s", name, c.Algorithm, c.Label, best[c.Algorithm])
			}
		}
		var b bytes.Buffer
		if err := Write(&b, res, "text"); err != nil || !strings.Contains(b.String(), "best overall: "+res.Overall.Label) {
			t.Errorf("%s: %v\n%s", name, err, b.String())
		}
		t.Logf("%s: %s", name, strings.SplitN(b.String(), "\n", 2)[0])
	}
}

// runSpec runs the spec at path into a temporary directory and reads it.
func runSpec(t *testing.T, path string) *Run {
	t.Helper()
	spec, err := sweep.LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	r, err := ReadRun(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestClientWhy(t *testing.T) {
	a := []float64{0, 0, 10, 10, 10, 0, 1}
	cases := map[string]string{
		"sliding_window window_s=2 limit=5":         "up to 20 requests in 2 s against 5",
		"fixed_window window_s=3 limit=5":           "up to 20 requests in 3 s against 5", // windows [0,3) [3,6) [6,7)
		"fixed_window window_s=3 limit=5 phase_s=2": "up to 30 requests in 3 s against 5", // [0,2) [2,5) [5,7)
		"token_bucket rate=5 capacity=3":            "a burst of 15 requests above 5/s against a capacity of 3",
		"nginx rate=1 burst=3":                      "a burst of 27 requests above 1/s against a capacity of 4",
	}
	for label, want := range cases {
		p, err := model.ParseLabel(label)
		if err != nil {
			t.Fatal(err)
		}
		if got := clientWhy(p, a); got != want {
			t.Errorf("%s: %q, want %q", label, got, want)
		}
	}
}

// Log runs: false cuts outside the per-key rows are said, not hidden behind
// "none".
func TestOtherKeysCutIsShown(t *testing.T) {
	m := mk(0.5, 30, 0) // 5 legitimate requests cut, no client row
	r := run("logrun", map[string]*Measure{"fixed_window window_s=60 limit=10": m}, "fixed_window window_s=60 limit=10")
	res, err := Recommend([]*Run{r}, Options{MaxFalseCut: bound("1%"), MaxClientCut: bound("2%")})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, res, "text"); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "none of the keys with their own row") || !strings.Contains(out, "and 5 legitimate requests of the other keys") {
		t.Errorf("other keys' cut not shown:\n%s", out)
	}
	m.Clients = []ClientCut{{Client: "10.0.0.1", Offered: 100, Cut: 5, Pct: 5}}
	b.Reset()
	Write(&b, res, "text")
	if out := b.String(); strings.Contains(out, "other keys") || strings.Contains(out, ": none") {
		t.Errorf("every cut is in a client row, yet:\n%s", out)
	}
}

// An edge hint tells to extend a setting's range, but not a property of
// the system (concurrency's service_s): that one is measured, not chosen.
func TestEdgeHintByRole(t *testing.T) {
	limit, _ := model.LookupParam("limit")
	service, _ := model.LookupParam("service_s")
	if got := edgeHint(limit, 600, "largest", "above"); got != "limit=600 is the largest limit swept: extend limit above it" {
		t.Errorf("setting: %q", got)
	}
	got := edgeHint(service, 0.5, "largest", "above")
	if strings.Contains(got, "extend") || !strings.Contains(got, "property of the system, not a setting") {
		t.Errorf("system property: %q", got)
	}
	nodes, _ := model.LookupParam("nodes")
	got = edgeHint(nodes, 8, "largest", "above")
	if strings.Contains(got, "extend") || !strings.Contains(got, "how the limiter is deployed, not a setting") {
		t.Errorf("deployment: %q", got)
	}
}
