package model

// Workload is a validated scenario compiled to per-second offered series.
// It is immutable and safe to share between goroutines.
type Workload struct {
	Scenario *Scenario
	series   [][]int32 // series[client][second] = offered requests
	offered  []int64   // offered[client] = total offered requests
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
	return w, nil
}

// Offered returns client i's offered requests per second (do not modify).
func (w *Workload) Offered(i int) []int32 { return w.series[i] }

// ClientResult is what one policy did to one client's requests.
type ClientResult struct {
	Offered  int64 // requests sent
	Admitted int64 // requests let through
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
}

// Outcome is the result of one policy over one workload.
type Outcome struct {
	Clients []ClientResult // in scenario order
	Metrics
}

// Simulator runs policies over one workload. It holds scratch space, so use
// one Simulator per goroutine; Run does not allocate once warmed up.
type Simulator struct {
	w    *Workload
	adm  []int32
	fast *fastSim // closed forms (fast.go)
}

// NewSimulator returns a simulator for w.
func (w *Workload) NewSimulator() *Simulator {
	return &Simulator{w: w, adm: make([]int32, w.Scenario.DurationS), fast: newFastSim(w)}
}

// Run applies p to every client (one key per client) and fills out.
func (s *Simulator) Run(p Policy, out *Outcome) {
	w := s.w
	if cap(out.Clients) < len(w.series) {
		out.Clients = make([]ClientResult, len(w.series))
	}
	out.Clients = out.Clients[:len(w.series)]
	if !s.fast.admitAll(p, out.Clients) { // no closed form: the reference kernels
		for i, a := range w.series {
			out.Clients[i] = ClientResult{Offered: w.offered[i], Admitted: Admit(p, a, s.adm)}
		}
	}
	out.Metrics = w.Metrics(out.Clients)
}

// Timeline returns, for each client, the admitted requests per second under p.
func (w *Workload) Timeline(p Policy) [][]int32 {
	out := make([][]int32, len(w.series))
	for i, a := range w.series {
		out[i] = make([]int32, len(a))
		Admit(p, a, out[i])
	}
	return out
}

// Metrics derives the judged numbers from per-client results (scenario order).
func (w *Workload) Metrics(clients []ClientResult) Metrics {
	var m Metrics
	for i, r := range clients {
		c := &w.Scenario.Clients[i]
		cut := r.Cut()
		if c.Class == Legit {
			m.OfferedLegit += r.Offered
			m.FalseCut += cut
			continue
		}
		m.OfferedAbusive += r.Offered
		m.Caught += cut
		m.Missed += r.Admitted
		switch c.Stage {
		case StageDesign:
			m.CutDesign += cut
		case StageCode:
			m.CutCode += cut
		case StageNone:
			m.CutNone += cut
		}
	}
	m.LegitCutPct = pct(m.FalseCut, m.OfferedLegit)
	m.MissedPct = pct(m.Missed, m.OfferedAbusive)
	m.OnlyHerePct = pct(m.CutNone, m.Caught)
	return m
}

func pct(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}
