package sweep

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
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
	sp, rows, clients := runSpecText(t, spec, "box.yaml")
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

// block_levels in a spec: decoded with errors that name the level, carried
// by the entry's policies into the label, the spec's YAML (the run's
// identity) and the simulation.
func TestSpecBlockLevels(t *testing.T) {
	const head = `name: box
scenario:
  name: a flood
  duration_s: 600
  clients:
    - name: reader
      class: legit
      segments: [[0, 600, 1]]
    - name: flood
      class: abusive
      stage: code
      segments: [[0, 600, 8]]
sweep:
`
	for _, c := range []struct{ entry, want string }{
		{"  - {algorithm: token_bucket, rate: 2, capacity: 10, block_s: 5, block_levels: [{after: 0, block_s: 60}]}", "sweep[0].block_levels[0].after: must be >= 1"},
		{"  - {algorithm: token_bucket, rate: 2, capacity: 10, block_s: 5, block_levels: [{after: 2, block_s: 60}, {after: 2, block_s: 90}]}", "sweep[0].block_levels[1].after: must be above the previous level's after (2)"},
		{"  - {algorithm: token_bucket, rate: 2, capacity: 10, block_s: 5, block_levels: [{after: 2, block_s: 0}]}", "sweep[0].block_levels[0].block_s: must be > 0"},
		{"  - {algorithm: token_bucket, rate: 2, capacity: 10, block_s: 5, block_levels: [{after: 2}]}", "block_s"},
		{"  - {algorithm: token_bucket, rate: 2, capacity: 10, block_s: 5, block_levels: [{after: 2, block_s: 9, ban: 1}]}", "ban"},
		{"  - {algorithm: token_bucket, rate: 2, capacity: 10, block_s: 5, block_levels: []}", "at least one level"},
		{"  - {algorithm: token_bucket, rate: 2, capacity: 10, block_levels: [{after: 1, block_s: 60}]}", "needs block_s above 0"},
		{"  - {algorithm: token_bucket, rate: 2, capacity: 10, block_s: -5}", "block_s"},
		{"  - {algorithm: token_bucket, rate: 2, capacity: 10, block_s: [5], block_levels: [{after: 1, block_s: 60}]}\n  - {algorithm: token_bucket, rate: 2, capacity: 20, block_s: [5]}", "different block_levels"},
	} {
		_, err := ReadSpec([]byte(head+c.entry+"\n"), "box.yaml", ".")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "box.yaml") {
			t.Errorf("%s: error %v, want …%s…", c.entry, err, c.want)
		}
	}
	spec := head + "  - {algorithm: token_bucket, rate: 2, capacity: [10, 20], block_s: [0, 5], block_levels: [{after: 1, block_s: 60}, {after: 3, block_s: 300}]}\n" +
		"  - {algorithm: gcra, rate: 2, capacity: 10, block_s: 5}\n"
	sp, err := ReadSpec([]byte(spec), "box.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	again, err := ReadSpec(sp.YAML(), "spec.yaml", ".")
	if err != nil || string(again.YAML()) != string(sp.YAML()) {
		t.Fatalf("the spec's YAML does not read back: %v\n%s", err, sp.YAML())
	}
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Run(ctx, sp, Options{OutDir: dir, Workers: 1, Shard: Shard{Count: 1}, MaxPoints: DefaultMaxPoints}); err != nil {
		t.Fatalf("run: %v", err)
	}
	labels, err := policyLabels(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"token_bucket rate=2 capacity=10",
		"token_bucket rate=2 capacity=10 block_s=5 block_levels=1:60,3:300",
		"token_bucket rate=2 capacity=20",
		"token_bucket rate=2 capacity=20 block_s=5 block_levels=1:60,3:300",
		"gcra rate=2 capacity=10 block_s=5",
	}
	if strings.Join(labels, "\n") != strings.Join(want, "\n") {
		t.Errorf("labels:\n%s\nwant:\n%s", strings.Join(labels, "\n"), strings.Join(want, "\n"))
	}
	rows, err := ReadPoints(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := model.NewWorkload(sp.Scenario)
	sim := w.NewSimulator()
	for i, r := range rows {
		p, err := model.ParseLabel(labels[i])
		if err != nil {
			t.Fatal(err)
		}
		var out model.Outcome
		sim.Run(p, &out)
		if r.Blocks != out.Blocks || r.LegitBlockedS != out.LegitBlockedS || r.Missed != out.Missed {
			t.Errorf("%s: blocks %d legit_blocked_s %v missed %d, model %d %v %d", labels[i], r.Blocks, r.LegitBlockedS, r.Missed, out.Blocks, out.LegitBlockedS, out.Missed)
		}
	}
	// Escalation lengthens the flood's blocks: fewer blocks than without.
	p, _ := model.ParseLabel("token_bucket rate=2 capacity=10 block_s=5")
	var flat model.Outcome
	sim.Run(p, &flat)
	if rows[1].Blocks >= flat.Blocks {
		t.Errorf("with levels %d blocks, without %d: escalation should block longer, so less often", rows[1].Blocks, flat.Blocks)
	}
}

// policyLabels reads a run's policy column in file order.
func policyLabels(dir string) ([]string, error) {
	files, err := PartFiles(dir, "points")
	if err != nil {
		return nil, err
	}
	var labels []string
	for _, f := range files {
		err := ScanFile(context.Background(), f, []string{PolicyColumn}, func(rec arrow.RecordBatch) error {
			for i := range int(rec.NumRows()) {
				s, _ := String(rec.Column(0), i)
				labels = append(labels, s)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return labels, nil
}

// A penalty box over a limiter that counts only failures (count_if) runs
// in a sweep as the model's Run gives it, blocks included: the key that
// keeps failing is blocked, the one that fails a few times is not cut
// beyond its block.
func TestSweepPenaltyBoxCountIf(t *testing.T) {
	const spec = `name: login
seed: 3
scenario:
  name: login
  duration_s: 600
  arrivals: uniform
  clients:
    - {name: stuffer, class: abusive, stage: none, segments: [[0, 600, 1]], fail_share: 0.95}
    - {name: typos, class: legit, segments: [[100, 110, 1]], fail_share: 0.67}
sweep:
  - {algorithm: fixed_window, window_s: 300, limit: [3, 20], count_if: {status: [401]}, block_s: [0, 60, 600]}
`
	sp, rows, _ := runSpecText(t, spec, "login.yaml")
	w, err := model.NewWorkload(sp.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	sim := w.NewSimulator()
	sim.SetReplicate(sp.Seed, 0)
	var blocked int64
	for _, r := range rows {
		p, err := model.ParseLabel(r.Key())
		if err != nil {
			t.Fatalf("policy %q: %v", r.Key(), err)
		}
		var out model.Outcome
		sim.Run(p, &out)
		if r.Blocks != out.Blocks || r.LegitBlockedS != out.LegitBlockedS || r.FalseCut != out.FalseCut || r.Caught != out.Caught {
			t.Errorf("%s: blocks %d legit_blocked_s %v false_cut %d caught %d, model %d %v %d %d", r.Key(), r.Blocks, r.LegitBlockedS, r.FalseCut, r.Caught, out.Blocks, out.LegitBlockedS, out.FalseCut, out.Caught)
		}
		if (p.BlockS > 0) != (r.Blocks > 0) {
			t.Errorf("%s: %d blocks", r.Key(), r.Blocks)
		}
		blocked += r.Blocks
	}
	if len(rows) != 6 || blocked == 0 {
		t.Fatalf("%d rows, %d blocks", len(rows), blocked)
	}
}

// count_if with a penalty box over a log's statuses: each key's admitted
// requests, blocks and blocked seconds are count_if's rule for
// fixed_window written out with the box (a request the rule rejects blocks
// the key for block_s; requests in the block are rejected unseen), the
// blocked time clipped at the end of the log's last second (times as
// logged, spread: none).
func TestPenaltyBoxCountIfFromLog(t *testing.T) {
	rs := loginLog()
	dir := t.TempDir()
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var combined strings.Builder
	last := 0
	for _, r := range rs {
		at := day.Add(time.Duration(r.s) * time.Second)
		fmt.Fprintf(&combined, "%s - - [%s] \"POST /login HTTP/1.1\" %d 12 \"-\" \"curl\"\n", r.ip, at.Format("02/Jan/2006:15:04:05 -0700"), r.status)
		last = max(last, r.s)
	}
	os.WriteFile(filepath.Join(dir, "access.log"), []byte(combined.String()), 0o644)
	const limit, blockS = 3, 25
	type kw struct {
		ip string
		w  int
	}
	counted, until := map[kw]int{}, map[string]int{}
	adm, blocks, blockedS := map[string]int64{}, map[string]int64{}, map[string]int{}
	for _, r := range rs {
		if u, ok := until[r.ip]; ok && r.s < u {
			continue
		}
		k := kw{r.ip, r.s / 60}
		if counted[k] < limit {
			adm[r.ip]++
			if r.status == 401 || r.status == 403 {
				counted[k]++
			}
			continue
		}
		until[r.ip] = r.s + blockS
		blocks[r.ip]++
		blockedS[r.ip] += min(r.s+blockS, last+1) - r.s
	}
	spec := fmt.Sprintf("name: login\ntraffic:\n  log: %q\n  format: combined\n  spread: none\n  top_keys: 10\nsweep:\n  - {algorithm: fixed_window, window_s: 60, limit: %d, count_if: {status: [401, 403]}, block_s: %d}\n",
		filepath.Join(dir, "access.log"), limit, blockS)
	names, clients, m := replayFirst(t, spec)
	var allBlocks int64
	for i, n := range names {
		if clients[i].Admitted != adm[n] || clients[i].BlockedNs != int64(blockedS[n])*1e9 {
			t.Errorf("%s: admitted %d, blocked %d ns; the rule %d, %d s", n, clients[i].Admitted, clients[i].BlockedNs, adm[n], blockedS[n])
		}
		allBlocks += blocks[n]
	}
	if m.Blocks != allBlocks || blocks["6.6.6.6"] == 0 {
		t.Errorf("%d blocks, the rule %d (%v)", m.Blocks, allBlocks, blocks)
	}
}
