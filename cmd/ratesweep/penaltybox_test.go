package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// penaltyBoxSpec sweeps block_s over a steady and a bursty reader and a
// flood: the longer the block, the more of the bursty reader's time is
// lost once its burst trips the limiter.
const penaltyBoxSpec = `name: box
scenario:
  name: readers and a flood
  duration_s: 600
  clients:
    - name: steady reader
      class: legit
      segments: [[0, 600, 1]]
    - name: bursty reader
      class: legit
      segments: [[0, 100, 1], [100, 103, 40], [103, 600, 1]]
    - name: flood
      class: abusive
      stage: code
      segments: [[200, 400, 30]]
sweep:
  - algorithm: token_bucket
    rate: [2, 4]
    capacity: [10, 30, 60]
    block_s: [0, 30, 300]
`

// recommend --max-legit-blocked-s keeps the choice's legitimate time
// blocked within the bound, read back from the points file; check compares
// a run with block_s against itself.
func TestRecommendMaxLegitBlocked(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "box.yaml")
	if err := os.WriteFile(spec, []byte(penaltyBoxSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if code, _, errOut := runCLI(t, "run", spec, "--out", run, "--quiet"); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	rows, err := sweep.ReadPoints(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	blocked := map[string]float64{}
	for _, r := range rows {
		blocked[r.Key()] = r.LegitBlockedS
	}
	choice := func(args ...string) (string, float64) {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"recommend", run, "--max-false-cut", "10%", "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("recommend %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		var res struct {
			Overall struct {
				Label string `json:"policy"`
			} `json:"overall"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		b, ok := blocked[res.Overall.Label]
		if !ok {
			t.Fatalf("choice %q is not a point of the run", res.Overall.Label)
		}
		return res.Overall.Label, b
	}
	free, freeBlocked := choice()
	if freeBlocked == 0 {
		t.Fatalf("unbounded choice %s blocks no legitimate client: the test does not test the bound", free)
	}
	bound := freeBlocked / 2
	got, gotBlocked := choice("--max-legit-blocked-s", strconv.FormatFloat(bound, 'f', -1, 64))
	if gotBlocked > bound {
		t.Errorf("with --max-legit-blocked-s %v: chose %s, legit_blocked_s %v", bound, got, gotBlocked)
	}
	t.Logf("unbounded: %s (%v s blocked); bounded by %v s: %s (%v s)", free, freeBlocked, bound, got, gotBlocked)
	code, out, errOut := runCLI(t, "recommend", run, "--max-false-cut", "10%", "--max-legit-blocked-s", "0")
	if code != 0 || !strings.Contains(out, "legitimate time blocked <= 0 s") {
		t.Errorf("--max-legit-blocked-s 0: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, bad := range []string{"-1", "soon", "NaN"} {
		if code, _, errOut := runCLI(t, "recommend", run, "--max-false-cut", "10%", "--max-legit-blocked-s", bad); code != 2 || !strings.Contains(errOut, "--max-legit-blocked-s") {
			t.Errorf("--max-legit-blocked-s %s: exit %d, %q", bad, code, errOut)
		}
	}
	if code, out, errOut := runCLI(t, "check", "--baseline", run, run); code != 0 {
		t.Errorf("check: exit %d\n%s\n%s", code, out, errOut)
	}
}
