package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refEvent is a request waiting in the reference loop.
type refEvent struct {
	t       int64
	isRetry bool
	client  int
	seq     int64 // intended: its index; retry: order of scheduling in the client
	req     int
	try     int
	sleepS  float64
}

// refClient is a client's state in the reference loop: plain lists of the
// seconds of its budget deposits and withdrawals, sends and accepts.
type refClient struct {
	rx                    *Reaction
	rng                   *rand.Rand
	seq                   int64
	deposits, withdrawals []int64
	sent, accepted        []int64
	res                   ClientReaction
	served                int64
}

// inWindow counts the seconds in xs within the n seconds up to sec.
func inWindow(xs []int64, sec int64, n int64) int64 {
	var c int64
	for _, x := range xs {
		if x > sec-n && x <= sec {
			c++
		}
	}
	return c
}

// refBackoff is the AWS blog's formulas, written out.
func refBackoff(rx *Reaction, k int, prev float64, rng *rand.Rand) float64 {
	capS := rx.CapS
	if capS == 0 {
		capS = math.Inf(1)
	}
	exp := rx.BaseS * math.Pow(2, float64(k))
	switch rx.Jitter {
	case JitterNone:
		return min(capS, exp)
	case JitterFull:
		return rng.Float64() * min(capS, exp)
	case JitterEqual:
		temp := min(capS, exp)
		return temp/2 + rng.Float64()*(temp/2)
	}
	if prev == 0 {
		prev = rx.BaseS
	}
	return min(capS, rx.BaseS+rng.Float64()*(prev*3-rx.BaseS))
}

// refReactions is a straightforward reference of runReactions: every
// pending request in one list, the earliest (t, retry after intended,
// client, seq) taken by a linear scan, one decider per client (or one for
// all with shared).
func refReactions(w *Workload, p Policy, times [][]int64, seed uint64, rep int, shared bool) ([]ClientResult, []ClientReaction) {
	sc := w.Scenario
	rxs := make([]*Reaction, len(sc.Clients))
	rngs := make([]*rand.Rand, len(sc.Clients))
	for i := range sc.Clients {
		rxs[i], rngs[i] = &sc.Clients[i].React, rand.New(rand.NewPCG(seed^reactSeed, streamSeed(rep, i)))
	}
	var weights [][]refWeight
	if p.Weighed() { // a retry repeats its request: its cost, its status
		weights = make([][]refWeight, len(sc.Clients))
		for i := range sc.Clients {
			c := &sc.Clients[i]
			pcg := rand.NewPCG(0, 0)
			frng := rand.New(pcg)
			seedFails(pcg, seed, rep, i)
			for range times[i] {
				weights[i] = append(weights[i], refWeight{c.RequestCost(), c.nextStatus(frng)})
			}
		}
	}
	out, res, _ := refLoopWeighed(rxs, rngs, p, times, int64(sc.DurationS)*secondNs, shared, weights)
	return out, res
}

// refWeight is an intended request's cost and response status.
type refWeight struct {
	cost   int64
	status int
}

// refRequest is what became of one intended request in the reference loop.
type refRequest struct {
	attempts int
	served   bool
	latNs    int64
}

// refLoop is the reference loop over clients with reactions rxs and random
// streams rngs; it also returns what became of every intended request.
func refLoop(rxs []*Reaction, rngs []*rand.Rand, p Policy, times [][]int64, endNs int64, shared bool) ([]ClientResult, []ClientReaction, [][]refRequest) {
	return refLoopWeighed(rxs, rngs, p, times, endNs, shared, nil)
}

// refLoopWeighed is refLoop with every attempt at request j of client i
// weighed by weights[i][j] (nil: not weighed).
func refLoopWeighed(rxs []*Reaction, rngs []*rand.Rand, p Policy, times [][]int64, endNs int64, shared bool, weights [][]refWeight) ([]ClientResult, []ClientReaction, [][]refRequest) {
	var pending []refEvent
	cls := make([]*refClient, len(rxs))
	ds := make([]decider, len(rxs))
	var lat [][]int64 = make([][]int64, len(rxs))
	reqs := make([][]refRequest, len(rxs))
	for i := range rxs {
		cls[i] = &refClient{rx: rxs[i], rng: rngs[i]}
		ds[i] = newDecider(p)
		if shared && i > 0 {
			ds[i] = ds[0]
		}
		reqs[i] = make([]refRequest, len(times[i]))
		for j, t := range times[i] {
			pending = append(pending, refEvent{t: t, client: i, seq: int64(j), req: j})
		}
	}
	before := func(a, b refEvent) bool {
		if a.t != b.t {
			return a.t < b.t
		}
		if a.isRetry != b.isRetry {
			return !a.isRetry
		}
		if shared && a.client != b.client {
			return a.client < b.client
		}
		if a.client != b.client {
			return a.client < b.client // separate keys: any order will do
		}
		return a.seq < b.seq
	}
	for len(pending) > 0 {
		k := 0
		for j := range pending {
			if before(pending[j], pending[k]) {
				k = j
			}
		}
		ev := pending[k]
		pending = append(pending[:k], pending[k+1:]...)
		c, d := cls[ev.client], ds[ev.client]
		rx := c.rx
		sec := ev.t / secondNs
		if !ev.isRetry && rx.Budget != nil {
			c.deposits = append(c.deposits, sec)
		}
		if rx.ThrottleK > 0 {
			req, acc := float64(inWindow(c.sent, sec, throttleWindowS)), float64(inWindow(c.accepted, sec, throttleWindowS))
			prob := math.Max(0, (req-rx.ThrottleK*acc)/(req+1))
			c.sent = append(c.sent, sec)
			if prob > 0 && c.rng.Float64() < prob {
				c.res.Throttled++
				c.res.GaveUp++
				continue
			}
		}
		c.res.Attempts++
		reqs[ev.client][ev.req].attempts++
		var ok bool
		if weights != nil {
			wt := weights[ev.client][ev.req]
			ok = d.(RequestDecider).AllowRequest(ev.t, wt.cost, wt.status)
		} else {
			ok = d.Allow(ev.t)
		}
		if ok {
			if rx.ThrottleK > 0 {
				c.accepted = append(c.accepted, sec)
			}
			c.served++
			l := ev.t - times[ev.client][ev.req]
			if sh, ok := d.(Shaper); ok && p.Shapes() {
				l += sh.DelayNs() // a shaping limiter's wait is latency too
			}
			lat[ev.client] = append(lat[ev.client], l)
			reqs[ev.client][ev.req].served, reqs[ev.client][ev.req].latNs = true, l
			continue
		}
		if rx.Retry == RetryNone || ev.try >= rx.MaxRetries {
			c.res.GaveUp++
			continue
		}
		var sleepS float64
		if rx.Retry == RetryBackoff {
			sleepS = refBackoff(rx, ev.try, ev.sleepS, c.rng)
		}
		wait := int64(sleepS * 1e9)
		if rx.HonourRetryAfter {
			ra := RetryAfter(d, ev.t)
			if ra < 0 {
				c.res.GaveUp++
				continue
			}
			wait = max(wait, ra)
		}
		if ev.t+wait >= endNs {
			c.res.GaveUp++
			continue
		}
		if b := rx.Budget; b != nil {
			if b.Ratio*float64(inWindow(c.deposits, sec, budgetTTLS))-float64(inWindow(c.withdrawals, sec, budgetTTLS))+b.MinPerS*budgetTTLS < 1 {
				c.res.GaveUp++
				continue
			}
			c.withdrawals = append(c.withdrawals, sec)
		}
		c.seq++
		pending = append(pending, refEvent{t: ev.t + wait, isRetry: true, client: ev.client, seq: c.seq, req: ev.req, try: ev.try + 1, sleepS: sleepS})
	}
	out := make([]ClientResult, len(cls))
	res := make([]ClientReaction, len(cls))
	for i, c := range cls {
		out[i] = ClientResult{Offered: int64(len(times[i])), Admitted: c.served}
		for _, l := range lat[i] {
			c.res.DelayNs += l
		}
		res[i] = c.res
	}
	return out, res, reqs
}

// randomReaction returns a valid reaction with small numbers.
func randomReaction(rng *rand.Rand) Reaction {
	r := Reaction{Retry: RetryMode(rng.IntN(3))}
	if r.Retry != RetryNone {
		r.MaxRetries = 1 + rng.IntN(5)
		r.HonourRetryAfter = rng.IntN(3) == 0
		if rng.IntN(3) == 0 {
			r.Budget = &RetryBudget{Ratio: float64(rng.IntN(5)) / 10, MinPerS: float64(rng.IntN(3)) / 2}
		}
	}
	if r.Retry == RetryBackoff {
		r.BaseS, r.Jitter = []float64{0.001, 0.05, 0.5, 2}[rng.IntN(4)], Jitter(rng.IntN(4))
		if rng.IntN(2) == 0 {
			r.CapS = r.BaseS * float64(1+rng.IntN(20))
		}
	}
	if rng.IntN(4) == 0 {
		r.ThrottleK = []float64{1, 1.5, 2}[rng.IntN(3)]
	}
	return r
}

// The event simulation with reactions equals the reference loop on random
// small scenarios, policies and reactions, per client and with one key for
// all, and gives the same numbers on a second run (reused scratch).
func TestReactionsEqualReferenceLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 4))
	for trial := range 300 {
		sc := &Scenario{Name: "r", DurationS: 5 + rng.IntN(30), Arrivals: Arrivals{Process: ArrivalProcess(rng.IntN(3))}}
		for i := range 1 + rng.IntN(4) {
			c := Client{Name: fmt.Sprint(i), Class: Class(rng.IntN(2)), React: randomReaction(rng)}
			if c.Class == Abusive {
				c.Stage = StageCode
			}
			t0 := rng.IntN(sc.DurationS)
			c.Segments = []Segment{{T0: t0, T1: t0 + 1 + rng.IntN(sc.DurationS-t0), Rate: float64(1 + rng.IntN(12))}}
			sc.Clients = append(sc.Clients, c)
		}
		if !sc.Reacts() {
			sc.Clients[0].React = Reaction{Retry: RetryImmediate, MaxRetries: 2}
		}
		if trial%3 == 1 {
			for i := range sc.Clients {
				sc.Clients[i].Cost = 1 + rng.Int64N(4)
				sc.Clients[i].FailShare = rng.Float64()
			}
		}
		w, err := NewWorkload(sc)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		p := randomPolicy(rng, Algorithms[rng.IntN(len(Algorithms))])
		if p.Algorithm.Describe().blank == nil {
			continue
		}
		if trial%3 == 1 { // weighed: costs or count_if, retries repeat their request's
			p.Costed = sc.Costed()
			if rng.IntN(2) == 0 {
				p.CountIf = "401"
			}
			if p.Validate() != nil {
				continue
			}
		}
		shared := rng.IntN(3) == 0
		if shared {
			p.Key = KeyGlobal
		}
		seed, rep := rng.Uint64(), rng.IntN(4)
		s := w.NewSimulator()
		s.SetReplicate(seed, rep)
		times := w.Realise(seed, rep, nil)
		wantC, wantR := refReactions(w, p, times, seed, rep, shared)
		var out Outcome
		for run := range 2 {
			s.Run(p, &out)
			for i := range wantC {
				got := out.ClientReactions[i]
				got.MeanS, got.P99S = 0, 0
				gotC := out.Clients[i]
				gotC.BlockedNs = 0 // blocks: TestReactionsCountBlocks, the reference interpreter's test
				if gotC != wantC[i] || got != wantR[i] {
					t.Fatalf("trial %d run %d, %v (shared %v), client %d %+v: %+v %+v, reference %+v %+v",
						trial, run, p, shared, i, sc.Clients[i].React, out.Clients[i], got, wantC[i], wantR[i])
				}
			}
		}
	}
}

// Clients that retry are decided on their requests' responses and costs: a
// count_if counts their failures, and a cost above the limit is never
// admitted (both were decided as unknown responses of cost 1).
func TestReactionsWeighRequests(t *testing.T) {
	sc, err := ParseScenario([]byte(`
name: weighed retries
duration_s: 10
clients:
  - {name: failing, class: legit, segments: [[0, 10, 1]], fail_share: 1, on_reject: {retry: immediate, max_retries: 2}}
  - {name: costly, class: legit, segments: [[0, 10, 1]], cost: 3, on_reject: {retry: backoff, max_retries: 2, base_s: 0.5}}
`))
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    Policy
		want [2]int64
	}{
		{Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 2, CountIf: "401", Costed: true}, [2]int64{2, 0}}, // 401s count; a cost of 3 never fits 2
		{Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 2, CountIf: "500", Costed: true}, [2]int64{10, 0}},
	} {
		var out Outcome
		w.NewSimulator().Run(c.p, &out)
		if got := [2]int64{out.Clients[0].Admitted, out.Clients[1].Admitted}; got != c.want {
			t.Errorf("%s: served %v, want %v", c.p, got, c.want)
		}
	}
}

// A penalty box's blocks are counted with clients that retry, per client
// key or (key global) for everyone.
func TestReactionsCountBlocks(t *testing.T) {
	sc, err := ParseScenario([]byte(`
name: blocked retries
duration_s: 10
clients:
  - {name: a, class: legit, segments: [[0, 1, 3]], on_reject: {retry: immediate, max_retries: 1}}
  - {name: b, class: legit, segments: [[8, 9, 1]], on_reject: {retry: immediate, max_retries: 1}}
`))
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key     Key
		blocks  int64
		blocked [2]int64
	}{
		{KeyClient, 1, [2]int64{5e9, 0}},   // a: 1 admitted, the 2nd blocks a for 5 s
		{KeyGlobal, 1, [2]int64{5e9, 5e9}}, // everyone's key
	} {
		var out Outcome
		w.NewSimulator().Run(Policy{Algorithm: TokenBucket, Rate: 1, Capacity: 1, BlockS: 5, Key: c.key}, &out)
		if got := [2]int64{out.Clients[0].BlockedNs, out.Clients[1].BlockedNs}; out.Blocks != c.blocks || got != c.blocked || out.LegitBlockedS != float64(c.blocked[0]+c.blocked[1])/1e9 {
			t.Errorf("key %s: blocks %d, blocked ns %v, legit blocked %v s; want %d, %v", c.key, out.Blocks, got, out.LegitBlockedS, c.blocks, c.blocked)
		}
	}
}
