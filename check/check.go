// Package check compares a run with a baseline run: points joined on their
// parameters, single values up to tolerances, replicated values by their
// medians and a Mann–Whitney U test. It reads Parquet run directories only.
package check

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
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
	MaxAdded            int  // keep at most this many added points' keys (0 = all)
}

func (o *Options) tolerance(metric string) Tolerance {
	if t, ok := o.Tolerances[metric]; ok {
		return t
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
// compares, in column order.
func Metrics() []string {
	return slices.Clone(sweep.PointColumns()[3+len(model.Params):])
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

	Changes []Change // worst first (largest relative change)

	Added         int64    // run points whose parameters the baseline lacks
	AddedPoints   []string // their keys in run order (at most Options.MaxAdded)
	Removed       int      // baseline points the run lacks
	RemovedPoints []string // their keys in baseline order

	Warnings []string
}

// Failed reports whether the check fails: a change, a removed point (unless
// allowed) or an added point (with FailOnAdded).
func (r *Result) Failed() bool {
	return r.Points > 0 || (r.Removed > 0 && !r.Options.AllowRemoved) || (r.Added > 0 && r.Options.FailOnAdded)
}

// sideFiles is one side's points files and what their footers say.
type sideFiles struct {
	info  RunInfo
	files []string
	cols  []map[string]bool // per file: its columns
	spec  string            // ratesweep.spec of the first file
}

// readSide lists a run directory's points files and checks that they belong
// to one scenario.
func readSide(dir, what string) (*sideFiles, error) {
	files, err := sweep.PartFiles(dir, "points")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	s := &sideFiles{info: RunInfo{Dir: dir, Files: len(files)}, files: files}
	hashes := map[string]string{} // hash → first file with it
	for _, f := range files {
		kv, cols, rows, err := parquetFooter(f)
		if err != nil {
			return nil, err
		}
		s.cols = append(s.cols, cols)
		s.info.Rows += rows
		if h := kv[sweep.MetaScenarioSHA256]; h != "" {
			if _, ok := hashes[h]; !ok {
				hashes[h] = f
			}
		}
		if s.spec == "" {
			s.spec = kv[sweep.MetaSpec]
		}
	}
	if len(hashes) > 1 {
		var l []string
		for h, f := range hashes {
			l = append(l, fmt.Sprintf("%s has %.12s", f, h))
		}
		slices.Sort(l)
		return nil, incompatiblef("%s %s mixes runs of different scenarios (%s)", what, dir, strings.Join(l, "; "))
	}
	for h := range hashes {
		s.info.ScenarioSHA256 = h
	}
	if s.info.ScenarioSHA256 == "" {
		s.info.ScenarioSHA256 = manifestScenario(dir)
	}
	if s.spec != "" {
		if sp, err := sweep.ParseSpec([]byte(s.spec), nil); err == nil {
			s.info.Spec, s.info.Scenario = sp.Name, sp.WorkloadName()
		}
	}
	return s, nil
}

// parquetFooter reads a Parquet file's key-value metadata, columns and rows.
func parquetFooter(path string) (map[string]string, map[string]bool, int64, error) {
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, nil, 0, &sweep.InputError{Msg: fmt.Sprintf("%s: not a readable Parquet file: %v", path, err)}
	}
	defer rdr.Close()
	md := rdr.MetaData()
	kv := map[string]string{}
	for i, k := range md.KeyValueMetadata().Keys() {
		kv[k] = md.KeyValueMetadata().Values()[i]
	}
	cols := map[string]bool{}
	for i := range md.Schema.NumColumns() {
		cols[md.Schema.Column(i).Name()] = true
	}
	return kv, cols, rdr.NumRows(), nil
}

// manifestScenario returns the scenario hash of the run's manifest(s), or "".
func manifestScenario(dir string) string {
	ms, _ := filepath.Glob(filepath.Join(dir, "manifest*.json"))
	for _, m := range ms {
		data, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var v sweep.Manifest
		if json.Unmarshal(data, &v) == nil && v.ScenarioSHA256 != "" {
			return v.ScenarioSHA256
		}
	}
	return ""
}

// hasAll reports whether every file of the side has column c.
func (s *sideFiles) hasAll(c string) bool {
	for _, cols := range s.cols {
		if !cols[c] {
			return false
		}
	}
	return true
}

// checkPoint is one baseline point and the run's values for it, replicate
// by replicate: row r's metric m is at r·len(metrics)+m.
type checkPoint struct {
	key           string
	baseID, runID int64 // runID is -1 until the run has the point
	base, run     []float64
}

// sample returns metric m of every replicate of one side (nm metrics).
func sample(side []float64, nm, m int) []float64 {
	n := len(side) / nm
	if n == 1 {
		return side[m : m+1]
	}
	out := make([]float64, n)
	for r := range out {
		out[r] = side[r*nm+m]
	}
	return out
}

// Compare compares the run in runDir with the baseline in baseDir. Points are
// joined on their parameters (sweep.PointRow.Key), never on point_id, so a
// reordered or extended grid still compares. Single values compare exactly,
// up to the tolerances; points with replicates compare their medians and
// count as changed only when the move is beyond tolerance and the
// Mann–Whitney U test is significant (Benjamini–Hochberg at Alpha over all
// replicated comparisons; see compare).
//
// The baseline is held in memory (one value per point, metric and
// replicate); the run is streamed, only the columns needed, keeping values
// only for points the baseline has. Unreadable or incompatible inputs are
// *sweep.InputError or *IncompatibleError.
func Compare(ctx context.Context, baseDir, runDir string, opts Options) (*Result, error) {
	base, err := readSide(baseDir, "baseline")
	if err != nil {
		return nil, err
	}
	run, err := readSide(runDir, "run")
	if err != nil {
		return nil, err
	}
	res := &Result{Baseline: base.info, Run: run.info, Options: opts}
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
	for _, m := range Metrics() {
		inBase, inRun := base.hasAll(m), run.hasAll(m)
		switch {
		case inBase && inRun:
			res.Metrics = append(res.Metrics, m)
		case inBase:
			res.Warnings = append(res.Warnings, fmt.Sprintf("metric %s is missing from (some files of) the run: not compared", m))
		case inRun:
			res.Warnings = append(res.Warnings, fmt.Sprintf("metric %s is new in the run (missing from the baseline): not compared", m))
		}
	}
	if len(res.Metrics) == 0 {
		return res, incompatiblef("baseline %s and run %s have no metric column in common", baseDir, runDir)
	}
	if ms, _ := filepath.Glob(filepath.Join(runDir, "manifest*.json")); len(ms) == 0 {
		res.Warnings = append(res.Warnings, "the run has no manifest.json: it may be incomplete (missing points count as removed)")
	}

	points := map[string]*checkPoint{}
	var order []*checkPoint
	dupBase, dupRun := 0, 0
	baseIDs := idSet{}
	err = scanCheckPoints(ctx, base, res.Metrics, func(id int64, key string, vals []float64) {
		first := baseIDs.add(id)
		p := points[key]
		if p == nil {
			p = &checkPoint{key: key, baseID: id, runID: -1, base: make([]float64, 0, len(vals))}
			points[key] = p
			order = append(order, p)
		} else if p.baseID != id {
			if first {
				dupBase++
			}
			return
		}
		p.base = append(p.base, vals...)
	})
	if err != nil {
		return nil, err
	}
	res.Baseline.Points = baseIDs.n
	runIDs := idSet{}
	err = scanCheckPoints(ctx, run, res.Metrics, func(id int64, key string, vals []float64) {
		first := runIDs.add(id)
		p := points[key]
		if p == nil {
			if first {
				res.Added++
				if opts.MaxAdded <= 0 || len(res.AddedPoints) < opts.MaxAdded {
					res.AddedPoints = append(res.AddedPoints, key)
				}
			}
			return
		}
		if p.runID < 0 {
			p.runID = id
		} else if p.runID != id {
			if first {
				dupRun++
			}
			return
		}
		p.run = append(p.run, vals...)
	})
	if err != nil {
		return nil, err
	}
	res.Run.Points = runIDs.n
	if dupBase > 0 || dupRun > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("points with the same parameters as an earlier point were skipped: %d in the baseline, %d in the run", dupBase, dupRun))
	}
	res.compare(order)
	return res, nil
}

// compare classifies every baseline point and sorts the changes.
//
// Replicated comparisons are many tests at once (points × metrics), so a
// per-test level alpha would flag about alpha of them in a mere re-run with
// another seed. Their p-values go through the Benjamini–Hochberg step-up at
// level alpha over every replicated comparison made (those within tolerance
// count with p = 1): the expected share of false flags among the flagged is
// at most alpha, and a re-run of the same distribution fails with
// probability about alpha.
func (res *Result) compare(order []*checkPoint) {
	alpha := res.Options.alpha()
	nm := len(res.Metrics)
	fewForTest, fewForCI := 0, 0
	var fewN [2]int
	type pending struct {
		point  int // index in order
		change Change
	}
	var moved []pending // replicated moves beyond tolerance, awaiting the test
	tests := 0          // replicated comparisons made
	status := make([]metricVerdict, len(order))
	for i, p := range order {
		if p.runID < 0 {
			res.Removed++
			res.RemovedPoints = append(res.RemovedPoints, p.key)
			continue
		}
		res.Compared++
		nb, nr := len(p.base)/nm, len(p.run)/nm
		replicated := nb > 1 || nr > 1
		if replicated {
			res.Replicated = true
			tests += len(res.Metrics)
			if MWUMinP(nb, nr) > alpha {
				if fewForTest == 0 {
					fewN = [2]int{nb, nr}
				}
				fewForTest++
			}
			if min(nb, nr) < 6 {
				fewForCI++
			}
		}
		for m, metric := range res.Metrics {
			v, c := compareMetric(metric, sample(p.base, nm, m), sample(p.run, nm, m), res.Options.tolerance(metric))
			c.Point, c.BaselineID, c.RunID = p.key, p.baseID, p.runID
			switch v {
			case metricChanged:
				res.Changes = append(res.Changes, c)
			case metricMoved:
				moved = append(moved, pending{i, c})
				v = metricTolerated // unless the test below flags it
			}
			status[i] = max(status[i], v)
		}
	}
	// Benjamini–Hochberg: flag the k smallest p-values, k the largest with
	// p(k) <= k/tests·alpha.
	slices.SortStableFunc(moved, func(a, b pending) int { return cmp.Compare(a.change.P, b.change.P) })
	k := 0
	for j, mv := range moved {
		if mv.change.P <= float64(j+1)/float64(tests)*alpha {
			k = j + 1
		}
	}
	for _, mv := range moved[:k] {
		res.Changes = append(res.Changes, mv.change)
		status[mv.point] = metricChanged
	}
	for i, p := range order {
		if p.runID < 0 {
			continue
		}
		switch status[i] {
		case metricChanged:
			res.Points++
		case metricTolerated:
			res.Tolerated++
		default:
			res.Identical++
		}
	}
	if fewForTest > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d points have too few replicates to detect a change (e.g. %d in the baseline, %d in the run: the smallest possible p-value is %.3g, above alpha %g); use at least 4 replicates on each side",
			fewForTest, fewN[0], fewN[1], MWUMinP(fewN[0], fewN[1]), alpha))
	}
	if fewForCI > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d points have fewer than 6 replicates on a side: no %.0f%% confidence interval for their medians", fewForCI, 100*CIConfidence))
	}
	if len(moved) > k {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d replicated metric values moved beyond tolerance but not significantly (Mann–Whitney U, Benjamini–Hochberg over %d comparisons at alpha %g): not flagged", len(moved)-k, tests, alpha))
	}
	slices.SortStableFunc(res.Changes, func(a, b Change) int {
		if c := cmp.Compare(math.Abs(b.RelDelta()), math.Abs(a.RelDelta())); c != 0 {
			return c
		}
		if c := cmp.Compare(math.Abs(b.Delta()), math.Abs(a.Delta())); c != 0 {
			return c
		}
		if c := cmp.Compare(a.BaselineID, b.BaselineID); c != 0 {
			return c
		}
		return cmp.Compare(slices.Index(res.Metrics, a.Metric), slices.Index(res.Metrics, b.Metric))
	})
}

type metricVerdict uint8

const (
	metricSame      metricVerdict = iota // equal values (or identical samples)
	metricTolerated                      // moved within tolerance (or, after the test, not significantly)
	metricMoved                          // replicated: the median moved beyond tolerance; to be tested
	metricChanged                        // moved beyond tolerance (and significantly)
)

// compareMetric compares one metric of one point: base and run hold a value
// per replicate. Single values on both sides compare exactly up to tol
// (metricChanged when beyond it). Otherwise the medians are compared up to
// tol, and a move beyond it is metricMoved with the Mann–Whitney p-value in
// the Change, for the caller to judge. The Change's point fields are left to
// the caller.
func compareMetric(metric string, base, run []float64, tol Tolerance) (metricVerdict, Change) {
	c := Change{Metric: metric, NBaseline: len(base), NRun: len(run), P: math.NaN(),
		BaselineLo: math.NaN(), BaselineHi: math.NaN(), RunLo: math.NaN(), RunHi: math.NaN()}
	if len(base) == 1 && len(run) == 1 {
		c.Baseline, c.Run = base[0], run[0]
		d := c.Delta()
		switch {
		case d == 0 || (math.IsNaN(c.Baseline) && math.IsNaN(c.Run)):
			return metricSame, c
		case tol.Allows(c.Baseline, d):
			return metricTolerated, c
		}
		return metricChanged, c
	}
	if sameSample(base, run) {
		return metricSame, c
	}
	c.Baseline, c.BaselineLo, c.BaselineHi, _ = MedianCI(base, CIConfidence)
	c.Run, c.RunLo, c.RunHi, _ = MedianCI(run, CIConfidence)
	if tol.Allows(c.Baseline, c.Delta()) {
		return metricTolerated, c
	}
	c.P = MannWhitneyU(base, run).P
	return metricMoved, c
}

// sameSample reports whether a and b hold the same values in any order.
func sameSample(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	if slices.Equal(a, b) {
		return true
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// scanCheckPoints streams the points rows of one side: point_id, algorithm, the
// parameter columns each file has and the metrics. fn gets the row's point
// id, key and metric values (the slice is reused between calls).
func scanCheckPoints(ctx context.Context, s *sideFiles, metrics []string, fn func(id int64, key string, vals []float64)) error {
	vals := make([]float64, len(metrics))
	row := sweep.PointRow{Params: map[string]float64{}}
	for fi, f := range s.files {
		cols := []string{"point_id", "algorithm"}
		var params []string
		for _, p := range model.Params {
			if s.cols[fi][p.Name] {
				params = append(params, p.Name)
			}
		}
		cols = append(append(cols, params...), metrics...)
		lastID, key := int64(-1), ""
		err := sweep.ScanFile(ctx, f, cols, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				id, ok := sweep.Int(c[0], i)
				if !ok || id < 0 {
					return &sweep.InputError{Msg: fmt.Sprintf("%s: row with a null or negative point_id", f)}
				}
				if id != lastID || key == "" {
					row.Algorithm, _ = sweep.String(c[1], i)
					clear(row.Params)
					for k, p := range params {
						prm, _ := model.LookupParam(p) // enumerated ones are names
						if v, ok := sweep.ParamAt(prm, c[2+k], i); ok {
							row.Params[p] = v
						}
					}
					lastID, key = id, row.Key()
				}
				for m := range metrics {
					v, ok := sweep.Float(c[2+len(params)+m], i)
					if !ok {
						v = math.NaN()
					}
					vals[m] = v
				}
				fn(id, key, vals)
			}
			return ctx.Err()
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// idSet is a set of point ids in pages of 65,536 bits, so a dense run of
// ids costs a bit each.
type idSet struct {
	pages map[int64]*[1024]uint64
	n     int64
}

// add inserts id and reports whether it was new.
func (s *idSet) add(id int64) bool {
	if s.pages == nil {
		s.pages = map[int64]*[1024]uint64{}
	}
	p := s.pages[id>>16]
	if p == nil {
		p = new([1024]uint64)
		s.pages[id>>16] = p
	}
	w, bit := (id&0xffff)>>6, uint64(1)<<uint(id&63)
	if p[w]&bit != 0 {
		return false
	}
	p[w] |= bit
	s.n++
	return true
}
