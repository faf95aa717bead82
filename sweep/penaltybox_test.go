package sweep

import (
	"context"
	"math"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// block_s through a sweep: a grid axis like any parameter, in the label
// only when above 0, and the penalty box's columns (legit_blocked_s and
// blocks in points, blocked_s in clients) as the model's Run gives them;
// 0 where there is no block.
func TestSweepPenaltyBox(t *testing.T) {
	const spec = `name: box
scenario:
  name: a reader and a flood
  duration_s: 300
  arrivals: {process: poisson}
  clients:
    - name: steady reader
      class: legit
      segments: [[0, 300, 2]]
    - name: bursty reader
      class: legit
      segments: [[0, 20, 1], [20, 25, 12], [25, 300, 1]]
    - name: flood
      class: abusive
      stage: code
      segments: [[30, 90, 20]]
sweep:
  - algorithm: token_bucket
    rate: [3]
    capacity: [20, 40]
    block_s: [0, 60, 600]
`
	ctx := context.Background()
	dir := t.TempDir()
	sp, err := ReadSpec([]byte(spec), "box.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, sp, Options{OutDir: dir, Workers: 1, Shard: Shard{Count: 1}, MaxPoints: DefaultMaxPoints}); err != nil {
		t.Fatalf("run: %v", err)
	}
	rows, err := ReadPoints(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := ReadClients(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || len(clients) != 18 {
		t.Fatalf("%d points rows, %d clients rows, want 6 and 18", len(rows), len(clients))
	}
	w, err := model.NewWorkload(sp.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	sim := w.NewSimulator()
	sim.SetReplicate(sp.Seed, 0)
	labels := map[string]bool{}
	var blocked float64
	for i, r := range rows {
		p, err := model.ParseLabel(r.Key())
		if err != nil {
			t.Fatalf("policy %q: %v", r.Key(), err)
		}
		labels[r.Key()] = true
		var out model.Outcome
		sim.Run(p, &out)
		if r.Blocks != out.Blocks || r.LegitBlockedS != out.LegitBlockedS || r.FalseCut != out.FalseCut {
			t.Errorf("%s: blocks %d legit_blocked_s %v false_cut %d, model %d %v %d", r.Key(), r.Blocks, r.LegitBlockedS, r.FalseCut, out.Blocks, out.LegitBlockedS, out.FalseCut)
		}
		if p.BlockS == 0 && (r.Blocks != 0 || r.LegitBlockedS != 0) {
			t.Errorf("%s: blocks without block_s", r.Key())
		}
		if p.BlockS > 0 && r.Blocks == 0 {
			t.Errorf("%s: no block on a flood", r.Key())
		}
		for c := range 3 {
			cr := clients[i*3+c]
			if want := float64(out.Clients[c].BlockedNs) / 1e9; cr.PointID != r.PointID || math.Abs(cr.BlockedS-want) > 1e-9 {
				t.Errorf("%s client %s: blocked_s %v, model %v", r.Key(), cr.Client, cr.BlockedS, want)
			}
		}
		blocked += r.LegitBlockedS
	}
	for _, k := range []string{"token_bucket rate=3 capacity=20", "token_bucket rate=3 capacity=20 block_s=60", "token_bucket rate=3 capacity=40 block_s=600"} {
		if !labels[k] {
			t.Errorf("no policy %q in %v", k, labels)
		}
	}
	if blocked == 0 {
		t.Error("no legitimate client was ever blocked: the scenario does not test the columns")
	}
}
