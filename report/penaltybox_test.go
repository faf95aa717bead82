package report

import (
	"context"
	"math"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// A sweep over block_s draws a heat map over it (the generic maps over an
// entry's two most-swept axes), and its cells are the points' metrics.
func TestHeatOverBlockS(t *testing.T) {
	dir := runSpec(t, `name: box
scenario:
  name: a reader and a flood
  duration_s: 600
  clients:
    - name: bursty reader
      class: legit
      segments: [[0, 100, 1], [100, 103, 40], [103, 600, 1]]
    - name: flood
      class: abusive
      stage: code
      segments: [[200, 400, 30]]
sweep:
  - algorithm: token_bucket
    rate: [2]
    capacity: [10, 30, 60]
    block_s: [0, 10, 30, 60, 300]
`)
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var h *Heat
	for _, x := range r.Heats {
		if x.Algorithm == model.TokenBucket && (x.XParam == "block_s" || x.YParam == "block_s") {
			h = x
		}
	}
	if h == nil {
		t.Fatalf("no heat map over block_s among %d", len(r.Heats))
	}
	t.Logf("heat %s × %s", h.XParam, h.YParam)
	// Each cell is its policy's simulation (one value per bin here).
	w, err := model.NewWorkload(r.Spec.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	sim := w.NewSimulator()
	if h.NX != len(h.XValues) || h.NY != len(h.YValues) {
		t.Fatalf("binned: %d×%d bins for %d×%d values", h.NX, h.NY, len(h.XValues), len(h.YValues))
	}
	for x, xv := range h.XValues {
		for y, yv := range h.YValues {
			p := model.Policy{Algorithm: model.TokenBucket, Rate: 2}
			p.Set(h.XParam, xv)
			p.Set(h.YParam, yv)
			var out model.Outcome
			sim.Run(p, &out)
			legit, missed, ok := h.Cell(x, y)
			if !ok || math.Abs(legit-out.LegitCutPct) > 1e-9 || math.Abs(missed-out.MissedPct) > 1e-9 {
				t.Errorf("%v: cell %v%% / %v%%, simulated %v%% / %v%%", p, legit, missed, out.LegitCutPct, out.MissedPct)
			}
		}
	}
	if _, err := r.Write(t.TempDir()); err != nil {
		t.Fatalf("write: %v", err)
	}
}
