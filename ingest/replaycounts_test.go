package ingest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// TestReplayCountsEqualsReplay: on random logs (keys of every label, keys
// mixing labels by a request rule, bursts within a second, gaps of minutes,
// every spread, window origins), ReplayCounts gives, at every limit, the
// rows and metrics Replay gives with the policy's own Decider.
func TestReplayCountsEqualsReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 5))
	rules := []Rule{
		{Name: "probe", Stage: model.StageDesign, Keys: map[string]bool{"k1": true, "k2": true}},
		{Name: "errors", Stage: model.StageNone, Scope: ScopeRequest, Statuses: []StatusRange{{500, 599}}},
	}
	for n := range 300 {
		var b strings.Builder
		sec := 0
		for range 1 + rng.IntN(400) {
			switch rng.IntN(5) {
			case 0:
				sec += rng.IntN(300)
			case 1:
				sec += 1
			}
			status := 200
			if rng.IntN(6) == 0 {
				status = 500
			}
			fmt.Fprintf(&b, "k%d - - [01/Jan/2020:%02d:%02d:%02d +0000] \"GET / HTTP/1.1\" %d 1 \"-\" \"ua\"\n",
				rng.IntN(1+rng.IntN(12)), sec/3600%24, sec/60%60, sec%60, status)
		}
		tr, err := build(t, b.String(), Options{Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		times := tr.Realise(Spread(rng.IntN(3)), uint64(n), 0, nil)
		rows := tr.Rows(rng.IntN(4))
		alg := []model.Algorithm{model.FixedWindow, model.FixedWindowAnchored, model.SlidingLog}[n%3]
		p := model.Policy{Algorithm: alg, WindowS: 1 + rng.IntN(120)}
		if alg == model.FixedWindow && rng.IntN(2) == 0 {
			p.PhaseS = rng.IntN(p.WindowS)
		}
		limits := []int64{0, 1, 2, int64(rng.IntN(10)), int64(rng.IntN(500)), 1 << 40}
		origin := tr.StartUnix*1e9 + rng.Int64N(1e12) // windows from an origin off the log's start
		if n%3 == 1 {
			origin = WindowOrigin(rng.IntN(2)).OriginNs(tr)
		}
		// Up to 4 key ranges, taken in turn by 1 to 3 goroutines (each
		// with its own count function).
		ranges := []int{0}
		for range rng.IntN(4) {
			if last := ranges[len(ranges)-1]; last+1 < len(tr.Keys) {
				ranges = append(ranges, last+1+rng.IntN(len(tr.Keys)-last-1))
			}
		}
		ranges = append(ranges, len(tr.Keys))
		var counts []func(ts []int64, c []int32, cap int64)
		for range 1 + rng.IntN(3) {
			count, ok := model.CountFunc(p, origin)
			if !ok {
				t.Fatal(p)
			}
			counts = append(counts, count)
		}
		got := make([]model.ClientResult, len(limits)*len(rows.Names))
		gotM := make([]model.Metrics, len(limits))
		var s CountReplay
		tr.ReplayCounts(times, counts, limits, ranges, rows, got, gotM, &s)
		for k, L := range limits {
			q := p
			q.Limit = L
			d, err := model.NewDeciderAt(q, origin)
			if err != nil {
				t.Fatal(err)
			}
			var out Replay
			tr.Replay(times, d, &out)
			want := rows.Aggregate(out.Totals(nil), nil)
			if !reflect.DeepEqual(got[k*len(rows.Names):(k+1)*len(rows.Names)], want) || gotM[k] != out.Metrics {
				t.Fatalf("log %d %v: rows %v metrics %+v; Replay: rows %v metrics %+v",
					n, q, got[k*len(rows.Names):(k+1)*len(rows.Names)], gotM[k], want, out.Metrics)
			}
		}
	}
}

// TestReplayManyEqualsReplay: ReplayMany (Deciders key by key, busy keys in
// chunks, some with a penalty box, or a Lockstep of one algorithm; key
// ranges at once) gives each policy's Replay, blocks included, on random
// logs.
func TestReplayManyEqualsReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 7))
	defer func(c int) { replayChunk = c }(replayChunk)
	for n := range 100 {
		replayChunk = 1 + rng.IntN(40)
		var b strings.Builder
		sec := 0
		for range 1 + rng.IntN(600) {
			if rng.IntN(4) == 0 {
				sec += rng.IntN(20)
			}
			status := 200
			if rng.IntN(6) == 0 {
				status = 500
			}
			fmt.Fprintf(&b, "k%d - - [01/Jan/2020:%02d:%02d:%02d +0000] \"GET / HTTP/1.1\" %d 1 \"-\" \"ua\"\n",
				rng.IntN(1+rng.IntN(6)), sec/3600%24, sec/60%60, sec%60, status)
		}
		tr, err := build(t, b.String(), Options{Rules: []Rule{{Name: "errors", Stage: model.StageNone, Scope: ScopeRequest, Statuses: []StatusRange{{500, 599}}}}})
		if err != nil {
			t.Fatal(err)
		}
		times := tr.Realise(Spread(rng.IntN(3)), uint64(n), 0, nil)
		rows := tr.Rows(rng.IntN(3))
		origin := tr.StartUnix * 1e9
		ps := []model.Policy{
			{Algorithm: model.SlidingWindow, WindowS: 1 + rng.IntN(30), Limit: int64(rng.IntN(20))},
			{Algorithm: model.TokenBucket, Rate: 0.1 + rng.Float64()*5, Capacity: 1 + int64(rng.IntN(20))},
			{Algorithm: model.GCRA, Rate: 0.1 + rng.Float64()*5, Capacity: 1 + int64(rng.IntN(20))},
			{Algorithm: model.SlidingCounter, WindowS: 1 + rng.IntN(30), Limit: int64(rng.IntN(20))},
			{Algorithm: model.Nginx, Rate: 1, Burst: int64(rng.IntN(5)), Delay: int64(rng.IntN(5))},
			{Algorithm: model.FixedWindow, WindowS: 1 + rng.IntN(30), Limit: int64(rng.IntN(20))},
		}
		// Up to 5 key ranges, taken in turn by fewer goroutines or as many.
		ranges := []int{0}
		for range rng.IntN(5) {
			if last := ranges[len(ranges)-1]; last+1 < len(tr.Keys) {
				ranges = append(ranges, last+1+rng.IntN(len(tr.Keys)-last-1))
			}
		}
		ranges = append(ranges, len(tr.Keys))
		// The Deciders of mixed algorithms, or a Lockstep of one.
		if n%2 == 1 {
			a := []model.Algorithm{model.SlidingWindow, model.TokenBucket, model.GCRA, model.Nginx, model.Concurrency, model.SlidingCounter}[n/2%6]
			for k := range ps {
				ps[k] = model.Policy{Algorithm: a, WindowS: 1 + rng.IntN(30), Limit: int64(rng.IntN(20)),
					Rate: float64(1+rng.IntN(50)) / 10, Capacity: 1 + int64(rng.IntN(20)), Burst: int64(rng.IntN(5)), Delay: int64(rng.IntN(5)),
					ServiceS: 0.1 + rng.Float64()*10}
			}
		}
		if n%2 == 0 { // Deciders: some with a penalty box (blocks by key)
			for k := range ps {
				if rng.IntN(2) == 0 {
					ps[k].BlockS = float64(1+rng.IntN(30000)) / 1000
				}
			}
		}
		bs := make([]Batch, 1+rng.IntN(len(ranges)-1))
		for r := range bs {
			if n%2 == 1 {
				ls, ok := model.NewLockstep(ps, origin)
				if !ok {
					t.Fatalf("no lockstep for %v", ps)
				}
				bs[r] = ls
				continue
			}
			var ds []Decider
			for _, p := range ps {
				d, err := model.NewDeciderAt(p, origin)
				if err != nil {
					t.Fatal(err)
				}
				ds = append(ds, d)
			}
			bs[r] = Deciders(ds)
		}
		got := make([]model.ClientResult, len(ps)*len(rows.Names))
		gotM := make([]model.Metrics, len(ps))
		var s CountReplay
		tr.ReplayMany(times, bs, ranges, rows, got, gotM, &s)
		for k, p := range ps {
			d, _ := model.NewDeciderAt(p, origin)
			var out Replay
			tr.Replay(times, d, &out)
			want := rows.Aggregate(out.Totals(nil), nil)
			if !reflect.DeepEqual(got[k*len(rows.Names):(k+1)*len(rows.Names)], want) || gotM[k] != out.Metrics {
				t.Fatalf("log %d %v (chunk %d, ranges %v): rows %v metrics %+v; Replay: rows %v metrics %+v",
					n, p, replayChunk, ranges, got[k*len(rows.Names):(k+1)*len(rows.Names)], gotM[k], want, out.Metrics)
			}
		}
	}
}
