package model

// RunFast simulates the leading points of ps that one closed form of
// fast.go answers together: fixed_window or sliding_window points of one
// window (and phase) whose tables are built, or token_bucket points of one
// rate, with no other parameter set, on a fluid workload. It gives point k's
// client results and metrics to put, in order (both are valid during the
// call only), and returns the number of points done, 0 when ps[0] needs
// Run; the results are Run's.
//
// It is Run without the per-point work: one check of the shared
// parameters, one table lookup per batch, no Outcome in between.
func (s *Simulator) RunFast(ps []Policy, put func(k int, clients []ClientResult, m *Metrics)) int {
	f, w := s.fast, s.w
	if f == nil || len(ps) == 0 || s.keyedScenario || w.Scenario.Arrivals.Process != Fluid || w.streamed {
		return 0
	}
	p0 := ps[0]
	cl := s.fastOut[:len(w.Scenario.Clients)]
	var m Metrics
	n := 0
	switch p0.Algorithm {
	case FixedWindow, SlidingWindow:
		plain := Policy{Algorithm: p0.Algorithm, WindowS: p0.WindowS, Limit: p0.Limit, PhaseS: p0.PhaseS}
		if p0 != plain || !f.safe || p0.WindowS <= 0 || p0.PhaseS < 0 || p0.PhaseS >= p0.WindowS ||
			(p0.PhaseS != 0 && p0.Algorithm != FixedWindow) {
			return 0
		}
		e := f.entry(p0.Algorithm, p0.WindowS, p0.PhaseS)
		if !e.built {
			return 0 // Run counts the use and builds the tables in time
		}
		for ; n < len(ps); n++ {
			plain.Limit = ps[n].Limit
			if ps[n] != plain || plain.Limit < 0 {
				break
			}
			if e.fixed != nil {
				for i := range cl {
					cl[i] = ClientResult{Offered: w.offered[i], Admitted: e.fixed[i].admitted(min(plain.Limit, w.offered[i]))}
				}
			} else {
				for i := range cl {
					cl[i] = ClientResult{Offered: w.offered[i], Admitted: e.hulls[i].admitted(plain.Limit)}
				}
			}
			w.metricsInto(cl, &m)
			put(n, cl, &m)
		}
	case TokenBucket:
		plain := Policy{Algorithm: TokenBucket, Rate: p0.Rate, Capacity: p0.Capacity}
		if p0 != plain {
			return 0
		}
		if p0.Rate != f.rate {
			f.rate, f.ratio = p0.Rate, ratioOf(p0.Rate)
		}
		// full[i] is a capacity at which client i's every request is
		// admitted; a larger bucket admits no fewer (it holds at least as
		// many tokens at every moment), so every larger one admits all too.
		full := s.fastFull[:len(cl)]
		copy(full, w.offered) // a bucket holding every request admits them all
		for ; n < len(ps); n++ {
			plain.Capacity = ps[n].Capacity
			if ps[n] != plain {
				break
			}
			for i := range cl {
				adm := w.offered[i]
				if plain.Capacity < full[i] {
					if adm = bucketRuns(f.runs[i], plain.Capacity, f.ratio); adm == w.offered[i] {
						full[i] = plain.Capacity
					}
				}
				cl[i] = ClientResult{Offered: w.offered[i], Admitted: adm}
			}
			w.metricsInto(cl, &m)
			put(n, cl, &m)
		}
	}
	return n
}
