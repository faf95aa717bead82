package model

import (
	"cmp"
	"slices"
)

// keyedBlocks attributes a keyed run's penalty-box blocks to clients: a
// block of a key blocks every client whose requests use that key (its
// addresses or accounts, every client for key: global), and a client's
// blocked time is the union of its keys' blocks up to the scenario's end.
type keyedBlocks struct {
	blocks  int64
	until   []int64 // by client: the end of the latest block counted
	ns      []int64 // by client: blocked time counted, ns
	clients map[Key][][]int32
}

func (b *keyedBlocks) reset(nc int) {
	b.blocks = 0
	b.until, b.ns = extend(b.until, nc)[:nc], extend(b.ns, nc)[:nc]
	clear(b.until)
	clear(b.ns)
}

// observe counts the block the last decision on d (a penalty box, deciding
// r on its key under key) started, if it started one.
func (b *keyedBlocks) observe(k *keyedSim, key Key, d decider, r *keyedReq) {
	bc, ok := d.(blockCounter)
	if !ok {
		return
	}
	started, until := bc.blockStarted()
	if !started {
		return
	}
	b.blocks++
	id, _, _ := k.keysOf(key, r)
	switch key {
	case KeyClient:
		b.add(r.client, r.t, until)
	case KeyGlobal:
		for c := range b.until {
			b.add(int32(c), r.t, until)
		}
	default:
		for _, c := range b.users(k, key)[id] {
			b.add(c, r.t, until)
		}
	}
}

// collect counts the blocks of the limiters that list them when the run
// ends (blockLister: aws_waf_rate, whose blocks start with its checks),
// each for every client of its key, in time order; nKeys is the number
// of keys under key (a slot's key is slot mod nKeys).
func (b *keyedBlocks) collect(k *keyedSim, key Key, nKeys int, horizonNs int64) {
	type block struct {
		client      int32
		from, until int64
	}
	var bs []block
	for _, slot := range k.touched {
		bl, ok := k.stores[slot].(blockLister)
		if !ok {
			continue
		}
		id := slot % int32(nKeys)
		for _, s := range bl.blockSpans(horizonNs) {
			b.blocks++
			switch key {
			case KeyClient:
				bs = append(bs, block{id, s.from, s.until})
			case KeyGlobal:
				for c := range b.until {
					bs = append(bs, block{int32(c), s.from, s.until})
				}
			default:
				for _, c := range b.users(k, key)[id] {
					bs = append(bs, block{c, s.from, s.until})
				}
			}
		}
	}
	slices.SortStableFunc(bs, func(x, y block) int { return cmp.Compare(x.from, y.from) })
	for _, x := range bs {
		b.add(x.client, x.from, x.until)
	}
}

// add counts block [from, until) for client c. Blocks start in time order,
// so the union is the part after the client's latest block.
func (b *keyedBlocks) add(c int32, from, until int64) {
	if u := b.until[c]; u > from {
		from = u
	}
	if until > from {
		b.ns[c] += until - from
		b.until[c] = until
	}
}

// users returns, per key of kind key (address, account or organisation
// ids), the clients that use it.
func (b *keyedBlocks) users(k *keyedSim, key Key) [][]int32 {
	if u, ok := b.clients[key]; ok {
		return u
	}
	u := make([][]int32, k.keySpace(key))
	for c, cl := range k.w.Scenario.Clients {
		if key == KeyOrg {
			u[k.orgOf[c]] = append(u[k.orgOf[c]], int32(c))
			continue
		}
		base, n := k.addrBase[c], cl.Keys.addresses()
		if key == KeyAccount {
			base, n = k.acctBase[c], cl.Keys.accounts()
		}
		for i := range int32(n) {
			u[base+i] = append(u[base+i], int32(c))
		}
	}
	if b.clients == nil {
		b.clients = map[Key][][]int32{}
	}
	b.clients[key] = u
	return u
}

// finish writes the clients' blocked time, clipped at horizonNs, and the
// block count into out, and the legitimate clients' total.
func (b *keyedBlocks) finish(w *Workload, out *Outcome, horizonNs int64) {
	var legit int64
	for c := range out.Clients {
		ns := b.ns[c] - max(0, b.until[c]-horizonNs)
		out.Clients[c].BlockedNs = ns
		if w.kinds[c] == kindLegit {
			legit += ns
		}
	}
	out.Blocks, out.LegitBlockedS = b.blocks, float64(legit)/1e9
}
