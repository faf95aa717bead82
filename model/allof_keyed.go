package model

// runStack is Run for an all_of policy whose components hang on different
// keys: every request of the merged stream (keyed.go) is decided by each
// component's limiter for the request's key under that component (its
// client, address, account, organisation, or one global limiter), each
// weighing its cost and status as the component's modifiers say.
func (s *Simulator) runStack(p Policy, out *Outcome) {
	w := s.w
	if s.keyed == nil {
		s.keyed = newKeyedSim(w)
	}
	k := s.keyed
	k.prepare(s)
	for i := range out.Clients {
		out.Clients[i] = ClientResult{}
	}
	comps := p.components()
	stores := make([]map[int32]decider, len(comps)) // a component's limiter per key used
	for i := range comps {
		stores[i] = map[int32]decider{}
	}
	parts := make([]decider, len(comps))
	k.acct = extend(k.acct, k.nAcct)[:k.nAcct]
	clear(k.acct)
	for j := range k.reqs {
		r := &k.reqs[j]
		for i, c := range comps {
			key, _, _ := k.keysOf(c.Key, r)
			d, seen := stores[i][key]
			if !seen {
				d = newDecider(c)
				stores[i][key] = d
			}
			parts[i] = d
		}
		ok := decideAll(parts, p.Stack.RejectedCounts, r.t, w.Scenario.Clients[r.client].RequestCost(), int(r.status))
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
	out.Metrics = w.Metrics(out.Clients)
	w.costMetrics(p, out)
	out.LegitAccounts, out.LegitAccountsLocked = 0, 0
	for _, f := range k.acct {
		if f&1 != 0 {
			out.LegitAccounts++
		}
		if f&2 != 0 {
			out.LegitAccountsLocked++
		}
	}
}
