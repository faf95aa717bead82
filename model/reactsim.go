package model

import (
	"container/heap"
	"math/rand/v2"
)

// ClientReaction is what a client that reacts did under one policy, beside
// its ClientResult (whose Offered counts the requests it meant to send, and
// Admitted those eventually served).
type ClientReaction struct {
	Attempts  int64   // requests that reached the limiter, retries included
	GaveUp    int64   // intended requests never served
	Throttled int64   // requests the client rejected itself (adaptive throttling)
	DelayNs   int64   // summed added latency of the served requests, ns
	MeanS     float64 // mean added latency of the served requests, s
	P99S      float64 // its 99th percentile (nearest rank), s
}

// ReactionMetrics are the reaction columns of a point (Metrics.Reactions):
// zero unless the scenario has a client that reacts (Measured).
type ReactionMetrics struct {
	Measured              bool
	AttemptsLegit         int64 // requests of legitimate clients that reached the limiter
	AttemptsAbusive       int64
	GaveUp                int64 // intended requests never served, all clients
	Throttled             int64 // requests rejected by the clients themselves
	LegitDelayMeanS       float64
	LegitDelayP99S        float64
	IntendedServedLegit   int64 // = OfferedLegit - FalseCut
	IntendedServedAbusive int64 // = Missed
	AmplificationLegit    float64
	AmplificationAbusive  float64
}

// reactor replays one client's requests, and the retries its reaction
// makes, in time order against one key's decider. One per Simulator.
type reactor struct {
	rx                  *Reaction
	pcg                 *rand.PCG
	rng                 *rand.Rand
	retries             retryQueue
	seq                 int64
	budgetIn, budgetOut secWindow // deposits and withdrawals (RetryBudget)
	sent, accepted      secWindow // adaptive throttling's requests and accepts
	delays              delayStats
}

// retry is a retry waiting in the queue.
type retry struct {
	t     int64   // when it is sent, ns
	seq   int64   // order of scheduling, among retries at one time
	req   int32   // the intended request it retries (index in times)
	try   int32   // 1 for the first retry
	sleep float64 // the sleep before it, s (decorrelated jitter)
}

// retryQueue is a min-heap of retries by (t, seq) (container/heap).
type retryQueue []retry

func (q retryQueue) Len() int { return len(q) }
func (q retryQueue) Less(i, j int) bool {
	return q[i].t < q[j].t || q[i].t == q[j].t && q[i].seq < q[j].seq
}
func (q retryQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *retryQueue) Push(x any)   { *q = append(*q, x.(retry)) }
func (q *retryQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// reactSeed is the salt of the reactions' random streams, apart from the
// arrivals' (same seed and replicate).
const reactSeed = 0x72656163745f7278

func newReactor() *reactor {
	r := &reactor{pcg: rand.NewPCG(0, 0)}
	r.rng = rand.New(r.pcg)
	return r
}

// run replays times (one client's intended requests, ns, sorted) against d
// (reset) with reaction rx; retries at or after endNs are not made. The
// random draws come from (seed, replicate, client) alone. When sh is not
// nil, d shapes and every admitted request's delay goes to shaped.
func (r *reactor) run(d decider, rx *Reaction, times []int64, endNs int64, seed uint64, replicate, client int, shaped *delayStats) (served int64, res ClientReaction) {
	r.rx, r.retries, r.seq = rx, r.retries[:0], 0
	r.pcg.Seed(seed^reactSeed, streamSeed(replicate, client))
	r.budgetIn.reset(budgetTTLS)
	r.budgetOut.reset(budgetTTLS)
	r.sent.reset(throttleWindowS)
	r.accepted.reset(throttleWindowS)
	r.delays.reset()
	sh, _ := d.(Shaper)
	d.Reset()
	i := 0
	for i < len(times) || len(r.retries) > 0 {
		var ev retry
		if i < len(times) && (len(r.retries) == 0 || times[i] <= r.retries[0].t) {
			ev = retry{t: times[i], req: int32(i)}
			i++
			if rx.Budget != nil {
				r.budgetIn.add(ev.t/secondNs, 1)
			}
		} else {
			ev = heap.Pop(&r.retries).(retry)
		}
		if rx.ThrottleK > 0 && r.throttles(ev.t) {
			res.Throttled++
			res.GaveUp++
			continue
		}
		res.Attempts++
		if d.Allow(ev.t) {
			if rx.ThrottleK > 0 {
				r.accepted.add(ev.t/secondNs, 1)
			}
			served++
			lat := ev.t - times[ev.req]
			if shaped != nil && sh != nil {
				shaped.add(sh.DelayNs())
				lat += sh.DelayNs()
			}
			r.delays.add(lat)
			continue
		}
		if !r.retry(d, ev, endNs) {
			res.GaveUp++
		}
	}
	res.DelayNs = r.delays.sumNs
	res.MeanS, res.P99S = r.delays.meanS(), r.delays.quantileS(0.99)
	return served, res
}

// throttles counts a request the client is about to send at t and reports
// whether adaptive throttling rejects it locally.
func (r *reactor) throttles(t int64) bool {
	sec := t / secondNs
	req, acc := float64(r.sent.sum(sec)), float64(r.accepted.sum(sec))
	p := max(0, (req-r.rx.ThrottleK*acc)/(req+1))
	r.sent.add(sec, 1)
	return p > 0 && r.rng.Float64() < p
}

// retry schedules the retry of ev, rejected at ev.t, and reports whether
// the client retries.
func (r *reactor) retry(d decider, ev retry, endNs int64) bool {
	rx := r.rx
	if rx.Retry == RetryNone || int(ev.try) >= rx.MaxRetries {
		return false
	}
	var sleepS float64
	if rx.Retry == RetryBackoff {
		sleepS = rx.backoffS(int(ev.try), ev.sleep, r.rng.Float64)
	}
	wait := durationNs(sleepS)
	if rx.HonourRetryAfter {
		ra := RetryAfter(d, ev.t)
		if ra < 0 {
			return false
		}
		wait = max(wait, ra)
	}
	next := ev.t + min(wait, endNs)
	if next >= endNs {
		return false
	}
	if b := rx.Budget; b != nil {
		sec := ev.t / secondNs
		balance := b.Ratio*float64(r.budgetIn.sum(sec)) - float64(r.budgetOut.sum(sec)) + b.MinPerS*budgetTTLS
		if balance < 1 {
			return false
		}
		r.budgetOut.add(sec, 1)
	}
	r.seq++
	heap.Push(&r.retries, retry{t: next, seq: r.seq, req: ev.req, try: ev.try + 1, sleep: sleepS})
	return true
}

// durationNs is s seconds in ns, saturating.
func durationNs(s float64) int64 {
	if !(s < float64(maxRetryAfterNs)/1e9) {
		return maxRetryAfterNs
	}
	return int64(s * 1e9)
}

// secWindow is a sum over the trailing n whole seconds (the current one
// included), kept per second.
type secWindow struct {
	sums  []int64 // by second mod n
	last  int64   // the latest second seen
	total int64
}

func (w *secWindow) reset(n int) {
	if len(w.sums) != n {
		w.sums = make([]int64, n)
	}
	clear(w.sums)
	w.last, w.total = 0, 0
}

// advance drops the seconds that left the window by sec (not before last).
func (w *secWindow) advance(sec int64) {
	n := int64(len(w.sums))
	if sec-w.last >= n {
		clear(w.sums)
		w.total = 0
	} else {
		for s := w.last + 1; s <= sec; s++ {
			w.total -= w.sums[s%n]
			w.sums[s%n] = 0
		}
	}
	w.last = max(w.last, sec)
}

func (w *secWindow) add(sec, v int64) {
	w.advance(sec)
	w.sums[sec%int64(len(w.sums))] += v
	w.total += v
}

func (w *secWindow) sum(sec int64) int64 {
	w.advance(sec)
	return w.total
}

// reactSim is a Simulator's scratch for clients that react.
type reactSim struct {
	r     *reactor
	times []int64    // a fluid client's requests
	legit delayStats // added latency of legitimate served requests
}

// runReactions is Run for a scenario whose clients react (one key per
// client, policies not distributed): each client's requests and retries
// go through its own decider in time order.
func (s *Simulator) runReactions(p Policy, out *Outcome) {
	w := s.w
	sc := w.Scenario
	nc := len(sc.Clients)
	if s.react == nil {
		s.react = &reactSim{r: newReactor()}
	}
	rs := s.react
	out.ClientReactions = extend(out.ClientReactions, nc)[:nc]
	var shaped *delayStats
	if p.Shapes() {
		s.delays.reset()
		shaped = &s.delays
	}
	d := s.decider(p)
	endNs := int64(sc.DurationS) * secondNs
	rs.legit.reset()
	var rm ReactionMetrics
	for i := range nc {
		var times []int64
		if sc.Arrivals.Process == Fluid {
			rs.times = rs.times[:0]
			for t, x := range s.series(i) {
				for range x {
					rs.times = append(rs.times, int64(t)*secondNs)
				}
			}
			times = rs.times
		} else {
			times = s.events[i]
		}
		served, res := rs.r.run(d, &sc.Clients[i].React, times, endNs, s.keySeed, s.keyRep, i, shaped)
		out.Clients[i] = ClientResult{Offered: int64(len(times)), Admitted: served}
		out.ClientReactions[i] = res
		rm.GaveUp += res.GaveUp
		rm.Throttled += res.Throttled
		if w.kinds[i] != kindLegit {
			rm.AttemptsAbusive += res.Attempts
			continue
		}
		rm.AttemptsLegit += res.Attempts
		rs.legit.n += rs.r.delays.n
		rs.legit.sumNs += rs.r.delays.sumNs
		rs.legit.positive = append(rs.legit.positive, rs.r.delays.positive...)
	}
	out.Metrics = w.Metrics(out.Clients)
	if shaped != nil {
		out.MeanDelayS, out.P99DelayS = shaped.meanS(), shaped.quantileS(0.99)
	}
	rm.Measured = true
	rm.IntendedServedLegit = out.OfferedLegit - out.FalseCut
	rm.IntendedServedAbusive = out.Missed
	rm.AmplificationLegit = ratioOr0(rm.AttemptsLegit, out.OfferedLegit)
	rm.AmplificationAbusive = ratioOr0(rm.AttemptsAbusive, out.OfferedAbusive)
	rm.LegitDelayMeanS, rm.LegitDelayP99S = rs.legit.meanS(), rs.legit.quantileS(0.99)
	out.Metrics.Reactions = rm
}

// ratioOr0 is a/b, 0 when b is 0.
func ratioOr0(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
