package model

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
)

// A replayed log's keys with reactions equal the reference loop, key by
// key, on random logs: per-label counts, attempts, gave up, throttled and
// the latencies of served requests, on reused storage.
func TestKeyReplayEqualsReferenceLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 9))
	kr := NewKeyReplay()
	for trial := range 300 {
		durS := 5 + rng.IntN(40)
		endNs := int64(durS) * secondNs
		p := randomPolicy(rng, Algorithms[rng.IntN(len(Algorithms))])
		if p.Algorithm.Describe().blank == nil {
			continue
		}
		weighed := trial%3 == 1 // costs or count_if: a retry repeats its request's cost and status
		if weighed {
			p.Costed = true
			if rng.IntN(2) == 0 {
				p.CountIf = "401"
			}
			if p.Validate() != nil {
				continue
			}
		}
		seed, rep := rng.Uint64(), rng.IntN(4)
		d := newDecider(p)
		var all, legit Delays
		var wantAll, wantLegit delayStats
		for key := range 1 + rng.IntN(5) {
			name := fmt.Sprintf("10.0.0.%d", key)
			rx := randomReaction(rng)
			n := rng.IntN(60)
			times := make([]int64, n)
			labels := make([]Stage, n)
			mixed := rng.IntN(3) == 0
			base := Stage(rng.IntN(4))
			for j := range times {
				times[j] = rng.Int64N(endNs)
				if rng.IntN(4) == 0 {
					times[j] = times[j] / secondNs * secondNs // ties at whole seconds
				}
				labels[j] = base
				if mixed {
					labels[j] = Stage(rng.IntN(4))
				}
			}
			slices.Sort(times)
			var weights [][]refWeight
			var costs []int64
			var statuses []int16
			if weighed {
				weights = [][]refWeight{make([]refWeight, n)}
				for j := range n {
					c, st := 1+rng.Int64N(4), []int{200, 401}[rng.IntN(2)]
					costs, statuses = append(costs, c), append(statuses, int16(st))
					weights[0][j] = refWeight{c, st}
				}
				kr.Weigh(costs, statuses)
			}
			var got KeyReaction
			kr.Replay(d, &rx, times, labels, endNs, p.Shapes(), seed, rep, name, &got)
			kr.Delays(&all, &legit)

			h := fnv.New64a()
			h.Write([]byte(name))
			stream := rand.New(rand.NewPCG(seed^reactSeed^keyStreamSalt, streamSeed(rep, 0)^h.Sum64()))
			_, res, reqs := refLoopWeighed([]*Reaction{&rx}, []*rand.Rand{stream}, p, [][]int64{times}, endNs, false, weights)
			want := KeyReaction{GaveUp: res[0].GaveUp, Throttled: res[0].Throttled}
			for j, q := range reqs[0] {
				l := labels[j]
				want.Offered[l]++
				want.Attempts[l] += int64(q.attempts)
				if weighed {
					want.OfferedCost[l] += costs[j]
				}
				if q.served {
					want.Served[l]++
					if weighed {
						want.ServedCost[l] += costs[j]
					}
					wantAll.add(q.latNs)
					if l == NoStage {
						wantLegit.add(q.latNs)
					}
				}
			}
			got.Blocks, got.BlockedNs = 0, 0 // blocks: the reference interpreter's differential test
			if got != want {
				t.Fatalf("trial %d key %d, %v, %+v, labels %v: %+v, reference %+v", trial, key, p, rx, labels, got, want)
			}
		}
		if all.d.n != wantAll.n || all.d.sumNs != wantAll.sumNs || all.P99S() != wantAll.quantileS(0.99) ||
			legit.d.n != wantLegit.n || legit.d.sumNs != wantLegit.sumNs || legit.P99S() != wantLegit.quantileS(0.99) {
			t.Fatalf("trial %d, %v: delays all %+v legit %+v, reference %+v %+v", trial, p, all.d, legit.d, wantAll, wantLegit)
		}
	}
}

// A key whose client does not react is replayed as without reactions:
// every request once, admitted as the decider says.
func TestKeyReplayWithoutReactionIsPlainReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 10))
	kr := NewKeyReplay()
	for trial := range 100 {
		p := randomPolicy(rng, Algorithms[rng.IntN(len(Algorithms))])
		if p.Algorithm.Describe().blank == nil {
			continue
		}
		times := make([]int64, rng.IntN(200))
		labels := make([]Stage, len(times))
		for j := range times {
			times[j] = rng.Int64N(20 * secondNs)
			labels[j] = Stage(rng.IntN(4))
		}
		slices.Sort(times)
		var got KeyReaction
		kr.Replay(newDecider(p), &Reaction{}, times, labels, 20*secondNs, false, 1, 0, "k", &got)
		d := newDecider(p)
		var want KeyReaction
		for j, tn := range times {
			want.Offered[labels[j]]++
			want.Attempts[labels[j]]++
			if d.Allow(tn) {
				want.Served[labels[j]]++
			} else {
				want.GaveUp++
			}
		}
		want.Blocks, want.BlockedNs, _ = BlockStats(d, 20*secondNs) // as a plain replay counts them
		if got != want {
			t.Fatalf("trial %d, %v: %+v, plain replay %+v", trial, p, got, want)
		}
	}
}
