package report

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/recommend"
)

// recommend and the report choose by one rule: on a run whose settings tie
// on cut and missed (nginx queueing against nodelay, every rate at burst
// 0), `recommend --max-missed T` picks the setting the report's pick for
// target T shows, overall and per algorithm, and that is the rule's: the
// nodelay twin; at burst 0 the simpler setting inside its swept ranges.
func TestRecommendAndReportChooseAlike(t *testing.T) {
	yaml, err := os.ReadFile("testdata/nginx-ties.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := runSpec(t, string(yaml))
	want := map[float64]string{
		6:   "nginx rate=10 burst=0",
		27:  "nginx rate=5 burst=50 delay=1000000",
		35:  "nginx rate=5 burst=500 delay=1000000",
		50:  "nginx rate=5 burst=500 delay=1000000",
		100: "nginx rate=5 burst=500 delay=1000000",
	}
	var targets []float64
	for v := range want {
		targets = append(targets, v)
	}
	r, err := Load(context.Background(), dir, Options{Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, err := recommend.ReadRun(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	canon := func(label string) string {
		p, err := model.ParseLabel(label)
		if err != nil {
			t.Fatal(err)
		}
		return p.Canonical()
	}
	d, err := r.exploreData(ctx, exploreMaxSettings)
	if err != nil {
		t.Fatal(err)
	}
	summary := strings.Join(r.PickSummary(), "\n")
	for target, label := range want {
		b, ok := r.Frontier.Best(target)
		if !ok {
			t.Fatalf("target %g%%: the report picks nothing", target)
		}
		if got := b.Policy.Canonical(); got != canon(label) {
			t.Errorf("target %g%%: the report picks %s, the rule %s", target, got, label)
		}
		if !strings.Contains(summary, "nginx "+paramsCell(b.Policy)+", which cuts") {
			t.Errorf("target %g%%: the pick summary does not name %s:\n%s", target, paramsCell(b.Policy), summary)
		}
		o := recommend.Options{MaxMissed: &recommend.Bound{Value: target, Pct: true}}
		streamed, err := recommend.RecommendDirs(ctx, []string{dir}, o)
		if err != nil {
			t.Fatal(err)
		}
		inMemory, err := recommend.Recommend([]*recommend.Run{run}, o)
		if err != nil {
			t.Fatal(err)
		}
		// explore.js's choose: the objective, the other metric, the tie rank.
		page := -1
		for i := range d.ID {
			if d.MP[i] > target {
				continue
			}
			if page < 0 || d.LC[i] < d.LC[page]-1e-9 || math.Abs(d.LC[i]-d.LC[page]) <= 1e-9 &&
				(d.MP[i] < d.MP[page]-1e-9 || math.Abs(d.MP[i]-d.MP[page]) <= 1e-9 && d.TR[i] < d.TR[page]) {
				page = i
			}
		}
		if got := canon(d.Algs[d.Alg[page]] + " " + d.Label[page]); got != canon(label) {
			t.Errorf("target %g%%: explore.html's data make the page pick %s, the rule %s", target, got, label)
		}
		for name, res := range map[string]*recommend.Result{"recommend": streamed, "recommend (in memory)": inMemory} {
			if res.Overall == nil {
				t.Fatalf("target %g%%: %s finds nothing feasible", target, name)
			}
			if got := canon(res.Overall.Label); got != canon(label) {
				t.Errorf("target %g%%: %s picks %s, the report %s", target, name, got, label)
			}
			for _, c := range res.ByAlgorithm {
				for _, a := range r.Algos {
					if a.Algorithm.String() != c.Algorithm {
						continue
					}
					ab, _ := a.Frontier.Best(target)
					if got := canon(c.Label); got != ab.Policy.Canonical() {
						t.Errorf("target %g%%: %s's best %s is %s, the report's %s", target, name, c.Algorithm, got, ab.Policy.Canonical())
					}
				}
			}
		}
	}
	// Nothing meets these bounds: the nearest miss (the least summed
	// violation) ties too, and goes the same way.
	o := recommend.Options{MaxFalseCut: &recommend.Bound{Value: 0, Pct: true}, MaxMissed: &recommend.Bound{Value: 1, Pct: true}}
	streamed, err := recommend.RecommendDirs(ctx, []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	inMemory, err := recommend.Recommend([]*recommend.Run{run}, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range []*recommend.Result{streamed, inMemory} {
		if res.Overall != nil || res.NearestMiss == nil || canon(res.NearestMiss.Label) != canon("nginx rate=5 burst=500 delay=1000000") {
			t.Errorf("nearest miss %+v, want the nodelay twin nginx rate=5 burst=500 delay=1000000", res.NearestMiss)
		}
	}
}
