// Package recommend chooses, from the Parquet output of one or more runs
// (no simulation), the policy that best meets a user's constraints on
// legitimate requests cut and abusive requests missed or caught: per
// algorithm and overall, with 95% intervals over replicates, margins to
// the constraints, the metrics at the neighbouring grid settings (a choice
// on a cliff is flagged), grid-edge warnings, the clients it cuts and,
// across several runs, the choice best in the worst run and each run's
// regret.
package recommend

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/choice"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// Bound is one side of a constraint: a percentage (of the requests
// offered, or of each client's) or a count of requests.
type Bound struct {
	Value float64
	Pct   bool
}

// ParseBound reads "1%" (a percentage) or "100" (requests).
func ParseBound(s string) (Bound, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || (pct && v > 100) {
		return Bound{}, fmt.Errorf("%s is not a count of requests (>= 0) or a percentage (0%%–100%%)", yamlx.Excerpt(s))
	}
	return Bound{v, pct}, nil
}

func (b Bound) String() string {
	if b.Pct {
		return strconv.FormatFloat(b.Value, 'f', -1, 64) + "%"
	}
	return strconv.FormatFloat(b.Value, 'f', -1, 64) + " requests"
}

// Options are the constraints (nil: not constrained) and tuning.
type Options struct {
	MaxFalseCut  *Bound // legitimate requests cut, in total
	MaxMissed    *Bound // abusive requests admitted
	MinCaught    *Bound // abusive requests cut
	MaxClientCut *Bound // legitimate requests cut of any one legitimate client
	// MaxFalseCutCost bounds the cost units of legitimate requests cut
	// (cost.go): a count, or a percentage of the legitimate cost offered.
	MaxFalseCutCost *Bound
	// MaxLegitBlockedS bounds the seconds legitimate clients spend in a
	// penalty box's blocks (legit_blocked_s), summed over them.
	MaxLegitBlockedS *float64
	// MaxAmplification bounds the legitimate attempts per intended request,
	// MaxLegitDelayP99S the 99th percentile of the latency retries add to
	// legitimate requests eventually served, s (runs whose clients react).
	MaxAmplification  *float64
	MaxLegitDelayP99S *float64
	// CliffPP is the move of legit_cut_pct or missed_pct, percentage
	// points, at one grid step that flags a cliff (default 5).
	CliffPP float64
	// AllowIncomplete reads runs without manifest.json, or with NULL or
	// NaN metrics (sweep.OpenOptions), instead of refusing them.
	AllowIncomplete bool
}

// Objective is what the choice minimises among the policies that meet
// every constraint, in the worst run: the share of abusive requests missed
// when only false cuts are bounded, else the share of legitimate requests
// cut. Ties go to the other of the two (tieMetric), then as the choice
// rule orders them (internal/choice: less delay, the simpler setting, the
// one inside its swept ranges, the earlier point of the first run).
func (o *Options) objective() string {
	if o.MaxMissed != nil || o.MinCaught != nil {
		return "legit_cut_pct"
	}
	return "missed_pct"
}

// tieMetric breaks ties of the objective: the other side of the trade-off,
// so among policies cutting no legitimate request the one missing the least
// abuse wins, and among equal missed the one cutting the least.
func (o *Options) tieMetric() string {
	if o.objective() == "missed_pct" {
		return "legit_cut_pct"
	}
	return "missed_pct"
}

// ClientCut is one legitimate client a policy cuts (means over replicates).
type ClientCut struct {
	Client  string  `json:"client"`
	Offered float64 `json:"offered"`
	Cut     float64 `json:"cut"`
	Pct     float64 `json:"cut_pct"`
	// Why is the client's traffic against the policy's bound (scenario
	// runs): its most requests in one window, or its largest burst above
	// the rate.
	Why string `json:"why,omitempty"`
}

// Measure is one policy in one run.
type Measure struct {
	PointID        int64       `json:"point_id"`
	OfferedLegit   float64     `json:"offered_legit"`
	OfferedAbusive float64     `json:"offered_abusive"`
	FalseCut       Interval    `json:"false_cut"`
	Missed         Interval    `json:"missed"`
	Caught         Interval    `json:"caught"`
	LegitCutPct    Interval    `json:"legit_cut_pct"`
	MissedPct      Interval    `json:"missed_pct"`
	CaughtPct      Interval    `json:"caught_pct"`
	Clients        []ClientCut `json:"clients_cut,omitempty"` // legitimate clients cut, most first
	// WorstClient is the largest share (%) and count cut from one
	// legitimate client in a replicate, as a mean over the replicates
	// ("other keys" rows of log runs aggregate many keys and are left
	// out); the intervals are over the replicates, as for the totals.
	WorstClientPct  float64  `json:"worst_client_cut_pct"`
	WorstClientCut  float64  `json:"worst_client_cut"`
	WorstClientPctI Interval `json:"worst_client_cut_pct_interval"`
	WorstClientCutI Interval `json:"worst_client_cut_interval"`
	// LegitBlockedS is the seconds legitimate clients spent blocked by a
	// penalty box (0 without block_s).
	LegitBlockedS Interval `json:"legit_blocked_s"`
	// MeanDelayS and P99DelayS are the delay the policy adds to the
	// requests it admits, s: the mean over every admitted request of every
	// replicate and the largest replicate's p99 (0 for an algorithm that
	// never delays).
	MeanDelayS float64 `json:"mean_delay_s,omitempty"`
	P99DelayS  float64 `json:"p99_delay_s,omitempty"`
	// Runs whose clients react (reactions.go): legitimate attempts per
	// intended request, and the added latency's p99, s.
	AmplificationLegit *Interval `json:"amplification_legit,omitempty"`
	LegitDelayP99S     *Interval `json:"legit_added_delay_p99_s,omitempty"`
	// Runs whose requests carry costs (cost.go): the cost units of
	// legitimate requests cut, and as a percentage of the legitimate cost.
	FalseCutCost    *Interval `json:"false_cut_cost,omitempty"`
	LegitCutCostPct *Interval `json:"legit_cut_cost_pct,omitempty"`
}

func (m *Measure) metric(name string) float64 {
	switch name {
	case "legit_cut_pct":
		return m.LegitCutPct.Mean
	case "missed_pct":
		return m.MissedPct.Mean
	}
	panic("recommend: unknown metric " + name)
}

// Check is one constraint at one policy in one run.
type Check struct {
	Constraint string  `json:"constraint"` // e.g. "false cut <= 1%"
	Value      float64 `json:"value"`      // in the bound's unit
	Margin     float64 `json:"margin"`     // bound − value (or value − bound for a minimum); < 0: violated
	Unit       string  `json:"unit"`       // "pp" or "requests"
	Bound      float64 `json:"bound"`      // in the bound's unit
	// Crosses: the 95% interval over replicates reaches past the bound
	// although the mean meets it.
	Crosses bool `json:"crosses,omitempty"`
}

func (c Check) ok() bool { return c.Margin >= 0 }

// checks evaluates every constraint on m.
func (o *Options) checks(m *Measure) []Check { return o.checkInto(nil, m, true) }

// checkInto appends the checks of m to out; unnamed, without their
// Constraint text (the first pass over a large run).
func (o *Options) checkInto(out []Check, m *Measure, named bool) []Check {
	add := func(name string, b *Bound, pctV, cnt Interval, isMin bool) {
		if b == nil {
			return
		}
		v, unit := cnt, "requests"
		if b.Pct {
			v, unit = pctV, "pp"
		}
		c := Check{Value: v.Mean, Unit: unit, Bound: b.Value}
		if named {
			c.Constraint = fmt.Sprintf("%s %s %s", name, map[bool]string{false: "<=", true: ">="}[isMin], b)
		}
		if isMin {
			c.Margin = v.Mean - b.Value
			c.Crosses = c.Margin >= 0 && v.Lo < b.Value
		} else {
			c.Margin = b.Value - v.Mean
			c.Crosses = c.Margin >= 0 && v.Hi > b.Value
		}
		out = append(out, c)
	}
	add("false cut", o.MaxFalseCut, m.LegitCutPct, m.FalseCut, false)
	out = o.costCheck(out, m, named)
	add("missed", o.MaxMissed, m.MissedPct, m.Missed, false)
	add("caught", o.MinCaught, m.CaughtPct, m.Caught, true)
	if b := o.MaxClientCut; b != nil {
		add("cut of any legitimate client", b, orPoint(m.WorstClientPctI, m.WorstClientPct), orPoint(m.WorstClientCutI, m.WorstClientCut), false)
	}
	if o.MaxLegitBlockedS != nil {
		out = append(out, blockedCheck(*o.MaxLegitBlockedS, m.LegitBlockedS, named))
	}
	return o.reactionChecks(out, m, named)
}

// orPoint is v, or the value x alone where v was never measured (a
// Measure built by hand).
func orPoint(v Interval, x float64) Interval {
	if v.N == 0 {
		return Interval{x, x, x, 1}
	}
	return v
}

// violation is how far a policy misses its constraints, summed in units
// of each bound: percentage points, or requests as a share of the bound
// (of at least one request).
func violation(cs []Check) float64 {
	var v float64
	for _, c := range cs {
		if c.Margin < 0 {
			if c.Unit == "pp" {
				v += -c.Margin
			} else {
				v += -c.Margin / math.Max(1, c.Bound)
			}
		}
	}
	return v
}

// Choice is a recommended policy (or, when nothing is feasible, the
// nearest miss).
type Choice struct {
	Label     string     `json:"policy"`
	Algorithm string     `json:"algorithm"`
	Runs      []RunFit   `json:"runs"`
	Worst     float64    `json:"worst"` // the objective in the worst run, %
	Neighbors []Neighbor `json:"neighbors,omitempty"`
	Cliff     bool       `json:"cliff"`
	Edges     []string   `json:"edges,omitempty"` // grid-edge warnings
	Why       string     `json:"why"`             // when a client is cut
	// Across is the spread of the choice's metrics over the runs (several
	// runs only).
	Across *Across `json:"across_runs,omitempty"`
}

// Across is a policy's metrics over several runs: each run's mean over its
// replicates, summarised.
type Across struct {
	LegitCutPct Spread `json:"legit_cut_pct"`
	MissedPct   Spread `json:"missed_pct"`
	CaughtPct   Spread `json:"caught_pct"`
}

// Spread is one metric over runs: the smallest, median and largest of the
// runs' means, and their mean with its 95% interval (Student's t over the
// runs, as if the runs were a sample of the days or scenarios to come).
type Spread struct {
	Min    float64  `json:"min"`
	Median float64  `json:"median"`
	Max    float64  `json:"max"`
	Mean   Interval `json:"mean"`
}

func spread(v []float64) Spread {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Spread{Min: s[0], Median: med, Max: s[n-1], Mean: pctInterval(v)}
}

// across summarises the choice's metrics over its runs.
func across(runs []RunFit) *Across {
	if len(runs) < 2 {
		return nil
	}
	var lc, mi, ca []float64
	for _, f := range runs {
		lc = append(lc, f.Measure.LegitCutPct.Mean)
		mi = append(mi, f.Measure.MissedPct.Mean)
		ca = append(ca, f.Measure.CaughtPct.Mean)
	}
	return &Across{spread(lc), spread(mi), spread(ca)}
}

// RunFit is a choice in one run.
type RunFit struct {
	Dir     string   `json:"run"`
	Measure *Measure `json:"metrics"`
	Checks  []Check  `json:"checks"`
	// Regret is how much worse (pp of the objective) the choice is in this
	// run than this run's own best feasible policy, which is Own.
	Regret float64 `json:"regret_pp"`
	Own    string  `json:"own_best,omitempty"`
}

// Result is a recommendation.
type Result struct {
	Runs        []string  `json:"runs"`
	Constraints []string  `json:"constraints"`
	Objective   string    `json:"objective"`
	Policies    int       `json:"policies"` // policies present in every run
	Feasible    int       `json:"feasible"`
	Overall     *Choice   `json:"overall,omitempty"`
	ByAlgorithm []*Choice `json:"by_algorithm"` // the best of each algorithm that has a feasible policy
	NearestMiss *Choice   `json:"nearest_miss,omitempty"`
	Notes       []string  `json:"notes,omitempty"`
}

// result is the empty result for runs.
func (o *Options) result(runs []*Run) *Result {
	res := &Result{Objective: o.objective()}
	for _, r := range runs {
		res.Runs = append(res.Runs, r.Dir)
	}
	for _, c := range o.checks(&Measure{}) {
		res.Constraints = append(res.Constraints, c.Constraint)
	}
	return res
}

// Recommend chooses from runs (at least one; several are joined on the
// policy label and the choice is the best in the worst of them).
func Recommend(runs []*Run, o Options) (*Result, error) {
	if err := o.prepare(); err != nil {
		return nil, err
	}
	res := o.result(runs)
	var err error
	// Policies in every run, in the first run's order.
	var labels []string
	for _, l := range runs[0].Labels {
		in := true
		for _, r := range runs[1:] {
			if _, ok := r.Measures[l]; !ok {
				in = false
				break
			}
		}
		if in {
			labels = append(labels, l)
		}
	}
	if len(labels) == 0 {
		return nil, fmt.Errorf("the runs have no policy in common (they join on the policy label)")
	}
	if n := len(runs[0].Labels) - len(labels); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d policies of %s are missing from another run and were left out", n, runs[0].Dir))
	}
	res.Policies = len(labels)
	pols := make([]model.Policy, len(labels))
	for i, l := range labels {
		if pols[i], err = model.ParseLabel(l); err != nil {
			return nil, fmt.Errorf("%s: %w", runs[0].Dir, err)
		}
	}
	// Each run's own best feasible objective, for the regret.
	own := make([]string, len(runs))
	ownVal := make([]float64, len(runs))
	for i, r := range runs {
		ownVal[i] = math.Inf(1)
		var best *choice.Keys
		structure := r.structure()
		for j, l := range r.Labels {
			m := r.Measures[l]
			if !feasible(o.checks(m)) {
				continue
			}
			k := o.keys(m)
			k.PointID, k.Structure = int64(j), structure
			if best == nil || choice.Better(&k, best) {
				own[i], ownVal[i], best = l, k.Objective, &k
			}
		}
	}
	// The candidates: their keys in the worst run, in the first run's
	// order (PointID is the index into labels).
	structure := func(k *choice.Keys) {
		k.Optional = choice.Optional(pols[k.PointID])
		if spec := runs[0].spec; spec != nil {
			k.Edges = len(choice.EdgesOfRange(spec, runs[0].Measures[labels[k.PointID]].PointID))
		}
	}
	pk := newPicks(len(runs), structure)
	pk.own, pk.ownVal = own, ownVal
	for i, l := range labels {
		ok, viol := true, 0.0
		var k choice.Keys
		for _, r := range runs {
			m := r.Measures[l]
			cs := o.checks(m)
			ok = ok && feasible(cs)
			viol += violation(cs)
			k = worse(k, o.keys(m))
		}
		k.PointID = int64(i)
		pk.consider(l, algorithmOf(l), k, viol, ok)
	}
	return o.build(res, runs, labels, pols, pk), nil
}

// traffic notes, first of all, runs without abusive traffic: every policy
// then misses and catches nothing, and only false cuts tell them apart.
func (o *Options) traffic(runs []*Run) []string {
	var none []string
	for _, r := range runs {
		abusive := false
		for _, m := range r.Measures {
			if m.OfferedAbusive > 0 {
				abusive = true
				break
			}
		}
		if !abusive {
			none = append(none, r.Dir)
		}
	}
	if len(none) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("no request of %s is labelled abusive: every policy misses and catches nothing there, "+
		"so only false cuts tell the policies apart (label abusive clients or keys, or add an overlay attacker)", strings.Join(none, ", "))}
}

// catchesNothing says so when the choice lets every abusive request
// through in some run that has abusive traffic.
func catchesNothing(c *Choice, runs []*Run) string {
	for _, f := range c.Runs {
		if m := f.Measure; m.OfferedAbusive > 0 && m.Caught.Mean == 0 {
			return fmt.Sprintf("the choice %s catches no abusive request in %s (missed 100%%): "+
				"within these constraints no swept policy does better; loosen the bound on false cuts or sweep tighter settings", c.Label, f.Dir)
		}
	}
	return ""
}

// dropOut says why algorithm alg has no choice: the constraints its
// nearest policy misses, by how much.
func (o *Options) dropOut(alg string, n int, label string, runs []*Run) string {
	var miss []string
	for _, r := range runs {
		for _, ck := range o.checks(r.Measures[label]) {
			if !ck.ok() {
				at := num(round2(ck.Value)) + "%"
				switch ck.Unit {
				case "requests":
					at = num(round2(ck.Value)) + " requests"
				case secondsUnit:
					at = num(round2(ck.Value)) + " s"
				case costUnit:
					at = num(round2(ck.Value)) + " " + costUnit
				}
				miss = append(miss, fmt.Sprintf("%s (at %s)", ck.Constraint, at))
			}
		}
		if len(miss) > 0 {
			if len(runs) > 1 {
				miss[0] = "in " + r.Dir + ": " + miss[0]
			}
			break
		}
	}
	settings := "settings"
	if n == 1 {
		settings = "setting"
	}
	return fmt.Sprintf("%s: none of its %d %s meets the constraints; the nearest, %s, misses %s",
		alg, n, settings, label, strings.Join(miss, " and "))
}

func indexOfRun(runs []*Run, dir string) int {
	for i, r := range runs {
		if r.Dir == dir {
			return i
		}
	}
	return 0
}

func feasible(cs []Check) bool {
	for _, c := range cs {
		if !c.ok() {
			return false
		}
	}
	return true
}

// keys are m's keys in the choice rule: the objective, the other metric
// and the delays (the candidate's structure and PointID left to the
// caller).
func (o *Options) keys(m *Measure) choice.Keys {
	return choice.Keys{Objective: m.metric(o.objective()), Other: m.metric(o.tieMetric()), MeanDelayS: m.MeanDelayS, P99DelayS: m.P99DelayS}
}

// worse is a candidate's keys over several runs: each metric in its worst
// run.
func worse(a, b choice.Keys) choice.Keys {
	return choice.Keys{Objective: max(a.Objective, b.Objective), Other: max(a.Other, b.Other),
		MeanDelayS: max(a.MeanDelayS, b.MeanDelayS), P99DelayS: max(a.P99DelayS, b.P99DelayS)}
}

func algorithmOf(label string) string { a, _, _ := strings.Cut(label, " "); return a }
