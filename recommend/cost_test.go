package recommend

import (
	"context"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// --max-false-cut-cost bounds the choice by the cost units of legitimate
// requests cut: the chosen policy's, summed independently from the
// clients rows (requests cut × the client's cost), is within the bound,
// and a bound nothing meets names the nearest miss in cost units.
func TestFalseCutCostConstraint(t *testing.T) {
	spec, err := sweep.ParseSpec([]byte(`name: cost
scenario:
  name: s
  duration_s: 300
  arrivals: uniform
  clients:
    - {name: app, class: legit, segments: [[0, 300, 2]]}
    - {name: reports, class: legit, segments: [[0, 300, 1]], cost: 6}
    - {name: scraper, class: abusive, stage: none, segments: [[0, 300, 8]]}
sweep:
  - {algorithm: token_bucket, rate: [4, 5], capacity: {from: 6, to: 40, step: 2}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	clients, err := sweep.ReadClients(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	cost := map[string]int64{"app": 1, "reports": 6, "scraper": 1}
	points, err := sweep.ReadPoints(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	label := map[int64]string{}
	for _, p := range points {
		label[p.PointID] = p.Key()
	}
	cutCost := map[string]int64{}
	for _, c := range clients {
		if c.Class == "legit" {
			cutCost[label[c.PointID]] += c.Cut * cost[c.Client]
		}
	}
	lo, hi := int64(1<<62), int64(0)
	for _, v := range cutCost {
		lo, hi = min(lo, v), max(hi, v)
	}
	if !(lo < hi) || lo == 0 {
		t.Fatalf("false cut cost %d to %d: the test needs policies that differ and all cut", lo, hi)
	}
	bound := Bound{Value: float64(lo+hi) / 2}
	res, err := RecommendDirs(context.Background(), []string{dir}, Options{MaxFalseCutCost: &bound})
	if err != nil {
		t.Fatal(err)
	}
	if res.Overall == nil || res.Feasible == 0 || res.Feasible == res.Policies {
		t.Fatalf("bound %v: %d of %d feasible, choice %v", bound, res.Feasible, res.Policies, res.Overall)
	}
	if got := cutCost[res.Overall.Label]; float64(got) > bound.Value {
		t.Errorf("chose %s, cutting %d cost units, above the bound %v", res.Overall.Label, got, bound.Value)
	}
	feasible := 0
	for _, v := range cutCost {
		if float64(v) <= bound.Value {
			feasible++
		}
	}
	if feasible != res.Feasible {
		t.Errorf("%d policies feasible, the clients rows say %d", res.Feasible, feasible)
	}
	// Nothing cuts less than lo cost units: the nearest miss says by how much.
	tight := Bound{Value: float64(lo) / 2}
	res, err = RecommendDirs(context.Background(), []string{dir}, Options{MaxFalseCutCost: &tight})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(res.Notes, "\n")
	if res.Overall != nil || res.NearestMiss == nil || !strings.Contains(notes, "false cut cost <= "+num(tight.Value)+" cost units (at "+num(float64(lo))+" cost units)") {
		t.Errorf("choice %v, notes:\n%s", res.Overall, notes)
	}
}
