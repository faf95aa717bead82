package model_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// benchKeys returns a log's requests by key as the replay row of make bench
// has them, smaller: requests spread uniformly over span seconds at
// millisecond times, keys Zipf-distributed (s = 1.1); each key's times
// sorted, ns.
func benchKeys(requests, keys int, span int64) [][]int64 {
	rng := rand.New(rand.NewPCG(1, 17))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 18)), 1.1, 1, uint64(keys-1))
	byKey := make([][]int64, keys)
	for range requests {
		k := zipf.Uint64()
		byKey[k] = append(byKey[k], rng.Int64N(span*1000)*1e6)
	}
	for _, ts := range byKey {
		slices.Sort(ts)
	}
	return byKey
}

// lockstepBenchBatches are 64 points of each algorithm as a sweep grid
// holds them: one rate or window, the capacity (limit, burst) 1…64.
var lockstepBenchBatches = []struct {
	name string
	p    func(i int) model.Policy
}{
	{"token_bucket", func(i int) model.Policy {
		return model.Policy{Algorithm: model.TokenBucket, Rate: 1, Capacity: int64(1 + i)}
	}},
	{"token_bucket_wide", func(i int) model.Policy {
		return model.Policy{Algorithm: model.TokenBucket, Rate: 1, Capacity: 1<<40 + int64(i)}
	}},
	{"sliding_window", func(i int) model.Policy {
		return model.Policy{Algorithm: model.SlidingWindow, WindowS: 60, Limit: int64(1 + i)}
	}},
	{"gcra", func(i int) model.Policy { return model.Policy{Algorithm: model.GCRA, Rate: 1, Capacity: int64(1 + i)} }},
	{"nginx", func(i int) model.Policy {
		return model.Policy{Algorithm: model.Nginx, Rate: 1, Burst: int64(i), Delay: int64(i)}
	}},
	{"concurrency", func(i int) model.Policy {
		return model.Policy{Algorithm: model.Concurrency, ServiceS: 2, Limit: int64(1 + i)}
	}},
	{"sliding_counter", func(i int) model.Policy {
		return model.Policy{Algorithm: model.SlidingCounter, WindowS: 60, Limit: int64(1 + i)}
	}},
}

// BenchmarkReplayBatch replays 64 points of one algorithm over 1M requests
// of 2,000 keys (3,600 s) key by key, as ingest.ReplayMany does, both ways:
// "deciders" offers each chunk of 512 requests to each point's Decider in
// turn (the replay before Lockstep), "lockstep" decides each request for
// every point at once (model.Lockstep), "admitkey" as the replay does now,
// settling the points that admit a whole key at once. ns/decision is per point and
// request; the two alternate with -count, so compare them within one run.
func BenchmarkReplayBatch(b *testing.B) {
	keys := benchKeys(1_000_000, 2000, 3600)
	var requests int
	var labels []model.Stage
	for _, ts := range keys {
		requests += len(ts)
		labels = slices.Grow(labels, len(ts))[:max(len(labels), len(ts))]
	}
	const points = 64
	for _, bb := range lockstepBenchBatches {
		ps := make([]model.Policy, points)
		for i := range ps {
			ps[i] = bb.p(i)
		}
		admitted := make([][4]int64, points)
		report := func(b *testing.B) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*float64(requests)*points), "ns/decision")
		}
		b.Run(bb.name+"/deciders", func(b *testing.B) {
			ds := make([]model.Decider, points)
			for i, p := range ps {
				ds[i], _ = model.NewDeciderAt(p, 0)
			}
			for b.Loop() {
				for _, ts := range keys {
					for _, d := range ds {
						d.Reset()
					}
					for lo := 0; lo < len(ts); lo += 512 {
						hi := min(lo+512, len(ts))
						for k, d := range ds {
							model.AdmitByLabel(d, ts[lo:hi], labels[lo:hi], &admitted[k])
						}
					}
				}
			}
			report(b)
		})
		b.Run(bb.name+"/lockstep", func(b *testing.B) {
			ls, ok := model.NewLockstep(ps, 0)
			if !ok {
				b.Fatal(fmt.Sprint("no lockstep for ", bb.name))
			}
			for b.Loop() {
				for _, ts := range keys {
					ls.Reset()
					ls.AdmitByLabel(ts, labels[:len(ts)], admitted)
				}
			}
			report(b)
		})
		b.Run(bb.name+"/admitkey", func(b *testing.B) {
			ls, _ := model.NewLockstep(ps, 0)
			for b.Loop() {
				for _, ts := range keys {
					offered := [4]int64{int64(len(ts))}
					ls.AdmitKey(ts, labels[:len(ts)], &offered, admitted)
				}
			}
			report(b)
		})
	}
}
