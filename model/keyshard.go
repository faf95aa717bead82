package model

// Key shards of a scenario (docs/clusters.md): a sweep split by key gives
// each shard some of the scenario's clients, and the shards' results add up
// to the whole scenario's because every key a limiter keeps belongs to the
// clients of one shard and every client draws the random streams it draws in
// the whole scenario.

// ShardKeys returns, per client, the name its key shard is chosen by: its
// own name, or for clients that share keys (an address pool, an account
// pool or an organisation, directly or through one another) the name of the
// first of them in scenario order, so that they travel together.
func (s *Scenario) ShardKeys() []string {
	parent := make([]int, len(s.Clients))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int) {
		ra, rb := find(a), find(b)
		if ra > rb {
			ra, rb = rb, ra
		}
		parent[rb] = ra // the root is the group's first client
	}
	for _, space := range []func(ClientKeys) string{
		func(k ClientKeys) string { return k.AddressPool },
		func(k ClientKeys) string { return k.AccountPool },
		func(k ClientKeys) string { return k.Org },
	} {
		first := map[string]int{}
		for i, c := range s.Clients {
			name := space(c.Keys)
			if name == "" {
				continue
			}
			if j, ok := first[name]; ok {
				union(j, i)
			} else {
				first[name] = i
			}
		}
	}
	keys := make([]string, len(s.Clients))
	for i := range keys {
		keys[i] = s.Clients[find(i)].Name
	}
	return keys
}

// KeepClients returns a copy of s with the clients keep[i] selects, in
// scenario order. Each kept client draws the random streams (arrivals, key
// spread, responses, reactions) it draws in s and takes the simulation path
// s takes (Keyed), so its results do not depend on which other clients are
// kept. The copy may hold no client.
func (s *Scenario) KeepClients(keep []bool) *Scenario {
	c := *s
	c.Clients, c.streams, c.keyed = nil, []int{}, s.Keyed()
	for i := range s.Clients {
		if keep[i] {
			c.Clients = append(c.Clients, s.Clients[i])
			c.streams = append(c.streams, s.stream(i))
		}
	}
	return &c
}

// stream is the index of the random streams client i draws.
func (s *Scenario) stream(i int) int {
	if s.streams == nil {
		return i
	}
	return s.streams[i]
}

// NeedsEveryClient reports whether p's decisions for a client depend on
// clients it shares no key with (ShardKeys): a global key, several nodes,
// shared state or a random balancer, in p or in a component of its stack.
// Other policies decide each key apart, so a scenario's key shards add up.
func (p Policy) NeedsEveryClient() bool {
	if p.Key == KeyGlobal || p.Nodes > 1 || p.State != Local || p.SyncMs != 0 || p.LB != RoundRobin {
		return true
	}
	if p.Stack != nil {
		for _, c := range p.Stack.Components {
			if c.NeedsEveryClient() {
				return true
			}
		}
	}
	return false
}
