package ingest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/model"
	"golang.org/x/time/rate"
)

// boxKey is one key of a generated log as the reference sees it: its
// requests' seconds (from the log's first second, in log order) and
// whether each is legitimate.
type boxKey struct {
	secs  []int64
	legit []bool
}

// boxWant is the reference's outcome for one key.
type boxWant struct {
	offered, admitted [2]int64 // [legit, abusive]
	blocks, blockedNs int64
}

// boxReplayReference replays one key's requests through a penalty box
// written from docs/penalty-box.md over golang.org/x/time/rate's token
// bucket (rate r, burst b; its own clock), with the blocked time clipped at
// the end of the log's last second (spanS seconds after its first).
func boxReplayReference(k boxKey, r float64, b int, blockS float64, levels model.BlockLevels, spanS int64) boxWant {
	base := time.Unix(1_577_836_800, 0)
	lim := rate.NewLimiter(rate.Limit(r), b)
	var w boxWant
	var until int64 = math.MinInt64
	for j, s := range k.secs {
		t := s * int64(time.Second)
		c := 1
		if k.legit[j] {
			c = 0
		}
		w.offered[c]++
		if t < until {
			continue // in the block: rejected, unseen by the bucket
		}
		if lim.AllowN(base.Add(time.Duration(t)), 1) {
			w.admitted[c]++
			continue
		}
		length := blockS
		for _, l := range levels {
			if w.blocks >= l.After {
				length = l.BlockS
			}
		}
		until = t + int64(math.Round(length*1000))*int64(time.Millisecond)
		w.blocks++
		w.blockedNs += min(until, spanS*int64(time.Second)) - t
	}
	return w
}

// TestReplayPenaltyBoxMatchesReference: on random labelled logs (keys
// mixing legitimate and abusive requests, bursts within a second, gaps
// longer than the blocks), Replay of a token bucket with a penalty box
// (block_s, escalation levels) gives every key the decisions, blocks and
// blocked seconds of a reference loop over x/time/rate, and the metrics
// count blocks over every key and blocked seconds over the keys most of
// whose requests are legitimate; ReplayMany's Deciders give the same.
func TestReplayPenaltyBoxMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	rates := []float64{0.25, 0.5, 1, 2, 4}
	blocks := []float64{0.5, 1, 2.5, 3, 10, 60, 600}
	rules := []Rule{{Name: "errors", Stage: model.StageNone, Scope: ScopeRequest, Statuses: []StatusRange{{500, 599}}}}
	var sawBlocks, sawClipped, sawLegit int
	for n := range 200 {
		var b strings.Builder
		keys := map[string]*boxKey{}
		sec, last := int64(0), int64(0)
		nk := 1 + rng.IntN(8)
		for range 1 + rng.IntN(300) {
			switch rng.IntN(6) {
			case 0:
				sec += rng.Int64N(120)
			case 1, 2:
				sec++
			}
			last = sec
			name := fmt.Sprintf("k%d", rng.IntN(nk))
			legit := rng.IntN(3) > 0
			if name == "k0" {
				legit = rng.IntN(5) == 0 // a mostly abusive key
			}
			status := 200
			if !legit {
				status = 500
			}
			fmt.Fprintf(&b, "%s - - [01/Jan/2020:%02d:%02d:%02d +0000] \"GET / HTTP/1.1\" %d 1 \"-\" \"ua\"\n",
				name, sec/3600%24, sec/60%60, sec%60, status)
			k := keys[name]
			if k == nil {
				k = &boxKey{}
				keys[name] = k
			}
			k.secs, k.legit = append(k.secs, sec), append(k.legit, legit)
		}
		tr, err := build(t, b.String(), Options{Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		r, burst := rates[rng.IntN(len(rates))], 1+rng.IntN(6)
		p := model.Policy{Algorithm: model.TokenBucket, Rate: r, Capacity: int64(burst), BlockS: blocks[rng.IntN(len(blocks))]}
		var levels model.BlockLevels
		if n%2 == 1 {
			after := int64(0)
			for range 1 + rng.IntN(3) {
				after += 1 + rng.Int64N(2)
				levels = append(levels, model.BlockLevel{After: after, BlockS: blocks[rng.IntN(len(blocks))]})
			}
			p.BlockLevels = &levels
		}
		d, err := model.NewDeciderAt(p, tr.StartUnix*1e9)
		if err != nil {
			t.Fatal(err)
		}
		var out Replay
		tr.Replay(tr.Realise(SpreadNone, 1, 0, nil), d, &out)

		var want model.Metrics
		var legitNs, totalNs int64
		for i := range tr.Keys {
			name := tr.Keys[i].Name
			k := keys[name]
			w := boxReplayReference(*k, r, burst, p.BlockS, levels, last+1)
			got := out.Keys[i]
			gotOffered := [2]int64{got.Offered[model.NoStage], got.Offered[model.StageNone]}
			gotAdmitted := [2]int64{got.Admitted[model.NoStage], got.Admitted[model.StageNone]}
			if gotOffered != w.offered || gotAdmitted != w.admitted || got.Blocks != w.blocks || got.BlockedNs != w.blockedNs {
				t.Fatalf("log %d %v key %s: offered %v admitted %v blocks %d blocked %d ns; reference %v %v %d %d ns\n%s",
					n, p, name, gotOffered, gotAdmitted, got.Blocks, got.BlockedNs, w.offered, w.admitted, w.blocks, w.blockedNs, b.String())
			}
			var nl int
			for _, l := range k.legit {
				if l {
					nl++
				}
			}
			if 2*nl > len(k.legit) { // legitimate: most of its requests (abusive on a tie)
				legitNs += w.blockedNs
				if w.blockedNs > 0 {
					sawLegit++
				}
			}
			want.Blocks += w.blocks
			totalNs += w.blockedNs
			if w.blocks > 0 && w.blockedNs < w.blocks*int64(p.BlockS*1e9) && levels == nil {
				sawClipped++
			}
		}
		if out.Blocks != want.Blocks || out.LegitBlockedS != float64(legitNs)/1e9 {
			t.Fatalf("log %d %v: blocks %d legit_blocked_s %v; reference %d %v", n, p, out.Blocks, out.LegitBlockedS, want.Blocks, float64(legitNs)/1e9)
		}
		sawBlocks += int(want.Blocks)
		// The clients rows hold every key's blocked time once.
		var rowsNs int64
		for _, c := range tr.Rows(rng.IntN(4)).Aggregate(out.Totals(nil), nil) {
			rowsNs += c.BlockedNs
		}
		if rowsNs != totalNs {
			t.Fatalf("log %d %v: clients rows blocked %d ns, keys %d ns", n, p, rowsNs, totalNs)
		}
	}
	if sawBlocks == 0 || sawClipped == 0 || sawLegit == 0 {
		t.Fatalf("the logs exercised too little: %d blocks, %d keys clipped at the log's end, %d legitimate keys blocked", sawBlocks, sawClipped, sawLegit)
	}
}
