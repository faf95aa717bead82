package model

// FastRun receives a run of points from RunFastCols column by column: each
// client's admitted requests where the caller keeps them, and the metrics
// that vary from point to point as one column each. On a fluid workload the
// offered counts, and so the offered totals and accounts, are the same for
// every point, and the closed forms neither shape (no delay) nor measure
// state: those metrics are Fixed.
type FastRun struct {
	// Admitted[k*Stride+i] is point k's client i's admitted requests (the
	// caller's buffer, at least (len(ps)-1)*Stride+clients long; Stride >=
	// clients).
	Admitted []int64
	Stride   int
	// Offered[i] is client i's offered requests at every point (the
	// workload's: do not modify).
	Offered []int64

	// Per point k of the run (RunFastCols sizes them).
	Caught, Missed, FalseCut            []int64
	CutDesign, CutCode, CutNone         []int64
	LegitAccountsLocked                 []int64
	LegitCutPct, MissedPct, OnlyHerePct []float64

	// Fixed holds the metrics every point of the run shares; its varying
	// fields (those with a column above) are 0.
	Fixed Metrics

	// Changed, when not nil, says per point k of ps which one parameter
	// (its index in Params) alone may differ between ps[k-1] and ps[k], or
	// -1 when others may too (sweep.Grid.Policies' hint). RunFastCols then
	// compares whole policies only where the hint does not settle it: a
	// Policy compare costs more than a point's table lookups.
	Changed []int8
}

// onlyChanged reports whether the hint says point k differs from point
// k-1 in parameter j alone.
func (d *FastRun) onlyChanged(k int, j int8) bool {
	return k > 0 && k < len(d.Changed) && d.Changed[k] == j
}

// Indices in Params of the parameters the closed forms sweep.
var (
	limitParam    = int8(paramIndex("limit"))
	capacityParam = int8(paramIndex("capacity"))
)

func paramIndex(name string) int {
	for j, p := range Params {
		if p.Name == name {
			return j
		}
	}
	panic("model: no parameter " + name)
}

// grow sizes the metric columns for n points.
func (d *FastRun) grow(n int) {
	for _, c := range []*[]int64{&d.Caught, &d.Missed, &d.FalseCut, &d.CutDesign, &d.CutCode, &d.CutNone, &d.LegitAccountsLocked} {
		if cap(*c) < n {
			*c = make([]int64, n)
		}
		*c = (*c)[:n]
	}
	for _, c := range []*[]float64{&d.LegitCutPct, &d.MissedPct, &d.OnlyHerePct} {
		if cap(*c) < n {
			*c = make([]float64, n)
		}
		*c = (*c)[:n]
	}
}

// Metrics is point k's metrics (what Workload.Metrics gives for its
// clients).
func (d *FastRun) Metrics(k int) Metrics {
	m := d.Fixed
	m.Caught, m.Missed, m.FalseCut = d.Caught[k], d.Missed[k], d.FalseCut[k]
	m.CutDesign, m.CutCode, m.CutNone = d.CutDesign[k], d.CutCode[k], d.CutNone[k]
	m.LegitAccountsLocked = d.LegitAccountsLocked[k]
	m.LegitCutPct, m.MissedPct, m.OnlyHerePct = d.LegitCutPct[k], d.MissedPct[k], d.OnlyHerePct[k]
	return m
}

// RunFast simulates the leading points of ps that one closed form of
// fast.go answers together (RunFastCols) and gives point k's client results
// and metrics to put, in order (both are valid during the call only). It
// returns the number of points done, 0 when ps[0] needs Run; the results
// are Run's.
func (s *Simulator) RunFast(ps []Policy, put func(k int, clients []ClientResult, m *Metrics)) int {
	nc := len(s.w.Scenario.Clients)
	if cap(s.fastAdm) < len(ps)*nc {
		s.fastAdm = make([]int64, len(ps)*nc)
	}
	d := &s.fastRun
	d.Admitted, d.Stride = s.fastAdm[:len(ps)*nc], nc
	n := s.RunFastCols(ps, d)
	cl := s.fastOut[:nc]
	for k := range n {
		for i := range cl {
			cl[i] = ClientResult{Offered: s.w.offered[i], Admitted: d.Admitted[k*nc+i]}
		}
		m := d.Metrics(k)
		put(k, cl, &m)
	}
	return n
}

// RunFastCols simulates the leading points of ps that one closed form of
// fast.go answers together: fixed_window or sliding_window points of one
// window (and phase) whose tables are built, or token_bucket points of one
// rate, with no other parameter set, on a fluid workload. It writes their
// results into dst, column by column, and returns the number of points
// done, 0 when ps[0] needs Run; the results are Run's.
//
// It is Run without the per-point work: one check of the shared
// parameters, one table lookup per client and point, no Outcome, and the
// metrics as sums over the clients of each kind; one function for that
// reason (a step per call would bring the per-point work back).
func (s *Simulator) RunFastCols(ps []Policy, dst *FastRun) int {
	f, w := s.fast, s.w
	if f == nil || len(ps) == 0 || s.keyedScenario || s.reacts || w.Scenario.Arrivals.Process != Fluid || w.streamed {
		return 0
	}
	p0 := ps[0]
	if p0.modified() {
		return 0
	}
	nc := len(w.Scenario.Clients)
	off := w.offered[:nc]
	adm, stride := dst.Admitted, dst.Stride
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
		// Per client, the first window sum above the last limit: limits
		// that grow from point to point walk it forward.
		lo, last := s.fastLo[:nc], int64(-1)
		clear(lo)
		for ; n < len(ps); n++ {
			plain.Limit = ps[n].Limit
			if !dst.onlyChanged(n, limitParam) && ps[n] != plain || plain.Limit < 0 {
				break
			}
			a := adm[n*stride:][:nc]
			if e.fixed != nil {
				if plain.Limit < last {
					clear(lo)
				}
				last = plain.Limit
				for i := range a {
					a[i], lo[i] = e.fixed[i].admittedFrom(min(plain.Limit, off[i]), lo[i])
				}
			} else {
				for i := range a {
					a[i] = e.hulls[i].admitted(plain.Limit)
				}
			}
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
		full := s.fastFull[:nc]
		copy(full, off) // a bucket holding every request admits them all
		for ; n < len(ps); n++ {
			plain.Capacity = ps[n].Capacity
			if !dst.onlyChanged(n, capacityParam) && ps[n] != plain {
				break
			}
			a := adm[n*stride:][:nc]
			for i := range a {
				x := off[i]
				if plain.Capacity < full[i] {
					if x = bucketRuns(f.runs[i], plain.Capacity, f.ratio); x == off[i] {
						full[i] = plain.Capacity
					}
				}
				a[i] = x
			}
		}
	}
	if n > 0 {
		w.fastMetrics(adm, stride, n, dst)
	}
	return n
}

// fastMetrics fills dst's metrics for n points whose client i was offered
// w.offered[i] and admitted adm[k*stride+i] (metricsInto's sums, by kind).
func (w *Workload) fastMetrics(adm []int64, stride, n int, dst *FastRun) {
	dst.grow(n)
	dst.Offered = w.offered
	fx, offK := w.fixed, w.offeredByRole
	dst.Fixed = fx
	off, nc := w.offered, len(w.offered)
	legit, design, code, none := w.byRole[0], w.byRole[StageDesign], w.byRole[StageCode], w.byRole[StageNone]
	for k := range n {
		a := adm[k*stride:][:nc]
		// Admitted per kind, each sum in a register of its own.
		var admLegit, admDesign, admCode, admNone, locked int64
		for _, i := range legit {
			x := a[i]
			admLegit += x
			if x < off[i] {
				locked++
			}
		}
		for _, i := range design {
			admDesign += a[i]
		}
		for _, i := range code {
			admCode += a[i]
		}
		for _, i := range none {
			admNone += a[i]
		}
		missed := admDesign + admCode + admNone
		caught := fx.OfferedAbusive - missed
		falseCut := fx.OfferedLegit - admLegit
		cutNone := offK[StageNone] - admNone
		dst.Caught[k], dst.Missed[k], dst.FalseCut[k] = caught, missed, falseCut
		dst.CutDesign[k] = offK[StageDesign] - admDesign
		dst.CutCode[k] = offK[StageCode] - admCode
		dst.CutNone[k] = cutNone
		dst.LegitAccountsLocked[k] = locked
		dst.LegitCutPct[k] = pct(falseCut, fx.OfferedLegit)
		dst.MissedPct[k] = pct(missed, fx.OfferedAbusive)
		dst.OnlyHerePct[k] = pct(cutNone, caught)
	}
}
