package sweep

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A sweep over a real access log: every request is offered to every policy,
// clients rows are the top keys plus "other keys" rows, and the output does
// not depend on the worker count.
func TestSweepOverAccessLog(t *testing.T) {
	s, err := LoadSpec("../configs/examples/antlr-org.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Traffic == nil || s.Scenario != nil {
		t.Fatal("the example spec should replay a log")
	}
	one, two := t.TempDir(), t.TempDir()
	mustRun(t, s, Options{OutDir: one, Workers: 1})
	mustRun(t, s, Options{OutDir: two, Workers: 2})
	if !reflect.DeepEqual(fileHashes(readManifest(t, filepath.Join(one, "manifest.json"))),
		fileHashes(readManifest(t, filepath.Join(two, "manifest.json")))) {
		t.Error("workers 1 and 2 differ on a log")
	}
	rows, err := ReadPoints(context.Background(), one)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(rows)) != s.Points() {
		t.Fatalf("%d rows, want %d", len(rows), s.Points())
	}
	for _, r := range rows {
		if r.OfferedLegit+r.OfferedAbusive != 7502 {
			t.Fatalf("%s: %d requests offered, want the log's 7502", r.Key(), r.OfferedLegit+r.OfferedAbusive)
		}
		if r.Caught+r.Missed != r.OfferedAbusive {
			t.Fatalf("%s: caught + missed != abusive offered", r.Key())
		}
	}
	// Looser limits never cut more.
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		if a.Algorithm == b.Algorithm && a.Algorithm != "token_bucket" && a.Params["limit"] < b.Params["limit"] &&
			a.FalseCut+a.Caught < b.FalseCut+b.Caught {
			t.Errorf("%s cuts less than %s", a.Key(), b.Key())
		}
	}
	clients, err := ReadClients(context.Background(), one)
	if err != nil {
		t.Fatal(err)
	}
	perPoint := map[int64]int{}
	var offered int64
	others := 0
	for _, c := range clients {
		perPoint[c.PointID]++
		if c.PointID == 0 {
			offered += c.Offered
			if strings.HasPrefix(c.Client, "other keys") {
				others++
			}
		}
	}
	if n := perPoint[0]; n > s.Traffic.TopKeys+4 || n <= s.Traffic.TopKeys || others == 0 {
		t.Errorf("point 0 has %d clients rows (%d other-keys rows); want the top %d keys plus other-keys rows", n, others, s.Traffic.TopKeys)
	}
	if offered != 7502 {
		t.Errorf("clients rows of point 0 offer %d requests, want 7502", offered)
	}
	files, _ := PartFiles(one, "points")
	md, _ := FileMetadata(files[0])
	sha, _ := s.WorkloadSHA256()
	if md[MetaScenarioSHA256] != sha || !strings.Contains(md[MetaSpec], "traffic:") {
		t.Errorf("metadata does not identify the log: %v", md[MetaScenarioSHA256])
	}
	again, err := ParseSpec([]byte(md[MetaSpec]), nil)
	if err != nil || again.Traffic == nil || again.Points() != s.Points() {
		t.Errorf("spec in metadata: %v", err)
	}
}

func TestSpecScenarioXorTraffic(t *testing.T) {
	_, err := ParseSpec([]byte("name: x\nscenario: {name: s, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\ntraffic: {log: a.log}\nsweep: [{algorithm: token_bucket, rate: 1, capacity: 5}]\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "either scenario or traffic") {
		t.Errorf("both: %v", err)
	}
	_, err = ParseSpec([]byte("name: x\nsweep: [{algorithm: token_bucket, rate: 1, capacity: 5}]\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "scenario: missing") {
		t.Errorf("neither: %v", err)
	}
}

// The one-pass replays (runBatch: count-based policies at every limit from
// one pass, the others by their Deciders key by key), and both split into
// key ranges run at once, write the same bytes as replaying the log once per
// point, on the example logs: labelled requests (mixed keys), random spread
// with replicates, phases, windows longer than the log's gaps, limit 0.
func TestOnePassReplayEqualsPerPoint(t *testing.T) {
	sweep := `sweep:
  - algorithm: fixed_window
    window_s: [1, 60, 3600]
    phase_s: [0]
    limit: [0, 1, 2, 3, 5, 8, 13, 40, 100, 1000000]
  - algorithm: fixed_window
    window_s: [60]
    phase_s: [7, 59]
    limit: {from: 1, to: 30, step: 1}
  - algorithm: fixed_window_anchored
    window_s: [10, 60]
    limit: {from: 0, to: 50, step: 1}
  - algorithm: sliding_log
    window_s: [1, 10, 60, 600]
    limit: {from: 0, to: 60, step: 3}
  - algorithm: token_bucket
    rate: [0.5, 3]
    capacity: [1, 10]
  - algorithm: sliding_window
    window_s: [10, 60]
    limit: {from: 0, to: 40, step: 4}
  - algorithm: gcra
    rate: [0.2, 2]
    capacity: [1, 5, 20]
  - algorithm: sliding_counter
    window_s: [60]
    limit: [1, 5, 30]
  - algorithm: nginx
    rate: [1]
    burst: [0, 5]
    delay: [0, 5]
  - algorithm: concurrency
    limit: [1, 3]
    service_s: [0.5, 20]
`
	for _, example := range []string{"antlr-org.yaml", "elastic-apache.yaml"} {
		path := filepath.Join("../configs/examples", example)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		head, _, _ := strings.Cut(string(data), "\nsweep:")
		s, err := parseSpec([]byte(head+"\n"+sweep), nil, filepath.Dir(path), nil)
		if err != nil {
			t.Fatal(err)
		}
		// Per point; one pass; each with key ranges at once.
		var hashes [4]map[string]string
		for i, off := range []bool{true, false, true, false} {
			noBatch = off
			if i >= 2 {
				minParallelRequests = 0
			}
			dir := t.TempDir()
			mustRun(t, s, Options{OutDir: dir, Workers: 2})
			hashes[i] = fileHashes(readManifest(t, filepath.Join(dir, "manifest.json")))
		}
		noBatch, minParallelRequests = false, 1<<16
		if !reflect.DeepEqual(hashes[0], hashes[1]) {
			t.Errorf("%s: the one-pass replay differs from the per-point replay", example)
		}
		if !reflect.DeepEqual(hashes[0], hashes[2]) || !reflect.DeepEqual(hashes[0], hashes[3]) {
			t.Errorf("%s: the replay split into key ranges differs from the sequential replay", example)
		}
	}
}

// Event scenarios (Poisson arrivals, replicates): count-based policies run
// every limit in one pass (Simulator.RunLimits), state-dependent ones in
// lockstep batches (Simulator.RunLockstep), and write the same bytes as one
// point at a time.
func TestOnePassEventScenarioEqualsPerPoint(t *testing.T) {
	s, err := ParseSpec([]byte(`name: events
seed: 3
replicates: 3
scenario:
  name: poisson
  duration_s: 600
  arrivals: poisson
  clients:
    - {name: a, class: legit, segments: [[0, 600, 3]]}
    - {name: b, class: abusive, stage: none, segments: [[100, 400, 25]]}
sweep:
  - algorithm: fixed_window
    window_s: [10, 60]
    phase_s: [0, 7]
    limit: {from: 0, to: 60, step: 3}
  - algorithm: sliding_log
    window_s: [60]
    limit: {from: 0, to: 200, step: 10}
  - algorithm: fixed_window_anchored
    window_s: [30]
    limit: [1, 10, 100]
  - algorithm: sliding_window
    window_s: [10, 60]
    limit: {from: 0, to: 200, step: 5}
  - algorithm: token_bucket
    rate: [0.5, 3, 20]
    capacity: {from: 1, to: 120, step: 7}
  - algorithm: gcra
    rate: [3]
    capacity: [1, 5, 50]
  - algorithm: nginx
    rate: [3]
    burst: [0, 10, 100]
    delay: [0, 1000]
  - algorithm: sliding_counter
    window_s: [60]
    limit: [10, 100, 1000]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !batchesLikePoints(t, s) {
		t.Error("the one-pass event simulation differs from the per-point one")
	}
}
