// Package check compares a run with a baseline run: points joined on their
// parameters, single values up to tolerances, replicated values by their
// medians and a Mann–Whitney U test. It reads Parquet run directories only.
package check

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// DefaultAlpha is the significance level of the Mann–Whitney test used for
// replicated points unless Options.Alpha says otherwise.
const DefaultAlpha = 0.05

// CIConfidence is the confidence of the medians' intervals shown for
// replicated points.
const CIConfidence = 0.95

// Tolerance is how far a metric may move without counting as a change: a
// difference d = run − baseline (of values, or of medians over replicates) is
// tolerated when |d| <= Abs or |d| <= Rel·|baseline|. The zero value demands
// equality.
type Tolerance struct {
	Abs float64 `json:"abs"` // in the metric's unit (requests, or percentage points)
	Rel float64 `json:"rel"` // a fraction of the baseline: 0.01 is 1%
}

// Allows reports whether a change of d from base is within the tolerance.
func (t Tolerance) Allows(base, d float64) bool {
	ad := math.Abs(d)
	return ad <= t.Abs || ad <= t.Rel*math.Abs(base)
}

// Options control Compare. The zero value compares exactly, at
// DefaultAlpha, and refuses a changed scenario.
type Options struct {
	Tolerances map[string]Tolerance // per metric; metrics not listed use Default
	Default    Tolerance
	// Alpha is the significance level for replicated points (0 = DefaultAlpha):
	// a median that moved beyond tolerance counts as changed only when its
	// Mann–Whitney U p-value passes the Benjamini–Hochberg step-up at level
	// Alpha over all replicated comparisons of the check.
	Alpha               float64
	AllowScenarioChange bool // compare runs of different scenarios instead of refusing
	FailOnAdded         bool // points missing from the baseline fail the check
	AllowRemoved        bool // baseline points missing from the run do not fail the check
	AllowIncomplete     bool // compare runs without manifest.json (killed, or sharded and not merged)
	// MaxRows keeps at most this many changes (the worst), added and removed
	// points' keys (0 = all); the counts stay exact.
	MaxRows int
}

func (o *Options) tolerance(metric string) Tolerance {
	if t, ok := o.Tolerances[metric]; ok {
		return t
	}
	if t, ok := o.Tolerances[sweep.CostTwin(metric)]; ok {
		return t // a cost total without its own takes its request twin's
	}
	return o.Default
}

func (o *Options) alpha() float64 {
	if o.Alpha <= 0 {
		return DefaultAlpha
	}
	return o.Alpha
}

// IncompatibleError says a run cannot be compared with the baseline (a
// different scenario, no metric in common, mixed runs). The CLI exits 2.
type IncompatibleError struct{ Msg string }

func (e *IncompatibleError) Error() string { return e.Msg }

func incompatiblef(format string, args ...any) error {
	return &IncompatibleError{Msg: fmt.Sprintf(format, args...)}
}

// Metrics lists the metric columns of points/*.parquet that Compare
// compares, in column order, then the cost totals that runs whose
// requests carry costs have (compared when both sides have them).
func Metrics() []string {
	return append(slices.Clone(sweep.PointColumns()[3+len(model.Params):]), sweep.CostColumns()...)
}

// RunInfo describes one side of a check.
type RunInfo struct {
	Dir            string `json:"dir"`
	Spec           string `json:"spec,omitempty"`     // spec name, from the files' metadata
	Scenario       string `json:"scenario,omitempty"` // scenario name
	ScenarioSHA256 string `json:"scenario_sha256,omitempty"`
	Files          int    `json:"files"`
	Rows           int64  `json:"rows"`   // points rows (points × replicates)
	Points         int64  `json:"points"` // distinct point ids
}

// Change is one metric of one point that moved beyond tolerance (and, for
// replicated points, significantly).
type Change struct {
	Point      string  // the point's parameters (sweep.PointRow.Key)
	BaselineID int64   // point_id in the baseline
	RunID      int64   // point_id in the run
	Metric     string  // points column
	Baseline   float64 // the value, or the median over replicates
	Run        float64
	NBaseline  int     // replicates
	NRun       int     //
	BaselineLo float64 // CIConfidence interval of the baseline median; NaN unless replicated and wide enough
	BaselineHi float64
	RunLo      float64
	RunHi      float64
	P          float64 // Mann–Whitney p-value; NaN for single values
}

// Delta is Run − Baseline.
func (c *Change) Delta() float64 { return c.Run - c.Baseline }

// RelDelta is Delta as a fraction of |Baseline| (±Inf when Baseline is 0).
func (c *Change) RelDelta() float64 {
	if c.Baseline == 0 {
		return math.Copysign(math.Inf(1), c.Delta())
	}
	return c.Delta() / math.Abs(c.Baseline)
}

// Replicated reports whether either side had more than one value.
func (c *Change) Replicated() bool { return c.NBaseline > 1 || c.NRun > 1 }

// Result is the comparison of a run with a baseline.
type Result struct {
	Baseline, Run   RunInfo
	ScenarioChanged bool
	Metrics         []string // compared
	Options         Options
	Replicated      bool // some point had more than one replicate

	Compared  int // points in both, joined on their parameters
	Identical int // compared points with every metric equal
	Tolerated int // compared points that moved, but within tolerance or not significantly
	Points    int // compared points with at least one Change

	Changes       []Change // worst first (largest relative change); at most Options.MaxRows
	ChangedValues int      // metric values changed beyond tolerance (len(Changes) before the cap)

	Added         int64    // run points whose parameters the baseline lacks
	AddedPoints   []string // their keys in run order (at most Options.MaxRows)
	Removed       int      // baseline points the run lacks
	RemovedPoints []string // their keys in baseline order (at most Options.MaxRows)

	Warnings []string

	acc accum // compare's running state
}

// Failed reports whether the check fails: a change, a removed point (unless
// allowed) or an added point (with FailOnAdded).
func (r *Result) Failed() bool {
	return r.Points > 0 || (r.Removed > 0 && !r.Options.AllowRemoved) || (r.Added > 0 && r.Options.FailOnAdded)
}

// Compare compares the run in runDir with the baseline in baseDir. Points
// are joined on their parameters (the policy column when both sides have
// it, else sweep.PointRow.Key), never on point_id, so a reordered or
// extended grid still compares. Single values compare exactly (NaN equals
// NaN), up to the tolerances; points with replicates compare their medians
// and count as changed only when the move is beyond tolerance and the
// Mann–Whitney U test is significant (Benjamini–Hochberg at Alpha over all
// replicated comparisons; see compare).
//
// It refuses (an *IncompatibleError) a side without manifest.json unless
// AllowIncomplete, a metric of the baseline the run lacks, a changed
// scenario unless AllowScenarioChange, and rows that repeat a (point_id,
// replicate) or are not sorted by it. A damaged file is a
// *sweep.DamagedError, other unreadable input a *sweep.InputError.
//
// Both sides are streamed in point_id order (as ratesweep writes them) and
// joined as they go, so memory does not grow with the run: when the keys of
// the two sides stop agreeing point for point, an index of the baseline's
// keys (16 bytes a point) places each run point; run points that come in
// another order than the baseline's wait, at most pendingMax at a time, for
// a pass over the baseline files that hold their points.
func Compare(ctx context.Context, baseDir, runDir string, opts Options) (*Result, error) {
	base, err := readSide(baseDir, "baseline")
	if err != nil {
		return nil, err
	}
	run, err := readSide(runDir, "run")
	if err != nil {
		return nil, err
	}
	base.allowMissing, run.allowMissing = opts.AllowIncomplete, opts.AllowIncomplete
	res := &Result{Baseline: base.info, Run: run.info, Options: opts}
	for _, s := range []*side{base, run} {
		if s.complete {
			continue
		}
		if !opts.AllowIncomplete {
			return res, incompatiblef("the %s %s has no manifest.json: it is incomplete (killed, still running, or sharded and not merged), so its missing points would pass unseen; finish it (ratesweep run --resume, or ratesweep merge), or compare anyway with --allow-incomplete", s.what, s.info.Dir)
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("the %s has no manifest.json: it may be incomplete (compared anyway, --allow-incomplete)", s.what))
	}
	bh, rh := base.info.ScenarioSHA256, run.info.ScenarioSHA256
	switch {
	case bh == "" || rh == "":
		res.Warnings = append(res.Warnings, "a side has no scenario hash (ratesweep.scenario_sha256 or manifest.json): cannot tell whether the scenario changed")
	case bh != rh:
		res.ScenarioChanged = true
		if !opts.AllowScenarioChange {
			return res, incompatiblef("the scenario changed: baseline %s has scenario %q (sha256 %.12s), run %s has %q (sha256 %.12s); use --allow-scenario-change to compare anyway, or --update to accept the run as the new baseline",
				baseDir, base.info.Scenario, bh, runDir, run.info.Scenario, rh)
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("the scenario changed (baseline %q sha256 %.12s, run %q sha256 %.12s): compared anyway", base.info.Scenario, bh, run.info.Scenario, rh))
	}
	var missing []string
	for _, m := range Metrics() {
		inBase, inRun := base.hasAll(m), run.hasAll(m)
		switch {
		case inBase && inRun:
			res.Metrics = append(res.Metrics, m)
		case inBase:
			missing = append(missing, m)
		case inRun:
			res.Warnings = append(res.Warnings, fmt.Sprintf("metric %s is new in the run (missing from the baseline): not compared", m))
		}
	}
	if len(missing) > 0 {
		return res, incompatiblef("the run %s lacks the baseline's metric column(s) %s (in some or all of its files): it cannot be checked; rerun it with this version", runDir, strings.Join(missing, ", "))
	}
	if len(res.Metrics) == 0 {
		return res, incompatiblef("baseline %s and run %s have no metric column in common", baseDir, runDir)
	}
	keyCol := ""
	if base.hasAll("policy") && run.hasAll("policy") {
		keyCol = "policy"
	}
	j := &joiner{ctx: ctx, res: res, base: base, run: run, keyCol: keyCol}
	if err := j.join(); err != nil {
		return nil, err
	}
	res.finish()
	return res, nil
}
