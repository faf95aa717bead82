package model

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// ratStep is SPEC's token bucket rule in exact fractions (math/big.Rat),
// written from the lesson's definitions and nothing else: the bucket starts full; each second
// tokens = min(capacity, tokens + rate), adm = min(a, floor(tokens)),
// tokens -= adm.
func ratStep(rate *big.Rat, capacity int64, a []int32) []int32 {
	c := new(big.Rat).SetInt64(capacity)
	tokens := new(big.Rat).Set(c)
	floor := new(big.Int)
	out := make([]int32, len(a))
	for t, x := range a {
		tokens.Add(tokens, rate)
		if tokens.Cmp(c) > 0 {
			tokens.Set(c)
		}
		floor.Quo(tokens.Num(), tokens.Denom()) // tokens >= 0: truncation is floor
		n := min(int64(x), floor.Int64())
		tokens.Sub(tokens, new(big.Rat).SetInt64(n))
		out[t] = int32(n)
	}
	return out
}

// randomDecimalRate returns a rate in 0.01–100 written as a decimal with up
// to 4 fractional digits (0.1, 2.5, 33.3333, …; dyadic and not).
func randomDecimalRate(rng *rand.Rand) string {
	digits := rng.IntN(5)
	scale := []int{1, 10, 100, 1000, 10000}[digits]
	for {
		n := rng.IntN(100*scale + 1)
		if v := float64(n) / float64(scale); v >= 0.01 {
			return fmt.Sprintf("%.*f", digits, v)
		}
	}
}

// Every token bucket path equals SPEC's rule in exact fractions, per client,
// on random workloads and random decimal rates 0.01–100: the fluid fast path
// (Simulator.Run), the per-second kernel (Admit) and the event decider on the
// per-second batches. A tenth of the capacities are beyond 2^40 (up to 2^62),
// where the fast path once fell back to the kernel.
func TestTokenBucketExactDecimalRates(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 2))
	nonDyadic := 0
	for n := range 3000 {
		w := randomWorkload(t, rng)
		text := randomDecimalRate(rng)
		rate, _ := new(big.Rat).SetString(text)
		var p Policy
		fmt.Sscan(text, &p.Rate)
		p.Algorithm, p.Capacity = TokenBucket, 1+int64(rng.IntN(3000))
		switch rng.IntN(10) {
		case 0:
			p.Capacity = 1<<40 + rng.Int64N(1<<62-1<<40)
		case 1, 2:
			p.Capacity = 1 + int64(rng.IntN(5))
		}
		if !isDyadic(rate) {
			nonDyadic++
		}
		var o Outcome
		w.NewSimulator().Run(p, &o)
		for i, a := range w.series {
			want := ratStep(rate, p.Capacity, a)
			var wantN int64
			for _, x := range want {
				wantN += int64(x)
			}
			kernel, events := make([]int32, len(a)), make([]int32, len(a))
			Admit(p, a, kernel)
			admitBatches(newDecider(p), a, events, nil)
			if o.Clients[i].Admitted != wantN || !slices.Equal(kernel, want) || !slices.Equal(events, want) {
				t.Fatalf("workload %d, rate %s capacity %d, client %d %v: exact %d, fast path %d, kernel %v, events %v, exact %v",
					n, text, p.Capacity, i, w.Scenario.Clients[i].Segments, wantN, o.Clients[i].Admitted, kernel, events, want)
			}
		}
	}
	if nonDyadic < 1000 {
		t.Fatalf("only %d non-dyadic rates", nonDyadic)
	}
}

func isDyadic(r *big.Rat) bool {
	d := new(big.Int).Set(r.Denom())
	return d.And(d, new(big.Int).Sub(r.Denom(), big.NewInt(1))).Sign() == 0
}

// The event decider's two token representations (one count of units for
// buckets up to 2^60 units, whole tokens plus remainder beyond) decide alike:
// the same random batches through a bucket forced onto the wide one, with
// shared-state charges mixed in.
func TestTokenBucketRepresentationsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 3))
	for trial := range 2000 {
		var p Policy
		fmt.Sscan(randomDecimalRate(rng), &p.Rate)
		p.Algorithm, p.Capacity = TokenBucket, 1+int64(rng.IntN(30))
		if p.Rate < 0.01 {
			p.Rate = 0.01
		}
		small := newDecider(p).(*tokenBucketLimiter)
		wide := newDecider(p).(*tokenBucketLimiter)
		wide.small = false
		if !small.small {
			t.Fatalf("%v: not small", p)
		}
		times, sizes := randomBatches(rng, 200)
		for i, tNs := range times {
			if rng.IntN(10) == 0 {
				small.charge(tNs)
				wide.charge(tNs)
				continue
			}
			a, b := small.AllowN(tNs, sizes[i]), wide.AllowN(tNs, sizes[i])
			if a != b || small.full(tNs) != wide.full(tNs) {
				t.Fatalf("trial %d %v: batch %d of %d at %d ns: small admits %d, wide %d", trial, p, i, sizes[i], tNs, a, b)
			}
		}
	}
}
