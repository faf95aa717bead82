package model_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// randomLockstepPolicy returns a valid random policy of algorithm a, with
// parameters a sweep would hold: rates whole, decimal and n per period,
// capacities, limits and bursts from 0 (where allowed) to a few hundred.
func randomLockstepPolicy(rng *rand.Rand, a model.Algorithm) model.Policy {
	rate := func() float64 {
		switch rng.IntN(3) {
		case 0:
			return float64(1 + rng.IntN(50))
		case 1:
			return float64(1+rng.IntN(100_000)) / 1000
		}
		return float64(1+rng.IntN(100)) / float64(1+rng.IntN(60))
	}
	size := func() int64 { return int64(rng.IntN([]int{3, 20, 300}[rng.IntN(3)])) }
	for {
		p := model.Policy{Algorithm: a}
		switch a {
		case model.TokenBucket, model.GCRA:
			p.Rate, p.Capacity = rate(), 1+size()
			if a == model.TokenBucket && rng.IntN(8) == 0 { // a bucket that is not small
				p.Rate, p.Capacity = 0.5+rng.Float64()*20, 1+size()+[]int64{0, 1 << 40, 1 << 61}[rng.IntN(3)]
			}
		case model.Nginx:
			p.Rate, p.Burst, p.Delay = rate(), size(), size()
		case model.SlidingWindow, model.SlidingCounter:
			p.WindowS, p.Limit = 1+rng.IntN(120), size()
		case model.Concurrency:
			p.ServiceS, p.Limit = float64(1+rng.IntN(20_000))/1000, size()
		}
		if p.Validate() == nil {
			return p
		}
	}
}

var lockstepAlgorithms = []model.Algorithm{model.TokenBucket, model.GCRA, model.Nginx, model.SlidingWindow, model.Concurrency, model.SlidingCounter}

// A Lockstep over a batch of random policies of one algorithm admits, key by
// key and label by label, exactly what each policy's own Decider admits, on
// random traces (bursts at one instant, sub-period gaps, idle spells) offered
// in random chunks, at random Unix origins.
func TestLockstepEqualsDeciders(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 2))
	for _, a := range lockstepAlgorithms {
		decisions := 0
		for batch := range 150 {
			ps := make([]model.Policy, 1+rng.IntN(70))
			for k := range ps {
				ps[k] = randomLockstepPolicy(rng, a)
			}
			if batch%2 == 1 {
				// One window or rate, sizes apart: the batch a grid makes,
				// where AdmitKey settles the large sizes at once.
				for k := range ps {
					ps[k] = sameGroup(ps[0], ps[k])
				}
			}
			origin := base.UnixNano() + rng.Int64N(int64(86400e9))
			ls, ok := model.NewLockstep(ps, origin)
			if !ok {
				t.Fatalf("%v: no lockstep for %v", a, ps)
			}
			ds := make([]model.Decider, len(ps))
			for k, p := range ps {
				d, err := model.NewDeciderAt(p, origin)
				if err != nil {
					t.Fatal(err)
				}
				ds[k] = d
			}
			got := make([][4]int64, len(ps))
			for key := range 4 {
				period := int64(1e9 / (0.1 + rng.Float64()*20))
				ts := randomTrace(rng, rng.IntN(400), period, []int64{1, 1e6, 1e9}[rng.IntN(3)])
				labels := make([]model.Stage, len(ts))
				for j := range labels {
					labels[j] = model.Stage(rng.IntN(4))
				}
				clear(got)
				if rng.IntN(2) == 0 {
					var offered [4]int64
					for _, l := range labels {
						offered[l]++
					}
					ls.AdmitKey(ts, labels, &offered, got)
				} else {
					ls.Reset()
					for lo := 0; lo < len(ts); {
						hi := min(len(ts), lo+1+rng.IntN(100))
						ls.AdmitByLabel(ts[lo:hi], labels[lo:hi], got)
						lo = hi
					}
				}
				for k, d := range ds {
					var want [4]int64
					d.Reset()
					for j, tn := range ts {
						if d.Allow(tn) {
							want[labels[j]]++
						}
					}
					if got[k] != want {
						t.Fatalf("%v batch %d key %d (origin %d): lockstep admits %v by label, Decider %v (times %v)",
							ps[k], batch, key, origin, got[k], want, ts)
					}
					decisions += len(ts)
				}
			}
		}
		t.Logf("%v: %d decisions agree", a, decisions)
	}
}

// sameGroup is p with base's window or rate: only its size (limit,
// capacity, burst) differs from base's.
func sameGroup(base, p model.Policy) model.Policy {
	q := base
	switch base.Algorithm {
	case model.TokenBucket, model.GCRA:
		q.Capacity = p.Capacity
	case model.Nginx:
		q.Burst, q.Delay = p.Burst, p.Delay
	default:
		q.Limit = p.Limit
	}
	if q.Validate() != nil {
		return base
	}
	return q
}

// NewLockstep declines what it does not run, so that the replay uses
// Deciders: mixed algorithms, count-based ones (CountFunc), sliding logs
// too long.
func TestLockstepDeclines(t *testing.T) {
	for _, ps := range [][]model.Policy{
		nil,
		{{Algorithm: model.TokenBucket, Rate: 1, Capacity: 2}, {Algorithm: model.GCRA, Rate: 1, Capacity: 2}},
		{{Algorithm: model.FixedWindow, WindowS: 60, Limit: 5}},
		{{Algorithm: model.SlidingWindow, WindowS: 60, Limit: 1 << 21}},
	} {
		if _, ok := model.NewLockstep(ps, 0); ok {
			t.Errorf("%v: lockstep accepted", ps)
		}
	}
}

// lockstepDecider is policy 0 of a Lockstep seen as a Decider, one request
// per call, so the oracle tests run it against the real libraries too.
type lockstepDecider struct {
	ls  model.Lockstep
	adm [][4]int64
}

// newLockstepDecider batches p with others (policies of its algorithm that
// must not disturb it) and checks policy 0.
func newLockstepDecider(t *testing.T, originNs int64, p model.Policy, others ...model.Policy) *lockstepDecider {
	t.Helper()
	ps := append([]model.Policy{p}, others...)
	ls, ok := model.NewLockstep(ps, originNs)
	if !ok {
		t.Fatalf("no lockstep for %v", ps)
	}
	return &lockstepDecider{ls: ls, adm: make([][4]int64, len(ps))}
}

func (d *lockstepDecider) Reset() { d.ls.Reset() }

func (d *lockstepDecider) Allow(tNs int64) bool {
	before := d.adm[0][0]
	d.ls.AdmitByLabel([]int64{tNs}, []model.Stage{0}, d.adm)
	return d.adm[0][0] > before
}

func (d *lockstepDecider) AllowN(tNs, n int64) int64 {
	var k int64
	for range n {
		if d.Allow(tNs) {
			k++
		}
	}
	return k
}

// bothDeciders asserts that the Decider and the Lockstep agree at every
// request, and answers with the Decider's decision.
type bothDeciders struct {
	t    *testing.T
	what string
	d    model.Decider
	ls   *lockstepDecider
}

func (b *bothDeciders) Reset() { b.d.Reset(); b.ls.Reset() }

func (b *bothDeciders) Allow(tNs int64) bool {
	got, ls := b.d.Allow(tNs), b.ls.Allow(tNs)
	if got != ls {
		b.t.Fatalf("%s at %d ns: Decider says %v, Lockstep %v", b.what, tNs, got, ls)
	}
	return got
}

func (b *bothDeciders) AllowN(tNs, n int64) int64 { panic("bothDeciders: AllowN") }

// withLockstep returns d checked against a Lockstep of p batched with two
// random policies of its algorithm.
func withLockstep(t *testing.T, rng *rand.Rand, d model.Decider, p model.Policy) model.Decider {
	return withLockstepAt(t, rng, d, p, 0)
}

// withLockstepAt is withLockstep for times since originNs (NewDeciderAt).
func withLockstepAt(t *testing.T, rng *rand.Rand, d model.Decider, p model.Policy, originNs int64) model.Decider {
	return &bothDeciders{t: t, what: fmt.Sprint(p), d: d,
		ls: newLockstepDecider(t, originNs, p, randomLockstepPolicy(rng, p.Algorithm), randomLockstepPolicy(rng, p.Algorithm))}
}

// withSize is p with its size (capacity, burst or limit) set to n.
func withSize(p model.Policy, n int64) model.Policy {
	switch p.Algorithm {
	case model.TokenBucket, model.GCRA:
		p.Capacity = n
	case model.Nginx:
		p.Burst, p.Delay = n, min(p.Delay, n)
	default:
		p.Limit = n
	}
	return p
}

// AdmitKey settles at once the sizes that admit a whole key and steps the
// others. At the boundary, the least size whose Decider admits every request
// of a random trace and the sizes just below and above it, AdmitKey admits
// exactly what each Decider does.
func TestAdmitKeyAtTheBoundary(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	for _, a := range lockstepAlgorithms {
		hits := 0
		for range 300 {
			pol := randomLockstepPolicy(rng, a)
			if a == model.TokenBucket {
				pol = withSize(pol, 1) // small buckets: the wide ones step every policy
			}
			period := int64(1e9 / (0.1 + rng.Float64()*20))
			ts := randomTrace(rng, 1+rng.IntN(300), period, []int64{1, 1e6, 1e9}[rng.IntN(3)])
			labels := make([]model.Stage, len(ts))
			var offered [4]int64
			for j := range labels {
				labels[j] = model.Stage(rng.IntN(4))
				offered[labels[j]]++
			}
			origin := base.UnixNano() + rng.Int64N(int64(86400e9))
			allow := func(p model.Policy) [4]int64 {
				d, err := model.NewDeciderAt(p, origin)
				if err != nil {
					t.Fatal(err)
				}
				var adm [4]int64
				for j, tn := range ts {
					if d.Allow(tn) {
						adm[labels[j]]++
					}
				}
				return adm
			}
			least := int64(-1)
			for n := int64(0); n <= 400; n++ {
				if p := withSize(pol, n); p.Validate() == nil && allow(p) == offered {
					least = n
					break
				}
			}
			if least < 0 {
				continue
			}
			var ps []model.Policy
			for n := max(0, least-2); n <= least+2; n++ {
				if p := withSize(pol, n); p.Validate() == nil {
					ps = append(ps, p)
				}
			}
			rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
			ls, ok := model.NewLockstep(ps, origin)
			if !ok {
				t.Fatalf("no lockstep for %v", ps)
			}
			got := make([][4]int64, len(ps))
			ls.AdmitKey(ts, labels, &offered, got)
			for k, p := range ps {
				if want := allow(p); got[k] != want {
					t.Fatalf("%v (the least size admitting all is %d): AdmitKey admits %v by label, Decider %v (times %v)",
						p, least, got[k], want, ts)
				}
			}
			hits++
		}
		if hits < 100 {
			t.Errorf("%v: only %d traces with a boundary below 400", a, hits)
		}
		t.Logf("%v: %d boundaries checked", a, hits)
	}
}
