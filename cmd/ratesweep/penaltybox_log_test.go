package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
	"golang.org/x/time/rate"
)

// A penalty box over a real access log through `ratesweep run`: the points
// files' blocks and legit_blocked_s and the clients files' blocked_s,
// read back, are those of a reference loop over the log's keys (a token
// bucket of golang.org/x/time/rate, blocked for block_s after a rejection,
// blocked time clipped at the end of the log's last second, legitimate
// keys those most of whose requests the rules leave legitimate); key
// shards merged give the single run's files byte for byte.
func TestRunPenaltyBoxOnLog(t *testing.T) {
	dir := t.TempDir()
	log, _ := filepath.Abs("../../configs/examples/logs/antlr_org_20030902/access.log.gz")
	spec := filepath.Join(dir, "box.yaml")
	os.WriteFile(spec, []byte(`name: box-log
traffic:
  log: `+log+`
  format: combined
  spread: none
  top_keys: 5
  rules:
    - {name: crawler, stage: none, user_agent: '(?i)bot|crawl|spider|slurp|teoma|jeeves'}
    - {name: missing page, stage: design, scope: request, status: 404}
shard_by: key
sweep:
  - {algorithm: token_bucket, rate: [0.5, 2], capacity: [5, 20], block_s: [0, 60, 600]}
`), 0o644)
	single := filepath.Join(dir, "single")
	if code, _, stderr := runCLI(t, "run", spec, "--out", single, "-q"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	ctx := context.Background()
	points, err := sweep.ReadPoints(ctx, single)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := sweep.ReadClients(ctx, single)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ingest.LoadConfig(spec)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ingest.Load(ctx, cfg.Log, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	var legitBlocked float64
	for _, r := range points {
		p, err := model.ParseLabel(r.Key())
		if err != nil {
			t.Fatal(err)
		}
		var blocks, legitNs, otherNs int64
		byName := map[string]int64{}
		for i := range tr.Keys {
			n, ns := logBoxReference(tr.Times(i), p, tr.DurationS)
			blocks += n
			var legit int
			for _, l := range tr.Labels(i) {
				if l == model.NoStage {
					legit++
				}
			}
			if 2*legit > len(tr.Labels(i)) {
				legitNs += ns
			}
			if i < 5 {
				byName[tr.Keys[i].Name] = ns
			} else {
				otherNs += ns
			}
		}
		if r.Blocks != blocks || r.LegitBlockedS != float64(legitNs)/1e9 {
			t.Errorf("%s: blocks %d legit_blocked_s %v; reference %d %v", r.Key(), r.Blocks, r.LegitBlockedS, blocks, float64(legitNs)/1e9)
		}
		if p.BlockS > 0 && blocks == 0 {
			t.Errorf("%s: the log never trips the limiter", r.Key())
		}
		var other float64
		for _, c := range clients {
			if c.PointID != r.PointID {
				continue
			}
			want, top := byName[c.Client]
			if !top {
				other += c.BlockedS
				continue
			}
			if c.BlockedS != float64(want)/1e9 {
				t.Errorf("%s client %s: blocked_s %v, reference %v", r.Key(), c.Client, c.BlockedS, float64(want)/1e9)
			}
		}
		if math.Abs(other-float64(otherNs)/1e9) > 1e-6 {
			t.Errorf("%s: other keys' rows blocked %v s, reference %v s", r.Key(), other, float64(otherNs)/1e9)
		}
		legitBlocked += r.LegitBlockedS
	}
	if legitBlocked == 0 {
		t.Error("no legitimate key was ever blocked: the log does not test legit_blocked_s")
	}

	checkKeyShards(t, spec, single, filepath.Join(dir, "keys"))
	if code, stdout, stderr := runCLI(t, "report", single); code != 0 || strings.Contains(stderr, "goroutine") {
		t.Errorf("report: exit %d: %s%s", code, stdout, stderr)
	}
}

// logBoxReference replays one key's request times (ns from the log's
// first second) through a token bucket of x/time/rate with p's rate and
// capacity and p's block_s, and returns the blocks and their time up to
// the end of the log's last second (durationS after its first).
func logBoxReference(ts []int64, p model.Policy, durationS int) (blocks, blockedNs int64) {
	base := time.Unix(1_062_486_000, 0)
	lim := rate.NewLimiter(rate.Limit(p.Rate), int(p.Capacity))
	until := int64(math.MinInt64)
	for _, t := range ts {
		if t < until || lim.AllowN(base.Add(time.Duration(t)), 1) || p.BlockS == 0 {
			continue
		}
		until = t + int64(p.BlockS*1e9)
		blocks++
		blockedNs += min(until, int64(durationS)*int64(time.Second)) - t
	}
	return blocks, blockedNs
}
