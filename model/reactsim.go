package model

import (
	"fmt"
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
	Attempts              int64 // requests that reached the limiter, retries included
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
// makes, in time order against its key's decider.
type reactor struct {
	rx                  *Reaction
	times               []int64 // the client's intended requests
	next                int     // the next of them to send
	served              int64
	res                 ClientReaction
	pcg                 *rand.PCG
	rng                 *rand.Rand
	retries             retryQueue
	seq                 int64     // the retries this reactor scheduled
	counter             *int64    // numbers the retries: &seq, or a shared key's count
	budgetIn, budgetOut secWindow // deposits and withdrawals (RetryBudget)
	sent, accepted      secWindow // adaptive throttling's requests and accepts
	delays              delayStats
	// labels are the intended requests' labels (a replayed log's key), or
	// nil; with them the counts go by label too and delays holds the
	// legitimate requests' latencies alone, other the rest (reactlog.go).
	labels               []Stage
	attemptsBy, servedBy [4]int64
	other                delayStats
	// Weighed requests (a policy with costs or count_if): a retry repeats
	// its request, so it costs what the request cost and its response has
	// the request's status. costs (nil: cost each) and statuses (nil: 0)
	// are by intended request; servedCostBy counts the served units by
	// label (labels nil: all under NoStage).
	weighed      bool
	cost         int64
	costs        []int64
	statuses     []int16
	servedCostBy [4]int64
	// raOf is the decider ra was found for: the type assertion of
	// RetryAfter once per decider, not once per retry.
	raOf Decider
	ra   RetryAfterer
}

// reactSeed is the salt of the reactions' random streams, apart from the
// arrivals' (same seed and replicate).
const reactSeed = 0x72656163745f7278

func newReactor() *reactor {
	r := &reactor{pcg: rand.NewPCG(0, 0)}
	r.rng = rand.New(r.pcg)
	return r
}

// start readies the reactor for one client's intended requests times (ns,
// sorted) with reaction rx; its random draws come from (seed, replicate,
// client) alone.
func (r *reactor) start(rx *Reaction, times []int64, seed uint64, replicate, client int) {
	r.startStream(rx, times, seed^reactSeed, streamSeed(replicate, client))
}

// startStream is start with the random stream's two seeds given.
func (r *reactor) startStream(rx *Reaction, times []int64, seed1, seed2 uint64) {
	r.rx, r.times, r.next, r.retries, r.seq = rx, times, 0, r.retries[:0], 0
	r.counter = &r.seq
	r.served, r.res = 0, ClientReaction{}
	r.labels, r.attemptsBy, r.servedBy = nil, [4]int64{}, [4]int64{}
	r.weighed, r.cost, r.costs, r.statuses, r.servedCostBy = false, 1, nil, r.statuses[:0], [4]int64{}
	r.other.reset()
	r.pcg.Seed(seed1, seed2)
	r.budgetIn.reset(budgetTTLS)
	r.budgetOut.reset(budgetTTLS)
	r.sent.reset(throttleWindowS)
	r.accepted.reset(throttleWindowS)
	r.delays.reset()
}

// pending reports the time of the client's next request and whether it is
// a retry; ok is false when the client is done. At one time an intended
// request goes before retries, and retries go in the order scheduled.
func (r *reactor) pending() (t int64, isRetry, ok bool) {
	switch {
	case r.next < len(r.times) && (len(r.retries) == 0 || r.times[r.next] <= r.retries[0].t):
		return r.times[r.next], false, true
	case len(r.retries) > 0:
		return r.retries[0].t, true, true
	}
	return 0, false, false
}

// step sends the client's next request (pending must be ok) to d, the
// decider of its key; retries at or after endNs are not made. When shaped
// is not nil, d shapes and an admitted request's delay goes to shaped.
func (r *reactor) step(d Decider, endNs int64, shaped *delayStats) {
	rx := r.rx
	var ev retry
	if _, isRetry, _ := r.pending(); !isRetry {
		ev = retry{t: r.times[r.next], req: int32(r.next)}
		r.next++
		if rx.Budget != nil {
			r.budgetIn.add(ev.t/secondNs, 1)
		}
	} else {
		ev = r.retries.pop()
	}
	if rx.ThrottleK > 0 && r.throttles(ev.t) {
		r.res.Throttled++
		r.res.GaveUp++
		return
	}
	r.res.Attempts++
	if r.labels != nil {
		r.attemptsBy[r.labels[ev.req]]++
	}
	if r.allow(d, ev) {
		if rx.ThrottleK > 0 {
			r.accepted.add(ev.t/secondNs, 1)
		}
		r.served++
		lat := ev.t - r.times[ev.req]
		if shaped != nil {
			if sh, ok := d.(Shaper); ok {
				shaped.add(sh.DelayNs())
				lat += sh.DelayNs()
			}
		}
		if r.labels != nil {
			l := r.labels[ev.req]
			r.servedBy[l]++
			if l != NoStage {
				r.other.add(lat)
				return
			}
		}
		r.delays.add(lat)
		return
	}
	if !r.retry(d, ev, endNs) {
		r.res.GaveUp++
	}
}

// weigh makes the reactor's requests weighed: each costs costs[i] units
// (nil: cost each) and has response status statuses[i] (nil: 0).
func (r *reactor) weigh(cost int64, costs []int64, statuses []int16) {
	r.weighed, r.cost, r.costs, r.statuses = true, max(cost, 1), costs, statuses
}

// allow offers the attempt ev to d: weighed, when the reactor's requests
// are, with its request's cost and status.
func (r *reactor) allow(d Decider, ev retry) bool {
	if !r.weighed {
		return d.Allow(ev.t)
	}
	c, st := r.cost, 0
	if r.costs != nil {
		c = r.costs[ev.req]
	}
	if len(r.statuses) > 0 {
		st = int(r.statuses[ev.req])
	}
	ok := allowRequest(d.(decider), ev.t, c, st)
	if ok {
		l := NoStage
		if r.labels != nil {
			l = r.labels[ev.req]
		}
		r.servedCostBy[l] += c
	}
	return ok
}

// finish returns the client's served requests and reaction measures.
func (r *reactor) finish() (served int64, res ClientReaction) {
	r.res.DelayNs = r.delays.sumNs
	r.res.MeanS, r.res.P99S = r.delays.meanS(), r.delays.quantileS(0.99)
	return r.served, r.res
}

// throttles counts a request the client is about to send at t and reports
// whether adaptive throttling rejects it locally.
func (r *reactor) throttles(t int64) bool {
	sec := t / secondNs
	req, acc := float64(r.sent.sum(sec)), float64(r.accepted.sum(sec))
	p := max(0, (req-r.rx.ThrottleK*acc)/(req+1))
	r.sent.add(sec, 1)
	return p > 0 && r.uniform() < p
}

// retry schedules the retry of ev, rejected at ev.t, and reports whether
// the client retries.
func (r *reactor) retry(d Decider, ev retry, endNs int64) bool {
	rx := r.rx
	if rx.Retry == RetryNone || int(ev.try) >= rx.MaxRetries {
		return false
	}
	var sleepS float64
	if rx.Retry == RetryBackoff {
		sleepS = rx.backoffS(int(ev.try), ev.sleep, r.uniform)
	}
	wait := durationNs(sleepS)
	if rx.HonourRetryAfter {
		ra := r.retryAfter(d, ev.t)
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
	*r.counter++
	r.retries.push(retry{t: next, seq: *r.counter, req: ev.req, try: ev.try + 1, sleep: sleepS})
	return true
}

// uniform is r.rng.Float64() (the same draw, as math/rand/v2 makes it)
// without the call through rand.Source.
func (r *reactor) uniform() float64 {
	return float64(r.pcg.Uint64()<<11>>11) / (1 << 53)
}

// retryAfter is RetryAfter(d, t), asserting d's type once per decider.
func (r *reactor) retryAfter(d Decider, t int64) int64 {
	if d != r.raOf {
		r.raOf = d
		r.ra, _ = d.(RetryAfterer)
	}
	if r.ra != nil {
		return r.ra.RetryAfter(t)
	}
	return RetryAfter(d, t)
}

// durationNs is s seconds in ns, saturating.
func durationNs(s float64) int64 {
	if !(s < float64(maxRetryAfterNs)/1e9) {
		return maxRetryAfterNs
	}
	return int64(s * 1e9)
}

// reactSim is a Simulator's scratch for clients that react.
type reactSim struct {
	rs    []*reactor // by client
	fluid [][]int64  // fluid clients' requests, by client
	// fluidDone says fluid holds them (they depend on the workload alone).
	fluidDone bool
	queue     clientQueue // shared key: the clients by their next request
	seq       int64       // shared key: the retries scheduled
	legit     delayStats  // added latency of legitimate served requests
	pcg       *rand.PCG   // draws the weighed clients' statuses
	rng       *rand.Rand
}

// ReactionsSupport reports why policy p cannot run on a scenario whose
// clients react, or nil: reactions are simulated with one key per client
// (key client, address or account: with reactions each client has its own)
// or one key for all (key global), on one node.
func ReactionsSupport(p Policy) error {
	switch {
	case p.Key == KeyBoth || p.Key == KeyOrg:
		return fieldErr("key", "clients that react are simulated with key client, address, account or global, not %s", p.Key)
	case p.Nodes > 1 || p.State != Local || p.SyncMs != 0 || p.LB != RoundRobin:
		return fieldErr("nodes", "clients that react are simulated on one node (nodes 1, state local, no sync_ms)")
	}
	if p.Stack != nil {
		for i, c := range p.Stack.Components {
			if c.Key == KeyGlobal || c.Key == KeyOrg { // shared by clients, which react one at a time
				return fieldErr(fmt.Sprintf("all_of[%d].key", i), "clients that react are simulated with an all_of's components on each client's own key, not %s", c.Key)
			}
		}
	}
	return nil
}

// runReactions is Run for a scenario whose clients react: each client's
// requests and the retries its reaction makes go to its key's decider in
// time order (with key global, every client's, merged in time order).
func (s *Simulator) runReactions(p Policy, out *Outcome) {
	if err := ReactionsSupport(p); err != nil {
		panic("model: " + p.String() + ": " + err.Error()) // the spec reader refuses such points
	}
	w := s.w
	sc := w.Scenario
	nc := len(sc.Clients)
	if s.react == nil {
		s.react = &reactSim{}
	}
	rs := s.react
	for len(rs.rs) < nc {
		rs.rs = append(rs.rs, newReactor())
	}
	out.ClientReactions = extend(out.ClientReactions, nc)[:nc]
	var shaped *delayStats
	if p.Shapes() {
		s.delays.reset()
		shaped = &s.delays
	}
	d := s.decider(p)
	endNs := int64(sc.DurationS) * secondNs
	if sc.Arrivals.Process == Fluid && !rs.fluidDone {
		// A fluid workload's requests are the same for every policy and
		// replicate: made once.
		rs.fluid = extend(rs.fluid, nc)
		for i := range nc {
			rs.fluid[i] = rs.fluid[i][:0]
			for t, x := range s.series(i) {
				for range x {
					rs.fluid[i] = append(rs.fluid[i], int64(t)*secondNs)
				}
			}
		}
		rs.fluidDone = true
	}
	for i := range nc {
		var times []int64
		if sc.Arrivals.Process == Fluid {
			times = rs.fluid[i]
		} else {
			times = s.events[i]
		}
		rs.rs[i].start(&sc.Clients[i].React, times, s.keySeed, s.keyRep, sc.stream(i))
		if p.Weighed() {
			rs.weigh(rs.rs[i], &sc.Clients[i], times, s.keySeed, s.keyRep, sc.stream(i))
		}
	}
	// A penalty box's blocks: a client's key is its own, or (key global)
	// everyone's, so each client is blocked while it is.
	blockedNs := make([]int64, nc)
	var blocks int64
	if p.Key == KeyGlobal {
		rs.runShared(d, nc, endNs, shaped)
		if n, ns, ok := BlockStats(d, endNs); ok {
			blocks = n
			for i := range blockedNs {
				blockedNs[i] = ns
			}
		}
	} else {
		for i := range nc {
			r := rs.rs[i]
			d.Reset()
			for _, _, ok := r.pending(); ok; _, _, ok = r.pending() {
				r.step(d, endNs, shaped)
			}
			if n, ns, ok := BlockStats(d, endNs); ok {
				blocks += n
				blockedNs[i] = ns
			}
		}
	}
	rs.legit.reset()
	var rm ReactionMetrics
	for i := range nc {
		r := rs.rs[i]
		served, res := r.finish()
		out.Clients[i] = ClientResult{Offered: int64(len(r.times)), Admitted: served, BlockedNs: blockedNs[i]}
		out.ClientReactions[i] = res
		rm.GaveUp += res.GaveUp
		rm.Throttled += res.Throttled
		if w.kinds[i] != kindLegit {
			rm.AttemptsAbusive += res.Attempts
			continue
		}
		rm.AttemptsLegit += res.Attempts
		rs.legit.n += r.delays.n
		rs.legit.sumNs += r.delays.sumNs
		rs.legit.positive = append(rs.legit.positive, r.delays.positive...)
	}
	out.Metrics = w.Metrics(out.Clients)
	w.costMetrics(p, out)
	out.Blocks = blocks
	if shaped != nil {
		out.MeanDelayS, out.P99DelayS = shaped.meanS(), shaped.quantileS(0.99)
	}
	rm.LegitDelayMeanS, rm.LegitDelayP99S = rs.legit.meanS(), rs.legit.quantileS(0.99)
	rm.Finish(&out.Metrics)
	out.Metrics.Reactions = rm
}

// weigh gives client c's reactor r (started on its intended requests
// times) their cost and statuses: the statuses drawn as a weighed run
// without reactions draws them (weighClient), one per intended request.
func (rs *reactSim) weigh(r *reactor, c *Client, times []int64, seed uint64, replicate, stream int) {
	if rs.pcg == nil {
		rs.pcg = rand.NewPCG(0, 0)
		rs.rng = rand.New(rs.pcg)
	}
	seedFails(rs.pcg, seed, replicate, stream)
	st := r.statuses[:0]
	if cap(st) < len(times) {
		st = make([]int16, 0, len(times))
	}
	for range times {
		st = append(st, int16(c.nextStatus(rs.rng)))
	}
	r.weigh(c.RequestCost(), nil, st)
}

// Finish derives the measures that follow from the attempts and m's
// judged counts (the intended requests): the total attempts, the intended
// requests served and the amplification, and marks rm measured.
func (rm *ReactionMetrics) Finish(m *Metrics) {
	rm.Measured = true
	rm.Attempts = rm.AttemptsLegit + rm.AttemptsAbusive
	rm.IntendedServedLegit = m.OfferedLegit - m.FalseCut
	rm.IntendedServedAbusive = m.Missed
	rm.AmplificationLegit = ratioOr0(rm.AttemptsLegit, m.OfferedLegit)
	rm.AmplificationAbusive = ratioOr0(rm.AttemptsAbusive, m.OfferedAbusive)
}

// ratioOr0 is a/b, 0 when b is 0.
func ratioOr0(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
