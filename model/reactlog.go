package model

// KeyReaction is what one key of a replayed log did under a policy, its
// requests sent by a client that reacts to rejections (docs/retries.md):
// its logged requests are the requests the client meant to send.
type KeyReaction struct {
	Offered   [4]int64 // intended requests by label (indexed by Stage; NoStage = legit)
	Served    [4]int64 // intended requests eventually admitted, by label
	Attempts  [4]int64 // requests that reached the limiter, retries included, by label
	GaveUp    int64    // intended requests never served
	Throttled int64    // requests the client rejected itself (adaptive throttling)
	// OfferedCost and ServedCost are Offered and Served in cost units, by
	// label, when the replay was weighed (KeyReplay.Weigh); 0 otherwise.
	OfferedCost, ServedCost [4]int64
	// Blocks are the blocks the policy's penalty box started on the key,
	// and BlockedNs their length before the replay's end, ns.
	Blocks, BlockedNs int64
}

// Delays pools added latencies of served requests (ns) over keys, for their
// mean and 99th percentile. The zero value is empty.
type Delays struct{ d delayStats }

// Reset empties x, keeping its storage.
func (x *Delays) Reset() { x.d.reset() }

// Merge adds y's latencies to x.
func (x *Delays) Merge(y *Delays) {
	x.d.n += y.d.n
	x.d.sumNs += y.d.sumNs
	x.d.positive = append(x.d.positive, y.d.positive...)
}

// MeanS is the mean latency, seconds (0 when empty).
func (x *Delays) MeanS() float64 { return x.d.meanS() }

// P99S is the 99th percentile by nearest rank, seconds (0 when empty). It
// reorders the latencies, not their sum.
func (x *Delays) P99S() float64 { return x.d.quantileS(0.99) }

// KeyReplay replays keys of a replayed log whose clients react, one key at
// a time, reusing its storage. One per goroutine.
type KeyReplay struct {
	r      *reactor
	shaped delayStats
	// costs and statuses weigh the next Replay's requests (Weigh).
	weighed  bool
	costs    []int64
	statuses []int16
}

// Weigh makes the next Replay weighed, for a policy with costs or
// count_if: intended request j costs costs[j] units and its response has
// status statuses[j]; a retry repeats its request, so it costs and is
// answered the same. The slices are read during that Replay alone.
func (k *KeyReplay) Weigh(costs []int64, statuses []int16) {
	k.weighed, k.costs, k.statuses = true, costs, statuses
}

// NewKeyReplay returns an empty KeyReplay.
func NewKeyReplay() *KeyReplay { return &KeyReplay{r: newReactor()} }

// Replay offers one key's requests (times ns, sorted; labels, one per
// request) and the retries its client's reaction rx makes to d, Reset
// first, in time order: at one time intended requests go before retries,
// retries in the order scheduled (as a scenario's client with its own
// key). Retries at or after endNs are not made. shapes adds a shaping
// limiter's delay to the latency (Policy.Shapes). Jitter and throttling
// draw from a stream of seed, the replicate and the key's name alone, so a
// key gives the same numbers whichever goroutine or shard replays it.
func (k *KeyReplay) Replay(d Decider, rx *Reaction, times []int64, labels []Stage, endNs int64, shapes bool, seed uint64, replicate int, name string, out *KeyReaction) {
	r := k.r
	r.startStream(rx, times, seed^reactSeed^keyStreamSalt, streamSeed(replicate, 0)^fnv1a(name))
	r.labels = labels
	if k.weighed {
		r.weigh(1, k.costs, k.statuses)
		k.weighed, k.costs, k.statuses = false, nil, nil
	}
	r.delays.reset()
	var shaped *delayStats
	if shapes {
		k.shaped.reset()
		shaped = &k.shaped
	}
	d.Reset()
	for _, _, ok := r.pending(); ok; _, _, ok = r.pending() {
		r.step(d, endNs, shaped)
	}
	*out = KeyReaction{Served: r.servedBy, Attempts: r.attemptsBy, GaveUp: r.res.GaveUp, Throttled: r.res.Throttled}
	out.Blocks, out.BlockedNs, _ = BlockStats(d, endNs)
	for j, l := range labels {
		out.Offered[l]++
		if r.weighed {
			c := int64(1)
			if r.costs != nil {
				c = r.costs[j]
			}
			out.OfferedCost[l] += c
		}
	}
	if r.weighed {
		out.ServedCost = r.servedCostBy
	}
}

// Delays adds the latencies of the last key's served requests: every
// label's to all, the legitimate requests' to legit (either may be nil).
func (k *KeyReplay) Delays(all, legit *Delays) {
	r := k.r
	if legit != nil {
		legit.Merge(&Delays{r.delays})
	}
	if all != nil {
		all.Merge(&Delays{r.delays})
		all.Merge(&Delays{r.other})
	}
}

// fnv1a is the 64-bit FNV-1a hash of s (hash/fnv's New64a, without its
// allocation per key).
func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// keyStreamSalt sets a log key's reaction stream apart from a scenario
// client's.
const keyStreamSalt = 0x6c6f675f6b657973

// SumNs is the latencies' sum, ns.
func (x *Delays) SumNs() int64 { return x.d.sumNs }
