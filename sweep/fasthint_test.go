package sweep

import (
	"path/filepath"
	"reflect"
	"testing"
)

// The closed forms of a fluid scenario, run many points at a time with
// Grid.Policies' hints (FastRun.Changed: only the limit or the capacity
// changed, so the whole policy is not compared), write the files the
// per-point simulation writes, byte for byte, across chunk and part
// boundaries and axis wraps.
func TestFastColsWithHintsEqualPerPoint(t *testing.T) {
	s, err := ParseSpec([]byte(`name: fluid
scenario:
  name: fluid
  duration_s: 600
  clients:
    - {name: a, class: legit, segments: [[0, 600, 3]]}
    - {name: c, class: legit, segments: [[0, 100, 9], [300, 320, 40]]}
    - {name: b, class: abusive, stage: none, segments: [[100, 400, 25]]}
sweep:
  - algorithm: fixed_window
    window_s: [10, 60]
    phase_s: [0, 7]
    limit: {from: 0, to: 1500, step: 1}
  - algorithm: sliding_window
    window_s: {from: 5, to: 60, step: 5}
    limit: {from: 0, to: 700, step: 1}
  - algorithm: token_bucket
    rate: [0.5, 3, 20]
    capacity: {from: 1, to: 2000, step: 1}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !batchesLikePoints(t, s) {
		t.Error("the closed forms with hints differ from the per-point simulation")
	}
}

// batchesLikePoints runs s point by point (noBatch) and with the batched
// forms and reports whether the two runs' files are the same.
func batchesLikePoints(t *testing.T, s *Spec) bool {
	t.Helper()
	var hashes [2]map[string]string
	for i, off := range []bool{true, false} {
		noBatch = off
		dir := t.TempDir()
		mustRun(t, s, Options{OutDir: dir, Workers: 2})
		hashes[i] = fileHashes(readManifest(t, filepath.Join(dir, "manifest.json")))
	}
	noBatch = false
	return reflect.DeepEqual(hashes[0], hashes[1])
}
