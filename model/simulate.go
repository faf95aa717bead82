package model

import "math"

// Workload is a validated scenario compiled to per-second offered series.
// It is immutable and safe to share between goroutines.
type Workload struct {
	Scenario *Scenario
	series   [][]int32 // series[client][second] = offered requests; nil when streamed
	offered  []int64   // offered[client] = total offered requests
	streamed bool      // series are built per client when needed (NewStreamedWorkload)
	// kinds[client] is its stage, or kindLegit (Metrics reads them for
	// every point).
	kinds []Stage
	// byRole lists the clients of each kind for RunFastCols' sums: the
	// legitimate ones (0), then the abusive ones by stage (1 to 3);
	// offeredByRole is their offered total, and fixed the metrics that
	// hold at every point of a fluid run (offered totals, accounts).
	byRole        [4][]int
	offeredByRole [4]int64
	fixed         Metrics
}

// kindLegit marks a legitimate client in Workload.kinds.
const kindLegit Stage = 255

// setKinds fills w.kinds and the per-kind lists and totals from the
// scenario and w.offered.
func (w *Workload) setKinds() {
	w.kinds = make([]Stage, len(w.Scenario.Clients))
	w.byRole, w.offeredByRole, w.fixed = [4][]int{}, [4]int64{}, Metrics{}
	for i, c := range w.Scenario.Clients {
		role := int(c.Stage) // Validate: abusive clients have stages 1 to 3
		if c.Class == Legit {
			w.kinds[i], role = kindLegit, 0
			w.fixed.OfferedLegit += w.offered[i]
			if w.offered[i] > 0 {
				w.fixed.LegitAccounts++
			}
		} else {
			w.kinds[i] = c.Stage
			w.fixed.OfferedAbusive += w.offered[i]
		}
		w.byRole[role] = append(w.byRole[role], i)
		w.offeredByRole[role] += w.offered[i]
	}
}

// NewWorkload validates sc and compiles it.
func NewWorkload(sc *Scenario) (*Workload, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	w := &Workload{Scenario: sc}
	for i := range sc.Clients {
		a := sc.Clients[i].Series(sc.DurationS)
		var sum int64
		for _, x := range a {
			sum += int64(x)
		}
		w.series = append(w.series, a)
		w.offered = append(w.offered, sum)
	}
	w.setKinds()
	return w, nil
}

// NewStreamedWorkload validates sc and compiles it without keeping every
// client's per-second series: a Simulator builds one client's series at a
// time into its own buffer, so memory grows with the duration, not with
// clients × duration. Fluid runs take the per-second kernels instead of the
// closed forms of fast.go (same results, more time per point); event and
// keyed runs are unchanged.
func NewStreamedWorkload(sc *Scenario) (*Workload, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	w := &Workload{Scenario: sc, streamed: true}
	for i := range sc.Clients {
		var sum int64
		for _, g := range sc.Clients[i].Segments {
			sum += int64(g.T1-g.T0) * int64(int32(g.Rate))
		}
		w.offered = append(w.offered, sum)
	}
	w.setKinds()
	return w, nil
}

// Streamed reports whether w was compiled by NewStreamedWorkload.
func (w *Workload) Streamed() bool { return w.streamed }

// SeriesBytes is the memory NewWorkload keeps for sc's per-second series,
// bytes (4 per client and second).
func SeriesBytes(sc *Scenario) int64 { return int64(len(sc.Clients)) * int64(sc.DurationS) * 4 }

// Offered returns client i's offered requests per second (do not modify).
// A streamed workload builds a new slice on each call.
func (w *Workload) Offered(i int) []int32 {
	if w.streamed {
		return w.Scenario.Clients[i].Series(w.Scenario.DurationS)
	}
	return w.series[i]
}

// ClientResult is what one policy did to one client's requests.
type ClientResult struct {
	Offered  int64 // requests sent
	Admitted int64 // requests let through
	// BlockedNs is the time a penalty box (block_s) kept the client's keys
	// blocked before the scenario's end, ns (0 without block_s).
	BlockedNs int64
}

// Cut is the number of the client's requests the limiter rejected.
func (r ClientResult) Cut() int64 { return r.Offered - r.Admitted }

// Metrics are the three numbers a limiter is judged by, and their breakdowns.
type Metrics struct {
	OfferedLegit   int64
	OfferedAbusive int64
	Caught         int64   // abusive requests cut
	Missed         int64   // abusive requests admitted
	FalseCut       int64   // legitimate requests cut
	LegitCutPct    float64 // FalseCut as % of OfferedLegit (0 when none offered)
	MissedPct      float64 // Missed as % of OfferedAbusive (0 when none offered)
	CutDesign      int64   // abusive requests cut whose client has stage design
	CutCode        int64   // ... stage code
	CutNone        int64   // ... stage none: only the rate limiter can close them
	OnlyHerePct    float64 // CutNone as % of Caught (0 when nothing was caught)
	// MeanDelayS and P99DelayS are the mean and 99th percentile (nearest
	// rank) of the delay a shaping limiter (nginx with delay < burst) adds to
	// the requests it admits, legitimate and abusive together, seconds. They
	// are 0 for limiters that only admit or reject.
	MeanDelayS float64
	P99DelayS  float64
	// LegitAccounts is the number of accounts with at least one legitimate
	// request; LegitAccountsLocked those with at least one legitimate request
	// cut (the user saw a lockout). Without declared accounts each client is
	// one account.
	LegitAccounts       int64
	LegitAccountsLocked int64
	// StateKeysPeak and StateBytesPeak are the most keys holding live state
	// and the most state bytes (keys.go: stateSize) at any whole second, over
	// every limiter store. Only the keyed simulation measures them
	// (StateMeasured); the lesson's one-key-per-client path does not.
	StateKeysPeak  int64
	StateBytesPeak int64
	StateMeasured  bool
	// Blocks is the number of penalty-box blocks started on any key, and
	// LegitBlockedS the seconds legitimate clients spent blocked (the sum
	// of their ClientResult.BlockedNs): 0 without block_s.
	Blocks        int64
	LegitBlockedS float64
	// Reactions are the measures of clients that react (reactsim.go).
	Reactions ReactionMetrics
	// Cost is the judged numbers in cost units when the requests carry
	// costs (Policy.Costed; weighed.go), all 0 otherwise.
	Cost CostMetrics
}

// Outcome is the result of one policy over one workload.
type Outcome struct {
	Clients []ClientResult // in scenario order
	Metrics
	ClientReactions []ClientReaction // in scenario order, when some client reacts
}

// Simulator runs policies over one workload. It holds scratch space and the
// selected arrival realisation, so use one Simulator per goroutine; Run does
// not allocate once warmed up.
type Simulator struct {
	w        *Workload
	adm      []int32
	buf      []int32   // a streamed workload's series of the current client
	deciders []decider // by algorithm,, reconfigured by Run
	delays   delayStats

	// Event mode (arrivals other than fluid): the selected realisation.
	events    [][]int64 // events[client] = request times, ns, sorted
	seed      uint64
	replicate int
	realised  bool

	fast     *fastSim       // closed forms for fluid workloads (fast.go)
	fastOut  []ClientResult // RunFast's client results
	fastFull []int64        // RunFast: per client, a bucket that admits its every request
	fastAdm  []int64        // RunFast's admitted requests per point and client
	fastLo   []int          // RunFastCols: per client, a cursor in its fixedTable
	fastRun  FastRun        // RunFast's columns

	counts []int32 // RunLimits scratch (counts.go)
	hist   []int64

	// Keyed and distributed simulation (keyed.go).
	keyed         *keyedSim
	keyedScenario bool
	keySeed       uint64
	keyRep        int

	// Clients that react to rejections (reactsim.go).
	reacts     bool
	react      *reactSim
	fluidTimes [][]int64 // a fluid workload's request times (weighed.go)
}

// NewSimulator returns a simulator for w, on realisation (0, 0).
func (w *Workload) NewSimulator() *Simulator {
	s := &Simulator{w: w, adm: make([]int32, w.Scenario.DurationS), keyedScenario: w.Scenario.Keyed(), reacts: w.Scenario.Reacts(),
		fastOut: make([]ClientResult, len(w.Scenario.Clients)), fastFull: make([]int64, len(w.Scenario.Clients)), fastLo: make([]int, len(w.Scenario.Clients))}
	if w.streamed {
		s.buf = make([]int32, w.Scenario.DurationS)
	} else {
		s.fast = newFastSim(w)
	}
	s.SetReplicate(0, 0)
	return s
}

// SetReplicate selects the arrival realisation Run uses: the one of (seed,
// replicate), the same for every policy (common random numbers) and for every
// Simulator of the workload. The request times are generated here, once, and
// kept until the realisation changes. Workloads that are not Stochastic have
// a single realisation, and the call costs nothing.
func (s *Simulator) SetReplicate(seed uint64, replicate int) {
	s.keySeed, s.keyRep = seed, replicate
	if s.w.Scenario.Arrivals.Process == Fluid {
		return
	}
	if s.realised && (!s.w.Stochastic() || (seed == s.seed && replicate == s.replicate)) {
		return
	}
	s.events = s.w.Realise(seed, replicate, s.events)
	s.seed, s.replicate, s.realised = seed, replicate, true
}

// Run applies p (a valid policy) to every client (one key per client) on the
// selected realisation and fills out.
func (s *Simulator) Run(p Policy, out *Outcome) {
	w := s.w
	nc := len(w.Scenario.Clients)
	if cap(out.Clients) < nc {
		out.Clients = make([]ClientResult, nc)
	}
	out.Clients = out.Clients[:nc]
	if s.reacts {
		s.runReactions(p, out)
		return
	}
	if p.Stack.keyed() {
		s.runStack(p, out)
		return
	}
	if s.keyedScenario || p.Distributed() {
		s.runKeyed(p, out)
		return
	}
	if p.Weighed() {
		s.runWeighed(p, out)
		return
	}
	var delays *delayStats
	if p.Shapes() {
		s.delays.reset()
		delays = &s.delays
	}
	fluid := w.Scenario.Arrivals.Process == Fluid
	if fluid && !p.Shapes() && s.fast != nil && !p.modified() && s.fast.admitAll(p, out.Clients) { // closed forms (fast.go)
		out.Metrics = w.Metrics(out.Clients)
		return
	}
	var d decider
	if !fluid || !hasKernel(p.Algorithm) || p.modified() {
		d = s.decider(p)
	}
	box, _ := d.(blockCounter)
	var blocks int64
	for i := range nc {
		var a []int32
		if fluid {
			a = s.series(i)
		}
		switch {
		case !fluid:
			out.Clients[i] = ClientResult{Offered: int64(len(s.events[i])), Admitted: admitEvents(d, s.events[i], delays)}
		case d == nil:
			n, _ := admitKernel(p, a, s.adm)
			out.Clients[i] = ClientResult{Offered: w.offered[i], Admitted: n}
		default:
			out.Clients[i] = ClientResult{Offered: w.offered[i], Admitted: admitBatches(d, a, s.adm, delays)}
		}
		if box != nil {
			n, ns := box.blockStats(int64(w.Scenario.DurationS) * secondNs)
			blocks += n
			out.Clients[i].BlockedNs = ns
		}
	}
	out.Metrics = w.Metrics(out.Clients)
	out.Blocks = blocks
	if delays != nil {
		out.MeanDelayS, out.P99DelayS = delays.meanS(), delays.quantileS(0.99)
	}
}

// series returns client i's per-second series: the workload's, or for a
// streamed workload built into the simulator's buffer.
func (s *Simulator) series(i int) []int32 {
	if !s.w.streamed {
		return s.w.series[i]
	}
	a := s.buf
	clear(a)
	for _, g := range s.w.Scenario.Clients[i].Segments {
		for t := g.T0; t < g.T1; t++ {
			a[t] = int32(g.Rate)
		}
	}
	return a
}

// decider returns the simulator's decider for p's algorithm, configured for p.
func (s *Simulator) decider(p Policy) decider {
	if p.modified() {
		return newDecider(p) // wrapped for p alone
	}
	if int(p.Algorithm) >= len(s.deciders) {
		s.deciders = append(s.deciders, make([]decider, int(p.Algorithm)+1-len(s.deciders))...)
	}
	d := s.deciders[p.Algorithm]
	if d == nil {
		d = newDecider(p)
		s.deciders[p.Algorithm] = d
		return d
	}
	d.configure(p)
	return d
}

// hasKernel reports whether fluid arrivals run a per-second kernel.
func hasKernel(a Algorithm) bool { return a.Describe().kernel != nil }

// Timeline returns, for each client, the requests offered and admitted per
// second under p on realisation (seed, replicate): the arrivals the sweep
// simulated for that replicate. It decides each client on a key of its own,
// so it does not hold for keyed scenarios or distributed policies (see
// HasTimeline).
func (w *Workload) Timeline(p Policy, seed uint64, replicate int) (offered, admitted [][]int32) {
	n := len(w.Scenario.Clients)
	offered, admitted = make([][]int32, n), make([][]int32, n)
	if p.Weighed() {
		w.weighedTimeline(p, seed, replicate, offered, admitted)
		return offered, admitted
	}
	if w.Scenario.Arrivals.Process == Fluid {
		for i := range admitted {
			offered[i] = w.Offered(i)
			admitted[i] = make([]int32, len(offered[i]))
			Admit(p, offered[i], admitted[i])
		}
		return offered, admitted
	}
	d := newDecider(p)
	for i, times := range w.Realise(seed, replicate, nil) {
		offered[i] = make([]int32, w.Scenario.DurationS)
		admitted[i] = make([]int32, w.Scenario.DurationS)
		d.Reset()
		for _, t := range times {
			offered[i][t/secondNs]++
			if d.Allow(t) {
				admitted[i][t/secondNs]++
			}
		}
	}
	return offered, admitted
}

// HasTimeline reports whether Timeline draws what the sweep simulated for
// p: every client on a key of its own, on one node, without reactions.
func (w *Workload) HasTimeline(p Policy) bool {
	return !w.Scenario.Keyed() && !p.Distributed() && !w.Scenario.Reacts()
}

// delayStats collects the delays of admitted requests. Zero delays, the
// common case, are only counted.
type delayStats struct {
	n, sumNs int64
	positive []int64 // delays > 0, ns
}

func (s *delayStats) reset() { s.n, s.sumNs, s.positive = 0, 0, s.positive[:0] }

func (s *delayStats) add(delayNs int64) {
	s.n++
	if delayNs > 0 {
		s.sumNs += delayNs
		s.positive = append(s.positive, delayNs)
	}
}

// meanS is the mean delay, seconds (0 when nothing was admitted).
func (s *delayStats) meanS() float64 {
	if s.n == 0 {
		return 0
	}
	return float64(s.sumNs) / float64(s.n) / 1e9
}

// quantileS is the q-quantile of the delays by nearest rank (the
// ceil(q·n)-th smallest), seconds. It reorders the recorded delays.
func (s *delayStats) quantileS(q float64) float64 {
	rank := int64(math.Ceil(q * float64(s.n))) // 1-based
	zeros := s.n - int64(len(s.positive))
	if rank <= zeros {
		return 0
	}
	return float64(nthSmallest(s.positive, int(rank-zeros-1))) / 1e9
}

// nthSmallest returns the k-th smallest element of xs (0-based), reordering
// xs (quickselect).
func nthSmallest(xs []int64, k int) int64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		pivot := xs[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// Metrics derives the judged numbers from per-client results (scenario order).
func (w *Workload) Metrics(clients []ClientResult) Metrics {
	var m Metrics
	w.metricsInto(clients, &m)
	return m
}

// metricsInto is Metrics into *m (zeroed first): no 144-byte copy out.
func (w *Workload) metricsInto(clients []ClientResult, m *Metrics) {
	*m = Metrics{}
	kinds := w.kinds[:len(clients)]
	var legitBlockedNs int64
	for i, r := range clients {
		if kinds[i] != kindLegit {
			m.Count(Abusive, kinds[i], r)
			continue
		}
		m.Count(Legit, NoStage, r)
		legitBlockedNs += r.BlockedNs
		if r.Offered > 0 {
			m.LegitAccounts++
			if r.Cut() > 0 {
				m.LegitAccountsLocked++
			}
		}
	}
	m.LegitBlockedS = float64(legitBlockedNs) / 1e9
	m.Finish()
}

// Count adds requests of one class and stage (NoStage for legitimate ones)
// to the counts; call Finish after the last.
func (m *Metrics) Count(class Class, stage Stage, r ClientResult) {
	cut := r.Cut()
	if class == Legit {
		m.OfferedLegit += r.Offered
		m.FalseCut += cut
		return
	}
	m.OfferedAbusive += r.Offered
	m.Caught += cut
	m.Missed += r.Admitted
	switch stage {
	case StageDesign:
		m.CutDesign += cut
	case StageCode:
		m.CutCode += cut
	case StageNone:
		m.CutNone += cut
	}
}

// Finish derives the percentages from the counts.
func (m *Metrics) Finish() {
	m.LegitCutPct = pct(m.FalseCut, m.OfferedLegit)
	m.MissedPct = pct(m.Missed, m.OfferedAbusive)
	m.OnlyHerePct = pct(m.CutNone, m.Caught)
}

func pct(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}
