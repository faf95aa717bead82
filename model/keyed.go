package model

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// Keyed and distributed simulation (docs/keys.md). Simulator.Run takes this
// path when the scenario declares addresses or accounts or the policy has a
// key other than the client, several nodes or shared state; the lesson's
// one-key-per-client path never comes here.
//
// Every request of every client is merged into one stream in time order
// (ties in scenario client order). The load balancer sends request j of the
// stream to a node; the node decides on the limiters of the request's keys:
//   - state local: each node has its own limiter per key;
//   - state shared, sync_ms 0: one limiter per key for all nodes, updated
//     atomically (a Redis Lua script): the single-node result, for any N;
//   - state shared, sync_ms L > 0: the store applies a node's write L ms after
//     the node made it. A node decides on the store's state plus its own
//     writes still in flight, so writes of other nodes are invisible for L.

// keyedReq is one request of the merged stream.
type keyedReq struct {
	t      int64 // ns since the start
	client int32
	addr   int32 // address id (pools shared between clients)
	acct   int32 // account id
	status int16 // the response's status (weighed.go)
}

// queuedCharge is a write on its way to the shared store.
type queuedCharge struct {
	t   int64
	key int32
}

type keyedSim struct {
	w            *Workload
	nAddr, nAcct int
	addrBase     []int32 // per client: first address id
	acctBase     []int32 // per client: first account id
	orgOf        []int32 // per client: organisation id (key org)
	fluidTimes   [][]int64
	reqs         []keyedReq
	seed         uint64
	rep          int
	ready        bool

	// Per run, reused.
	stores  []decider   // by slot: node·keys + key (local) or key (shared)
	algs    []Algorithm // algorithm each store was made for
	gen     []uint32    // run generation that last reset the slot
	run     uint32
	touched []int32 // slots with live state at the last sample, or used since
	inSet   []bool  // by slot: in touched
	views   [2]decider
	pending [][]int64 // by node·keys + key: own writes still in flight (lag)
	queue   []queuedCharge
	acct    []uint8 // by account: 1 legit request seen, 2 legit request cut

	// The penalty box's blocks (penaltybox_keyed.go) and the slot of the
	// last single-key decision.
	blocks   keyedBlocks
	lastSlot int32
}

func newKeyedSim(w *Workload) *keyedSim {
	k := &keyedSim{w: w}
	addrPools, acctPools := map[string]int{}, map[string]int{}
	for _, c := range w.Scenario.Clients {
		if p := c.Keys.AddressPool; p != "" {
			addrPools[p] = max(addrPools[p], c.Keys.addresses())
		}
		if p := c.Keys.AccountPool; p != "" {
			acctPools[p] = max(acctPools[p], c.Keys.accounts())
		}
	}
	addrAt, acctAt := map[string]int32{}, map[string]int32{}
	for _, c := range w.Scenario.Clients {
		k.addrBase = append(k.addrBase, poolBase(c.Keys.AddressPool, c.Keys.addresses(), addrPools, addrAt, &k.nAddr))
		k.acctBase = append(k.acctBase, poolBase(c.Keys.AccountPool, c.Keys.accounts(), acctPools, acctAt, &k.nAcct))
	}
	k.orgOf = w.Scenario.orgIDs()
	return k
}

// poolBase returns the first id of a client's keys, allocating a range of
// size n (own keys) or of the pool's size on the pool's first use.
func poolBase(pool string, n int, sizes map[string]int, at map[string]int32, next *int) int32 {
	if pool == "" {
		b := int32(*next)
		*next += n
		return b
	}
	if b, ok := at[pool]; ok {
		return b
	}
	b := int32(*next)
	at[pool] = b
	*next += sizes[pool]
	return b
}

// prepare builds the merged request stream of realisation (seed, rep).
func (k *keyedSim) prepare(s *Simulator) {
	stochastic := k.w.Stochastic() || k.w.Scenario.keysStochastic()
	if k.ready && (!stochastic || (k.seed == s.keySeed && k.rep == s.keyRep)) {
		return
	}
	k.seed, k.rep, k.ready = s.keySeed, s.keyRep, true
	sc := k.w.Scenario
	times := s.events
	if sc.Arrivals.Process == Fluid {
		if k.fluidTimes == nil {
			k.fluidTimes = k.w.Realise(0, 0, nil)
		}
		times = k.fluidTimes
	}
	k.reqs = k.reqs[:0]
	pcg := rand.NewPCG(0, 0)
	rng := rand.New(pcg)
	fpcg := rand.NewPCG(0, 0)
	frng := rand.New(fpcg)
	for i := range sc.Clients {
		seedFails(fpcg, k.seed, k.rep, sc.stream(i))
		ck := sc.Clients[i].Keys
		na, nc := ck.addresses(), ck.accounts()
		pcg.Seed(k.seed, streamSeed(k.rep, sc.stream(i))^0x6b657973) // "keys"
		for j, t := range times[i] {
			a, c := j%na, j%nc
			if ck.Spread == SpreadRandom {
				a, c = rng.IntN(na), rng.IntN(nc)
			}
			k.reqs = append(k.reqs, keyedReq{t: t, client: int32(i), addr: k.addrBase[i] + int32(a), acct: k.acctBase[i] + int32(c),
				status: int16(sc.Clients[i].nextStatus(frng))})
		}
	}
	slices.SortStableFunc(k.reqs, func(a, b keyedReq) int { return cmp.Compare(a.t, b.t) })
}

// keySpace is the number of keys a policy's key has; with KeyBoth the
// addresses come first, then the accounts.
func (k *keyedSim) keySpace(key Key) int {
	switch key {
	case KeyAddress:
		return k.nAddr
	case KeyAccount:
		return k.nAcct
	case KeyBoth:
		return k.nAddr + k.nAcct
	case KeyGlobal:
		return 1
	case KeyOrg:
		return k.w.Scenario.orgCount()
	}
	return len(k.w.Scenario.Clients)
}

// keysOf returns the keys a request must pass (one, or two for KeyBoth).
func (k *keyedSim) keysOf(key Key, r *keyedReq) (int32, int32, int) {
	switch key {
	case KeyAddress:
		return r.addr, 0, 1
	case KeyAccount:
		return r.acct, 0, 1
	case KeyBoth:
		return r.addr, int32(k.nAddr) + r.acct, 2
	case KeyGlobal:
		return 0, 0, 1
	case KeyOrg:
		return k.orgOf[r.client], 0, 1
	}
	return r.client, 0, 1
}

// store returns slot's limiter for p, resetting it on its first use in a run.
func (k *keyedSim) store(p Policy, slot int32) decider {
	if !k.inSet[slot] {
		k.inSet[slot] = true
		k.touched = append(k.touched, slot)
	}
	if k.gen[slot] == k.run {
		return k.stores[slot]
	}
	k.gen[slot] = k.run
	if d := k.stores[slot]; d != nil && k.algs[slot] == p.Algorithm && !p.modified() {
		d.configure(p)
		return d
	}
	k.stores[slot] = newDecider(p)
	k.algs[slot] = p.Algorithm
	if p.modified() {
		k.algs[slot] = 0 // a wrapped decider is not reconfigured for another policy
	}
	return k.stores[slot]
}

// runKeyed is Run for keyed scenarios and distributed policies: one pass
// over the requests in time order, each decided on its key's state (and
// the nodes' views of it), kept in one function because its state lives in
// locals across the pass.
func (s *Simulator) runKeyed(p Policy, out *Outcome) {
	w := s.w
	if s.keyed == nil {
		s.keyed = newKeyedSim(w)
	}
	k := s.keyed
	k.prepare(s)
	for i := range out.Clients {
		out.Clients[i] = ClientResult{}
	}
	nodes := max(1, p.Nodes)
	nKeys := k.keySpace(p.Key)
	lagNs := int64(math.Round(p.SyncMs * 1e6))
	shared := p.State == Shared
	slots := nKeys
	if !shared {
		slots = nodes * nKeys
	}
	k.run++
	if k.run == 0 { // wrapped: forget every generation
		clear(k.gen)
		k.run = 1
	}
	k.stores, k.algs, k.gen = extend(k.stores, slots), extend(k.algs, slots), extend(k.gen, slots)
	k.inSet = extend(k.inSet, slots)
	for _, slot := range k.touched {
		k.inSet[slot] = false
	}
	k.touched = k.touched[:0]
	if lagNs > 0 {
		need := nodes * nKeys
		k.pending = extend(k.pending, need)
		for i := range need {
			k.pending[i] = k.pending[i][:0]
		}
		k.queue = k.queue[:0]
	}
	k.acct = extend(k.acct, k.nAcct)[:k.nAcct]
	clear(k.acct)
	var delays *delayStats
	if p.Shapes() && p.Key != KeyBoth && lagNs == 0 {
		s.delays.reset()
		delays = &s.delays
	}
	cr := countsRejected(p.Algorithm)
	box := blocksKeys(p) // Validate: a single key, no lag
	if box {
		k.blocks.reset(len(w.Scenario.Clients))
	}
	weighed := p.Weighed() // one key, no lag (Validate)
	var lbRng *rand.Rand
	if p.LB == RandomLB && nodes > 1 {
		lbRng = rand.New(rand.NewPCG(s.keySeed, streamSeed(s.keyRep, -1)^0x6c62)) // "lb"
	}
	var peakKeys, peakBytes int64
	nextSample := secondNs
	qHead := 0
	for j := range k.reqs {
		r := &k.reqs[j]
		for r.t >= nextSample {
			k.sample(nextSample, &peakKeys, &peakBytes)
			nextSample += secondNs
		}
		node := 0
		if nodes > 1 {
			if lbRng != nil {
				node = lbRng.IntN(nodes)
			} else {
				node = j % nodes
			}
		}
		k1, k2, nk := k.keysOf(p.Key, r)
		var ok bool
		switch {
		case lagNs > 0:
			for ; qHead < len(k.queue) && k.queue[qHead].t+lagNs <= r.t; qHead++ {
				q := k.queue[qHead]
				k.store(p, q.key).charge(q.t)
			}
			ok = k.decideLagged(p, node, nKeys, [2]int32{k1, k2}, nk, r.t, lagNs, cr)
		default:
			base := int32(0)
			if !shared {
				base = int32(node * nKeys)
			}
			d1 := k.store(p, base+k1)
			k.lastSlot = base + k1
			if nk == 1 {
				if weighed {
					ok = d1.(RequestDecider).AllowRequest(r.t, w.Scenario.Clients[r.client].RequestCost(), int(r.status))
				} else if delays != nil {
					if ok = d1.Allow(r.t); ok {
						delays.add(d1.(Shaper).DelayNs())
					}
				} else {
					ok = d1.Allow(r.t)
				}
				break
			}
			d2 := k.store(p, base+k2)
			ok1, ok2 := d1.peek(r.t), d2.peek(r.t)
			ok = ok1 && ok2
			if ok || (!ok1 && cr) {
				d1.Allow(r.t)
			}
			if ok || (!ok2 && cr) {
				d2.Allow(r.t)
			}
		}
		if !ok && box {
			k.blocks.observe(k, p.Key, k.stores[k.lastSlot], r)
		}
		res := &out.Clients[r.client]
		res.Offered++
		if ok {
			res.Admitted++
		}
		if w.Scenario.Clients[r.client].Class == Legit {
			k.acct[r.acct] |= 1
			if !ok {
				k.acct[r.acct] |= 2
			}
		}
	}
	for end := int64(w.Scenario.DurationS) * secondNs; nextSample <= end; nextSample += secondNs {
		k.sample(nextSample, &peakKeys, &peakBytes)
	}
	out.Metrics = w.Metrics(out.Clients)
	out.LegitAccounts, out.LegitAccountsLocked = 0, 0
	for _, f := range k.acct {
		if f&1 != 0 {
			out.LegitAccounts++
		}
		if f&2 != 0 {
			out.LegitAccountsLocked++
		}
	}
	out.StateMeasured, out.StateKeysPeak, out.StateBytesPeak = true, peakKeys, peakBytes
	if box {
		horizon := int64(w.Scenario.DurationS) * secondNs
		k.blocks.collect(k, p.Key, nKeys, horizon)
		k.blocks.finish(k.w, out, horizon)
	}
	w.costMetrics(p, out)
	if delays != nil {
		out.MeanDelayS, out.P99DelayS = delays.meanS(), delays.quantileS(0.99)
	}
}

// sample measures the live keys and state bytes at t and raises the peaks.
// Keys without live state leave the sample set until they are used again.
func (k *keyedSim) sample(t int64, peakKeys, peakBytes *int64) {
	var live, bytes int64
	for i := 0; i < len(k.touched); {
		slot := k.touched[i]
		if ok, b := k.stores[slot].stateSize(t); ok {
			live++
			bytes += b
			i++
			continue
		}
		k.inSet[slot] = false
		last := len(k.touched) - 1
		k.touched[i] = k.touched[last]
		k.touched = k.touched[:last]
	}
	*peakKeys, *peakBytes = max(*peakKeys, live), max(*peakBytes, bytes)
}

// decideLagged decides a request at t on node with shared state and a
// positive lag: each key's view is the store's limiter plus the node's own
// writes in flight. Charged keys (all when every key passes; otherwise those
// whose algorithm counts its own rejections) are queued for the store.
func (k *keyedSim) decideLagged(p Policy, node, nKeys int, keys [2]int32, nk int, t, lagNs int64, cr bool) bool {
	var oks [2]bool
	all := true
	for i := range nk {
		m := k.store(p, keys[i])
		pend := k.pending[node*nKeys+int(keys[i])]
		drop := 0
		for drop < len(pend) && pend[drop]+lagNs <= t {
			drop++
		}
		pend = pend[:copy(pend, pend[drop:])]
		k.pending[node*nKeys+int(keys[i])] = pend
		v := m
		if len(pend) > 0 {
			k.views[i] = m.cloneInto(k.views[i])
			v = k.views[i]
			for _, te := range pend {
				v.charge(te)
			}
		}
		oks[i] = v.peek(t)
		all = all && oks[i]
	}
	for i := range nk {
		if all || (!oks[i] && cr) {
			k.queue = append(k.queue, queuedCharge{t: t, key: keys[i]})
			slot := node*nKeys + int(keys[i])
			k.pending[slot] = append(k.pending[slot], t)
		}
	}
	return all
}

// extend returns s with length at least n, keeping its elements.
func extend[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	return append(s, make([]T, n-len(s))...)
}

// Request is one request of a workload's merged stream, with its keys.
type Request struct {
	TNs     int64 // arrival, ns since the start
	Client  int   // index in the scenario
	Address int   // address id (clients of one address_pool share ids)
	Account int   // account id (likewise per account_pool)
}

// Requests returns every request of realisation (seed, replicate) in the
// order the keyed simulation sees them (time, then scenario client order).
// Replaying them through one limiter per key reproduces Run's decisions.
func (w *Workload) Requests(seed uint64, replicate int) []Request {
	s := w.NewSimulator()
	s.SetReplicate(seed, replicate)
	k := newKeyedSim(w)
	k.prepare(s)
	out := make([]Request, len(k.reqs))
	for i, r := range k.reqs {
		out[i] = Request{TNs: r.t, Client: int(r.client), Address: int(r.addr), Account: int(r.acct)}
	}
	return out
}
