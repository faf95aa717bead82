// Package check compares a run with a baseline run: points joined on their
// parameters, single values up to tolerances, replicated values by their
// medians and a Mann–Whitney U test. It reads Parquet run directories only.
package check

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/internal/runfs"
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

// side is one run directory as Compare reads it: its points files (those
// its manifest lists) and what their footers say.
type side struct {
	what     string // "baseline" or "run"
	info     RunInfo
	complete bool
	files    []string
	cols     []map[string]bool // per file: its columns
	spec     string            // ratesweep.spec of the first file
	// allowMissing lets NULL and NaN metrics through (compared as NaN,
	// equal to NaN): --allow-incomplete. Otherwise they are refused, but for
	// NULL in a metric ratesweep leaves NULL when it did not measure it.
	allowMissing bool
	gridPoints   int64         // the spec's grid points (0: unknown)
	opened       *sweep.RunDir // checks each row's policy against the spec
}

// readSide lists a run directory's points files and checks that they
// belong to one scenario.
func readSide(dir, what string) (*side, error) {
	// Completeness is Compare's to judge (its own message and option).
	run, err := sweep.OpenRun(dir, sweep.OpenOptions{AllowIncomplete: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	files := run.Points
	s := &side{what: what, info: RunInfo{Dir: dir, Files: len(files)}, files: files, complete: run.Complete, opened: run}
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
			s.gridPoints = sp.Points()
		}
	}
	return s, nil
}

// parquetFooter reads a Parquet file's key-value metadata, columns and rows.
func parquetFooter(path string) (map[string]string, map[string]bool, int64, error) {
	kv, err := sweep.FileMetadata(path)
	if err != nil {
		return nil, nil, 0, err
	}
	names, rows, err := sweep.FileColumns(path)
	if err != nil {
		return nil, nil, 0, err
	}
	cols := map[string]bool{}
	for _, n := range names {
		cols[n] = true
	}
	return kv, cols, rows, nil
}

// manifestScenario returns the scenario hash of the run's manifest(s), or "".
func manifestScenario(dir string) string {
	ms, _ := filepath.Glob(filepath.Join(dir, "manifest*.json"))
	for _, m := range ms {
		data, err := runfs.ReadRegular(m, 256<<20)
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
func (s *side) hasAll(c string) bool {
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
	baseID, runID int64 // runID is -1 when the run lacks the point
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

// sidePoint is one point of one side: vals holds its replicates' metric
// values, row r's metric m at r·nm+m.
type sidePoint struct {
	id   int64
	key  string
	vals []float64
}

// points streams a side's points in file order, a batch of whole points at
// a time. With metrics nil it reads only the key columns. It refuses rows
// out of (point_id, replicate) order and repeated (point_id, replicate)
// pairs, within a file and across files.
func (s *side) points(ctx context.Context, keyCol string, metrics []string) iter.Seq2[[]sidePoint, error] {
	return s.pointsOf(ctx, keyCol, metrics, nil)
}

// pointsOf is points over the files for which only(file index) is true
// (nil: all).
func (s *side) pointsOf(ctx context.Context, keyCol string, metrics []string, only func(int) bool) iter.Seq2[[]sidePoint, error] {
	return func(yield func([]sidePoint, error) bool) {
		row := sweep.PointRow{Params: map[string]float64{}}
		lastID, lastRep, lastFile := int64(-1), int64(-1), ""
		var cur *sidePoint
		var curVals []float64 // cur's values so far
		for fi, f := range s.files {
			if only != nil && !only(fi) {
				continue
			}
			cols := []string{"point_id", "replicate"}
			if keyCol != "" {
				cols = append(cols, keyCol)
			}
			// The algorithm and parameters: the key without a policy
			// column, and checked against the spec either way.
			algAt := len(cols)
			cols = append(cols, "algorithm")
			var params []string
			for _, p := range model.Params {
				if s.cols[fi][p.Name] {
					params = append(params, p.Name)
				}
			}
			cols = append(cols, params...)
			nk := len(cols)
			cols = append(cols, metrics...)
			nullable := make([]bool, len(metrics))
			for m, name := range metrics {
				nullable[m] = sweep.NullableMetric(name)
			}
			stopped := false
			err := sweep.ScanFileBatches(ctx, f, cols, scanRows, func(rec arrow.RecordBatch) error {
				c := rec.Columns()
				var out []sidePoint
				// The batch's values in one slice; points take their part
				// when complete. A point begun in the previous batch
				// moves its values here.
				flat := make([]float64, 0, int(rec.NumRows())*len(metrics)+len(curVals))
				flat = append(flat, curVals...)
				start := 0
				for i := range int(rec.NumRows()) {
					id, ok := sweep.Int(c[0], i)
					if !ok || id < 0 {
						return &sweep.InputError{Msg: fmt.Sprintf("%s: row with a null or negative point_id", f)}
					}
					rep, _ := sweep.Int(c[1], i)
					switch {
					case id == lastID && rep <= lastRep && lastFile == f:
						return incompatiblef("%s %s: point_id %d replicate %d is repeated or out of order in %s: a run holds each (point, replicate) once, sorted (a duplicated or rewritten file?)", s.what, s.info.Dir, id, rep, f)
					case id == lastID && lastFile != f, id < lastID:
						return incompatiblef("%s %s: point_id %d of %s comes again, or out of order, after point_id %d of %s: a run holds each (point, replicate) once, sorted by point_id (a duplicated or leftover file?)", s.what, s.info.Dir, id, f, lastID, lastFile)
					}
					if id != lastID {
						if cur != nil {
							cur.vals = flat[start:len(flat):len(flat)]
							out = append(out, *cur)
						}
						cur, start = &sidePoint{id: id}, len(flat)
						row.Algorithm, _ = sweep.String(c[algAt], i)
						clear(row.Params)
						for k, p := range params {
							prm, _ := model.LookupParam(p) // enumerated ones are names
							if v, ok := sweep.ParamAt(prm, c[algAt+1+k], i); ok {
								row.Params[p] = v
							}
						}
						if err := s.opened.Policy(f, id, row.Algorithm, func(name string) (float64, bool) {
							v, ok := row.Params[name]
							return v, ok
						}); err != nil {
							return fmt.Errorf("%s %s: %w", s.what, s.info.Dir, err)
						}
						if keyCol != "" {
							cur.key, _ = sweep.String(c[2], i)
						} else {
							cur.key = row.Key()
						}
					}
					lastID, lastRep, lastFile = id, rep, f
					for m := range metrics {
						v, ok := sweep.Float(c[nk+m], i)
						if ((!ok && !nullable[m]) || math.IsNaN(v)) && !s.allowMissing {
							what := "NULL"
							if ok {
								what = "NaN"
							}
							return &sweep.InputError{Msg: fmt.Sprintf("%s %s: %s: point_id %d: %s is %s (ratesweep writes a number: the file was altered or not written by ratesweep); compare anyway with --allow-incomplete", s.what, s.info.Dir, f, id, metrics[m], what)}
						}
						if ok && !math.IsNaN(v) {
							if err := sweep.CheckMetric(f, id, metrics[m], v); err != nil {
								return fmt.Errorf("%s %s: %w", s.what, s.info.Dir, err)
							}
						}
						if !ok {
							v = math.NaN()
						}
						flat = append(flat, v)
					}
				}
				if cur != nil {
					curVals = flat[start:len(flat):len(flat)]
					cur.vals = curVals
				}
				if len(out) > 0 && !yield(out, nil) {
					stopped = true
					return errStop
				}
				return ctx.Err()
			})
			if stopped {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
		}
		if cur != nil {
			yield([]sidePoint{*cur}, nil)
		}
	}
}

var errStop = errors.New("stopped")

// scanRows is the record batch size of check's reads: smaller than the
// writer's, to hold less.
const scanRows = 8192

// cursor pulls one side's points one at a time.
type cursor struct {
	next  func() ([]sidePoint, error, bool)
	stop  func()
	buf   []sidePoint
	p     *sidePoint // the current point; nil at the end
	count int64      // points pulled
	err   error
}

func newCursor(seq iter.Seq2[[]sidePoint, error]) *cursor {
	next, stop := iter.Pull2(seq)
	c := &cursor{next: next, stop: stop}
	c.advance()
	return c
}

// advance moves to the next point (p nil at the end or on an error).
func (c *cursor) advance() {
	for len(c.buf) == 0 {
		b, err, ok := c.next()
		if !ok || err != nil {
			c.p, c.err = nil, err
			return
		}
		c.buf = b
	}
	c.p, c.buf = &c.buf[0], c.buf[1:]
	c.count++
}

// joiner joins the run's points to the baseline's.
type joiner struct {
	ctx       context.Context
	res       *Result
	base, run *side
	keyCol    string

	index    []keyEntry // the baseline's keys by hash, built at the first mismatch
	seed     maphash.Seed
	matched  idSet // baseline ids matched (or skipped as duplicates)
	pending  []pendingPoint
	ranges   [][2]int64 // per baseline file: its point_id range, read when needed
	basePts  int64
	dupBase  int
	dupRun   int
	runCount int64
}

type keyEntry struct {
	hash uint64
	id   int64
}

// pendingPoint is a run point whose baseline point the cursor has passed.
type pendingPoint struct {
	baseID int64
	run    sidePoint
}

func (j *joiner) join() error {
	res := j.res
	bc := newCursor(j.base.points(j.ctx, j.keyCol, res.Metrics))
	defer bc.stop()
	rc := newCursor(j.run.points(j.ctx, j.keyCol, res.Metrics))
	defer rc.stop()
	for ; rc.p != nil; rc.advance() {
		rp := rc.p
		if j.index == nil {
			if bc.p != nil && bc.p.key == rp.key {
				j.matchPoint(bc.p, rp)
				bc.advance()
				continue
			}
			if bc.err != nil {
				return bc.err
			}
			if err := j.buildIndex(); err != nil {
				return err
			}
		}
		bid, ok := j.lookup(rp.key)
		switch {
		case !ok:
			res.Added++
			if res.Options.MaxRows <= 0 || len(res.AddedPoints) < res.Options.MaxRows {
				res.AddedPoints = append(res.AddedPoints, rp.key)
			}
			continue
		case j.matched.has(bid):
			j.dupRun++
			continue
		}
		for bc.p != nil && bc.p.id < bid {
			bc.advance()
		}
		if bc.p != nil && bc.p.id == bid {
			if err := j.matchKeyed(bc.p, rp); err != nil {
				return err
			}
			bc.advance()
			continue
		}
		if bc.err != nil {
			return bc.err
		}
		p := *rp
		p.vals = slices.Clone(p.vals) // not the batch's array
		j.pending = append(j.pending, pendingPoint{bid, p})
		if len(j.pending) >= pendingMax {
			if err := j.matchPending(); err != nil {
				return err
			}
		}
	}
	if rc.err != nil {
		return rc.err
	}
	j.runCount = rc.count
	if err := bc.err; err != nil {
		return err
	}
	switch {
	case j.index == nil && bc.p == nil:
		j.basePts = bc.count // point for point, all matched
	case j.index == nil:
		// The baseline has more: place its duplicates, count the rest.
		if err := j.buildIndex(); err != nil {
			return err
		}
	}
	if err := j.matchPending(); err != nil {
		return err
	}
	res.Baseline.Points, res.Run.Points = j.basePts, j.runCount
	if j.dupBase > 0 || j.dupRun > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("points with the same parameters as an earlier point were skipped: %d in the baseline, %d in the run", j.dupBase, j.dupRun))
	}
	return j.listRemoved()
}

// matchPoint compares a baseline point with the run's point of the same key.
func (j *joiner) matchPoint(bp, rp *sidePoint) {
	j.matched.add(bp.id)
	j.res.comparePoint(&checkPoint{key: bp.key, baseID: bp.id, runID: rp.id, base: bp.vals, run: rp.vals})
}

// matchKeyed is matchPoint for a pair placed by the index, whose keys only
// share a hash so far.
func (j *joiner) matchKeyed(bp, rp *sidePoint) error {
	if bp.key != rp.key {
		return fmt.Errorf("check: the keys %q and %q share a 64-bit hash; cannot join (please report this)", bp.key, rp.key)
	}
	j.matchPoint(bp, rp)
	return nil
}

// buildIndex reads the baseline's keys once and sorts their hashes. A key
// seen before (the same parameters at another point_id) keeps its first
// point; the others are skipped.
func (j *joiner) buildIndex() error {
	j.seed = maphash.MakeSeed()
	j.index = make([]keyEntry, 0, min(j.base.gridPoints, j.base.info.Rows)) // no doubling at 10M points
	for batch, err := range j.base.points(j.ctx, j.keyCol, nil) {
		if err != nil {
			return err
		}
		for _, p := range batch {
			j.index = append(j.index, keyEntry{maphash.String(j.seed, p.key), p.id})
		}
	}
	j.basePts = int64(len(j.index))
	slices.SortFunc(j.index, func(a, b keyEntry) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	w := 0
	for i, e := range j.index {
		if i > 0 && e.hash == j.index[w-1].hash {
			j.dupBase++
			j.matched.add(e.id) // never reported as removed
			continue
		}
		j.index[w] = e
		w++
	}
	j.index = slices.Clip(j.index[:w])
	return nil
}

// lookup returns the baseline point_id of key.
func (j *joiner) lookup(key string) (int64, bool) {
	h := maphash.String(j.seed, key)
	i, ok := slices.BinarySearchFunc(j.index, h, func(e keyEntry, h uint64) int { return cmp.Compare(e.hash, h) })
	if !ok {
		return 0, false
	}
	return j.index[i].id, true
}

// pendingMax bounds the run points held for matchPending (about 200 bytes
// each with every metric); a variable for tests.
var pendingMax = 1 << 17

// matchPending compares the run points that came in another order than
// the baseline's, in another pass over the baseline files that hold their
// point ids (by the files' point_id statistics). It runs whenever
// pendingMax points wait, so a reordered grid costs passes, not memory.
func (j *joiner) matchPending() error {
	if len(j.pending) == 0 {
		return nil
	}
	slices.SortFunc(j.pending, func(a, b pendingPoint) int { return cmp.Compare(a.baseID, b.baseID) })
	lo, hi := j.pending[0].baseID, j.pending[len(j.pending)-1].baseID
	if j.ranges == nil {
		j.ranges = make([][2]int64, len(j.base.files))
		for i, f := range j.base.files {
			a, b, ok := sweep.IDRange(f)
			if !ok {
				a, b = math.MinInt64, math.MaxInt64
			}
			j.ranges[i] = [2]int64{a, b}
		}
	}
	only := func(fi int) bool { return j.ranges[fi][0] <= hi && lo <= j.ranges[fi][1] }
	k := 0
	for batch, err := range j.base.pointsOf(j.ctx, j.keyCol, j.res.Metrics, only) {
		if err != nil {
			return err
		}
		for i := range batch {
			for k < len(j.pending) && j.pending[k].baseID == batch[i].id {
				if j.matched.has(batch[i].id) {
					j.dupRun++
				} else if err := j.matchKeyed(&batch[i], &j.pending[k].run); err != nil {
					return err
				}
				k++
			}
		}
		if k == len(j.pending) {
			break
		}
	}
	if k < len(j.pending) {
		return fmt.Errorf("check: baseline point_id %d, placed by the index, was not found in %s again", j.pending[k].baseID, j.base.info.Dir)
	}
	j.pending = j.pending[:0]
	return nil
}

// listRemoved counts the baseline points no run point matched and lists
// their keys in baseline order (at most MaxRows), in a pass over the
// baseline's keys when there are any.
func (j *joiner) listRemoved() error {
	res := j.res
	res.Removed = int(j.basePts - j.matched.n)
	if res.Removed == 0 {
		return nil
	}
	limit := res.Options.MaxRows
	for batch, err := range j.base.points(j.ctx, j.keyCol, nil) {
		if err != nil {
			return err
		}
		for _, p := range batch {
			if !j.matched.has(p.id) {
				res.RemovedPoints = append(res.RemovedPoints, p.key)
			}
		}
		if limit > 0 && len(res.RemovedPoints) >= limit {
			res.RemovedPoints = res.RemovedPoints[:limit]
			break
		}
	}
	return nil
}

// accum is compare's running state: replicated moves awaiting the
// Benjamini–Hochberg step-up, and counts for the warnings.
type accum struct {
	moved      []pending // replicated moves beyond tolerance, awaiting the test
	tests      int       // replicated comparisons made
	fewForTest int
	fewForCI   int
	fewN       [2]int
	ordinal    int // compared points so far
}

type pending struct {
	point  int           // the point's ordinal among compared points
	status metricVerdict // the point's verdict without its untested moves
	change Change
}

// compare classifies every point of order (runID < 0: removed) and sorts
// the changes; Compare does the same point by point as it streams.
func (res *Result) compare(order []*checkPoint) {
	for _, p := range order {
		if p.runID < 0 {
			res.Removed++
			res.RemovedPoints = append(res.RemovedPoints, p.key)
			continue
		}
		res.comparePoint(p)
	}
	res.finish()
}

// comparePoint compares one point present on both sides.
func (res *Result) comparePoint(p *checkPoint) {
	a := &res.acc
	alpha := res.Options.alpha()
	nm := len(res.Metrics)
	res.Compared++
	a.ordinal++
	nb, nr := len(p.base)/nm, len(p.run)/nm
	if nb > 1 || nr > 1 {
		res.Replicated = true
		a.tests += nm
		if MWUMinP(nb, nr) > alpha {
			if a.fewForTest == 0 {
				a.fewN = [2]int{nb, nr}
			}
			a.fewForTest++
		}
		if min(nb, nr) < 6 {
			a.fewForCI++
		}
	}
	status := metricSame
	firstMoved := len(a.moved)
	for m, metric := range res.Metrics {
		v, c := compareMetric(metric, sample(p.base, nm, m), sample(p.run, nm, m), res.Options.tolerance(metric))
		c.Point, c.BaselineID, c.RunID = p.key, p.baseID, p.runID
		switch v {
		case metricChanged:
			res.addChange(c)
		case metricMoved:
			a.moved = append(a.moved, pending{point: a.ordinal, change: c})
			v = metricTolerated // unless the test flags it
		}
		status = max(status, v)
	}
	for i := firstMoved; i < len(a.moved); i++ {
		a.moved[i].status = status
	}
	switch status {
	case metricChanged:
		res.Points++
	case metricTolerated:
		res.Tolerated++
	default:
		res.Identical++
	}
}

// addChange keeps c if it is among the MaxRows worst changes.
func (res *Result) addChange(c Change) {
	res.ChangedValues++
	res.Changes = append(res.Changes, c)
	if limit := res.Options.MaxRows; limit > 0 && len(res.Changes) >= 2*limit+64 {
		res.sortChanges()
		res.Changes = res.Changes[:limit]
	}
}

// finish runs the Benjamini–Hochberg step-up over the replicated moves,
// writes the warnings and sorts the changes worst first.
//
// Replicated comparisons are many tests at once (points × metrics), so a
// per-test level alpha would flag about alpha of them in a mere re-run with
// another seed. Their p-values go through the Benjamini–Hochberg step-up at
// level alpha over every replicated comparison made (those within tolerance
// count with p = 1): the expected share of false flags among the flagged is
// at most alpha, and a re-run of the same distribution fails with
// probability about alpha.
func (res *Result) finish() {
	a := &res.acc
	alpha := res.Options.alpha()
	// Benjamini–Hochberg: flag the k smallest p-values, k the largest with
	// p(k) <= k/tests·alpha.
	slices.SortStableFunc(a.moved, func(x, y pending) int { return cmp.Compare(x.change.P, y.change.P) })
	k := 0
	for i, mv := range a.moved {
		if mv.change.P <= float64(i+1)/float64(a.tests)*alpha {
			k = i + 1
		}
	}
	flagged := map[int]bool{}
	for _, mv := range a.moved[:k] {
		res.addChange(mv.change)
		if mv.status != metricChanged && !flagged[mv.point] {
			flagged[mv.point] = true
			res.Tolerated-- // it counted as tolerated: its moves were untested
			res.Points++
		}
	}
	if a.fewForTest > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d points have too few replicates to detect a change (e.g. %d in the baseline, %d in the run: the smallest possible p-value is %.3g, above alpha %g); use at least 4 replicates on each side",
			a.fewForTest, a.fewN[0], a.fewN[1], MWUMinP(a.fewN[0], a.fewN[1]), alpha))
	}
	if a.fewForCI > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d points have fewer than 6 replicates on a side: no %.0f%% confidence interval for their medians", a.fewForCI, 100*CIConfidence))
	}
	if len(a.moved) > k {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d replicated metric values moved beyond tolerance but not significantly (Mann–Whitney U, Benjamini–Hochberg over %d comparisons at alpha %g): not flagged", len(a.moved)-k, a.tests, alpha))
	}
	res.acc = accum{}
	res.sortChanges()
	if limit := res.Options.MaxRows; limit > 0 && len(res.Changes) > limit {
		res.Changes = res.Changes[:limit]
	}
}

// sortChanges orders the changes worst first: largest relative change, then
// largest change, then baseline point_id and metric order.
func (res *Result) sortChanges() {
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
// (metricChanged when beyond it); NaN (a NULL or NaN let through by
// --allow-incomplete) equals NaN. Otherwise the medians are
// compared up to tol, and a move beyond it is metricMoved with the
// Mann–Whitney p-value in the Change, for the caller to judge. The Change's
// point fields are left to the caller.
func compareMetric(metric string, base, run []float64, tol Tolerance) (metricVerdict, Change) {
	c := Change{Metric: metric, NBaseline: len(base), NRun: len(run), P: math.NaN(),
		BaselineLo: math.NaN(), BaselineHi: math.NaN(), RunLo: math.NaN(), RunHi: math.NaN()}
	if len(base) == 1 && len(run) == 1 {
		c.Baseline, c.Run = base[0], run[0]
		switch {
		case sameValue(c.Baseline, c.Run):
			return metricSame, c
		case tol.Allows(c.Baseline, c.Delta()):
			return metricTolerated, c
		}
		return metricChanged, c
	}
	if sameSample(base, run) {
		return metricSame, c
	}
	c.Baseline, c.BaselineLo, c.BaselineHi, _ = MedianCI(base, CIConfidence)
	c.Run, c.RunLo, c.RunHi, _ = MedianCI(run, CIConfidence)
	if sameValue(c.Baseline, c.Run) || tol.Allows(c.Baseline, c.Delta()) {
		return metricTolerated, c
	}
	c.P = MannWhitneyU(base, run).P
	return metricMoved, c
}

// sameValue is == with NaN equal to NaN.
func sameValue(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

// sameSample reports whether a and b hold the same values in any order
// (NaN equal to NaN).
func sameSample(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	if slices.EqualFunc(a, b, sameValue) {
		return true
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x) // NaNs first
	slices.Sort(y)
	return slices.EqualFunc(x, y, sameValue)
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

// has reports whether id is in the set.
func (s *idSet) has(id int64) bool {
	p := s.pages[id>>16]
	return p != nil && p[(id&0xffff)>>6]&(uint64(1)<<uint(id&63)) != 0
}
