package model

// CountFunc returns, for the count-based algorithms, a function that fills
// c[j] with the count request j of one key's event times ts (ns, not
// decreasing) is compared with: the policy admits request j at limit L iff
// c[j] < L, and c does not depend on L. It caps counts at cap (so that
// c[j] >= cap means "rejected at every limit <= cap"); cap must fit int32.
// ok is false for the other algorithms, whose state depends on their
// decisions.
//
//   - fixed_window: requests admitted earlier in the request's window; the
//     first L of a window are admitted, so it is the request's rank in its
//     window, min(rank, L) at limit L.
//   - fixed_window_anchored: hits (every attempt) earlier in the window the
//     hits open, which depends on the times alone.
//   - sliding_log: attempts logged in (t − window, t] before this one.
//
// The windows are the Deciders' own (advance, expire), placed as
// NewDeciderAt(p, originNs) places them, so the counts follow them exactly;
// p's limit is ignored.
func CountFunc(p Policy, originNs int64) (count func(ts []int64, c []int32, cap int64), ok bool) {
	if !CountBased(p.Algorithm) || p.modified() {
		return nil, false
	}
	return p.Algorithm.Describe().count(p, originNs), true
}

// CountBased reports whether a's decisions compare a count that does not
// depend on the limit with the limit (CountFunc).
func CountBased(a Algorithm) bool {
	d := a.Describe()
	return d != nil && d.count != nil
}

// CanRunLimits reports whether RunLimits runs p and other limits of it: a
// count-based algorithm, local to each client, on event arrivals.
func (s *Simulator) CanRunLimits(p Policy) bool {
	return CountBased(p.Algorithm) && s.w.Scenario.Arrivals.Process != Fluid && !s.keyedScenario && !p.Distributed() && !p.modified()
}

// RunLimits runs policies that differ only in their limit, of a count-based
// algorithm (CountFunc), on the selected realisation of an event workload in
// one pass over its requests: each request's count is taken once, and every
// limit is read off a histogram per client. outs[k] receives what Run(ps[k])
// gives. It reports false, doing nothing, where Run must run the policies one
// by one: other algorithms, policies differing in more than the limit, fluid
// arrivals (whose closed forms already cost little per point), keyed
// scenarios and distributed policies.
func (s *Simulator) RunLimits(ps []Policy, outs []Outcome) bool {
	w := s.w
	if len(ps) == 0 || !s.CanRunLimits(ps[0]) {
		return false
	}
	count, _ := CountFunc(ps[0], 0)
	var maxL int64
	for _, p := range ps {
		q := p
		q.Limit = ps[0].Limit
		if q != ps[0] || p.Limit < 0 {
			return false
		}
		maxL = max(maxL, p.Limit)
	}
	for k := range outs[:len(ps)] {
		if cap(outs[k].Clients) < len(w.Scenario.Clients) {
			outs[k].Clients = make([]ClientResult, len(w.Scenario.Clients))
		}
		outs[k].Clients = outs[k].Clients[:len(w.Scenario.Clients)]
	}
	for i, ts := range s.events[:len(w.Scenario.Clients)] {
		n := len(ts)
		h := int(min(maxL, int64(n))) + 1 // buckets 0 … h-1; h-1 = "at least h-1"
		s.counts = growInt32(s.counts, n)
		count(ts, s.counts, int64(h-1))
		s.hist = growInt64(s.hist, h)
		hist := s.hist
		clear(hist)
		for _, c := range s.counts {
			hist[c]++
		}
		for v := 1; v < h; v++ { // hist[v] = requests with a count <= v
			hist[v] += hist[v-1]
		}
		for k, p := range ps {
			var adm int64
			if p.Limit > 0 {
				adm = hist[min(p.Limit, int64(h))-1]
			}
			outs[k].Clients[i] = ClientResult{Offered: int64(n), Admitted: adm}
		}
	}
	for k := range ps {
		outs[k].Metrics = w.Metrics(outs[k].Clients)
	}
	return true
}

// CanRunLockstep reports whether RunLockstep can run p with other policies
// of its algorithm.
func (s *Simulator) CanRunLockstep(p Policy) bool {
	return s.w.Scenario.Arrivals.Process != Fluid && !s.keyedScenario && !p.Distributed() && !p.Shapes() &&
		!CountBased(p.Algorithm) && !p.modified()
}

// RunLockstep runs policies of one state-dependent algorithm (Lockstep) on
// the selected realisation of an event workload in one pass over each
// client's requests. outs[k] receives what Run(ps[k]) gives. It reports
// false, doing nothing, where Run must run the policies one by one (see
// CanRunLockstep, NewLockstep).
func (s *Simulator) RunLockstep(ps []Policy, outs []Outcome) bool {
	w := s.w
	if len(ps) == 0 || !s.CanRunLockstep(ps[0]) {
		return false
	}
	for _, p := range ps {
		if p.Shapes() {
			return false // delays are Run's
		}
	}
	ls, ok := NewLockstep(ps, 0)
	if !ok {
		return false
	}
	nc := len(w.Scenario.Clients)
	for k := range outs[:len(ps)] {
		if cap(outs[k].Clients) < nc {
			outs[k].Clients = make([]ClientResult, nc)
		}
		outs[k].Clients = outs[k].Clients[:nc]
	}
	admitted := make([][4]int64, len(ps))
	var labels []Stage // a client's requests are all its own: label 0
	for i, ts := range s.events[:nc] {
		if cap(labels) < len(ts) {
			labels = make([]Stage, len(ts))
		}
		offered := [4]int64{int64(len(ts))}
		clear(admitted)
		ls.AdmitKey(ts, labels[:len(ts)], &offered, admitted)
		for k := range ps {
			outs[k].Clients[i] = ClientResult{Offered: int64(len(ts)), Admitted: admitted[k][0]}
		}
	}
	for k := range ps {
		outs[k].Metrics = w.Metrics(outs[k].Clients)
	}
	return true
}

func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}
