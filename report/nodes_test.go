package report

import (
	"context"
	"testing"
)

// A spec that sweeps nodes from 1 (the default, stored as the zero
// Policy's 0) loads: the report compares parameters as the sweep wrote
// them.
func TestLoadNodesSweep(t *testing.T) {
	dir := runSpec(t, `name: nodes
scenario:
  name: two clients
  duration_s: 120
  clients:
    - name: app
      class: legit
      segments: [[0, 120, 5]]
    - name: scraper
      class: abusive
      stage: code
      segments: [[30, 90, 20]]
sweep:
  - algorithm: sliding_window
    window_s: 60
    limit: [300, 600]
    nodes: [1, 2, 4]
    state: local
  - algorithm: fixed_window
    window_s: 60
    limit: 600
    nodes: [1, 2]
    state: shared
    sync_ms: [0, 1000]
`)
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Points != 10 {
		t.Errorf("%d points, want 10", r.Points)
	}
}
