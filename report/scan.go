package report

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// Options control what a report gathers and draws. The zero value uses the
// defaults below.
type Options struct {
	MaxCurves      int       // curves per sweep entry on the trade-off plot (values of the secondary parameter); default 4
	MaxCurvePoints int       // points kept per curve (the swept axis is thinned evenly); default 2000
	MaxHeatBins    int       // heat-map cells per axis (axis values are binned beyond it); default 160 (a map is about 550 pixels wide)
	Knees          int       // frontier knees selected for per-client plots; 0 = default 2, negative = none
	Targets        []float64 // missed-% targets for the "best setting" table; default: see Run.Targets
	// AllowIncomplete reports on a run without its manifest.json (interrupted,
	// or shards not merged) instead of failing with an *IncompleteError; every
	// page and figure then carries a banner saying so.
	AllowIncomplete bool
	// Progress, when set, is called before each record batch of points is
	// read with the rows read so far and the rows expected (grid points ×
	// replicates), and once at the end with both the rows read.
	Progress func(rows, points int64)
}

// IncompleteError is Load's error for a run without its manifest.json, or
// a finished run whose manifest lists part files the directory lacks.
type IncompleteError struct {
	Dir      string
	Missing  []string // part files the finished run would have, relative to Dir
	Parts    int      // part files per table in the finished run
	Finished bool     // manifest.json is there: parts were deleted after the run
}

func (e *IncompleteError) Error() string {
	msg := fmt.Sprintf("%s is incomplete: no manifest.json (the run was interrupted, or its shards were not merged with `ratesweep merge`)", e.Dir)
	if e.Finished {
		msg = fmt.Sprintf("%s is incomplete: manifest.json lists part files that are not there (deleted or moved after the run finished)", e.Dir)
	}
	if len(e.Missing) > 0 {
		names := e.Missing
		if len(names) > 6 {
			names = append(names[:6:6], fmt.Sprintf("… %d more", len(e.Missing)-6))
		}
		msg += fmt.Sprintf("; missing %d of %d part files: %s", len(e.Missing), 2*e.Parts, strings.Join(names, ", "))
	}
	return msg + "; recompute them with `" + ResumeCommand(e.Dir) + "`, or report on what is there with --allow-incomplete"
}

// ResumeCommand is the command that finishes the run in dir: ratesweep run
// on the spec.yaml that run keeps in the directory, with --resume.
func ResumeCommand(dir string) string {
	spec := filepath.Join(dir, "spec.yaml")
	if _, err := os.Stat(spec); err != nil {
		return "ratesweep run SPEC.yaml --out " + shellWord(dir) + " --resume"
	}
	return "ratesweep run " + shellWord(spec) + " --out " + shellWord(dir) + " --resume"
}

// shellWord quotes s for a POSIX shell when it holds anything but safe
// characters.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=+,:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// checkComplete returns an *IncompleteError when dir has no manifest.json.
func checkComplete(dir string, spec *sweep.Spec) error {
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
		return nil
	}
	parts := sweep.ShardParts(sweep.NewGrid(spec), sweep.Shard{Index: 0, Count: 1})
	e := &IncompleteError{Dir: dir, Parts: len(parts)}
	for _, table := range []string{"points", "clients"} {
		for _, p := range parts {
			name := filepath.Join(table, p.Name())
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				e.Missing = append(e.Missing, name)
			}
		}
	}
	return e
}

func (o Options) withDefaults() Options {
	if o.MaxCurves <= 0 {
		o.MaxCurves = 4
	}
	if o.MaxCurvePoints <= 1 {
		o.MaxCurvePoints = 2000
	}
	if o.MaxHeatBins <= 1 {
		o.MaxHeatBins = 160
	}
	if o.Knees < 0 {
		o.Knees = 0
	} else if o.Knees == 0 {
		o.Knees = 2
	}
	return o
}

// Lesson reference policies, marked on the trade-off plot when the run has them.
var lessonRefs = []model.Policy{model.LessonFixed, model.LessonSliding, model.LessonBucket}

// Run is what a report shows about a run directory, gathered in one
// streaming pass over its points files plus a read of the clients files
// that hold the selected points.
type Run struct {
	Dir      string
	Spec     *sweep.Spec
	Files    int   // points files read
	Rows     int64 // points rows read
	Points   int64 // distinct grid points (rows pooled over replicates)
	Frontier Frontier
	Algos    []*AlgoSummary // in the spec's order of first appearance
	Curves   []*Curve
	Heats    []*Heat
	Refs     []Point    // the lesson's reference points present in the run
	Selected []Selected // points with per-client bars and timelines
	Warnings []string
	// Incomplete, when set, says why the run is partial (Options.AllowIncomplete);
	// every page and figure shows it as a banner.
	Incomplete string
	opts       Options
	specYAML   string
	targets    []Target // Targets, once chosen
}

// AlgoSummary is one algorithm's share of the run.
type AlgoSummary struct {
	Algorithm model.Algorithm
	Points    int64
	Frontier  Frontier
}

// ParamValue is a parameter held fixed, e.g. window_s = 60.
type ParamValue struct {
	Name  string
	Value float64
	Label string // replaces "name value unit" when set, e.g. "nodelay"
}

func (p ParamValue) String() string {
	if p.Label != "" {
		return p.Label
	}
	prm, _ := model.LookupParam(p.Name)
	if n := prm.ParamName(p.Value); prm.Values != nil && n != "" {
		return fmt.Sprintf("%s %s", p.Name, n)
	}
	if prm.Unit == "" {
		return fmt.Sprintf("%s %g", p.Name, p.Value)
	}
	return fmt.Sprintf("%s %g %s", p.Name, p.Value, shortUnit(prm.Unit))
}

// slug is a file-name part, e.g. "delay0", "nodelay" or "counts_all".
func (p ParamValue) slug() string {
	if p.Label != "" {
		return strings.ReplaceAll(p.Label, " ", "_")
	}
	if prm, _ := model.LookupParam(p.Name); prm.Values != nil && prm.ParamName(p.Value) != "" {
		return p.Name + "_" + prm.ParamName(p.Value) // an enumerated value by its name: counts_all
	}
	return fmt.Sprintf("%s%g", p.Name, p.Value)
}

// fixedValue is entry e's value v of parameter name, held fixed on a plot,
// named as the algorithm names it against every swept value of the others
// (nginx's delay at or above every swept burst is labelled "nodelay").
func fixedValue(e *sweep.Entry, name string, v float64) ParamValue {
	pv := ParamValue{Name: name, Value: v}
	if d := e.Algorithm.Describe(); d != nil && d.ValueName != nil {
		most := func(other string) float64 {
			m := 0.0
			for _, ax := range e.Axes {
				if ax.Param == other {
					m = slices.Max(ax.Values)
				}
			}
			return m
		}
		if n := d.ValueName(name, v, most); n != "" {
			pv.Label = n
		}
	}
	return pv
}

func shortUnit(u string) string {
	switch u {
	case "requests":
		return "req"
	}
	return u
}

// acc pools the outcomes of the points that fall into one curve slot or one
// heat-map cell.
type acc struct {
	falseCut, offLegit, missed, offAbusive int64
	n                                      int64
}

func (a *acc) add(p *Point) {
	a.falseCut += p.FalseCut
	a.offLegit += p.OfferedLegit
	a.missed += p.Missed
	a.offAbusive += p.OfferedAbusive
	a.n++
}

func (a *acc) xy() (x, y float64, ok bool) {
	return pct(a.falseCut, a.offLegit), pct(a.missed, a.offAbusive), a.n > 0
}

// Curve is one algorithm with all parameters but one held fixed: the swept
// parameter traces a line on the trade-off plot.
type Curve struct {
	Algorithm model.Algorithm
	Param     string       // the parameter swept along the curve
	Fixed     []ParamValue // the others
	Total     int          // values of Param in the spec
	Values    []float64    // values of Param kept (thinned evenly when Total is large)
	acc       []acc
}

// CurvePoint is one point of a curve.
type CurvePoint struct {
	Value float64 // the swept parameter's value
	X, Y  float64 // legit cut %, missed %
}

// Points returns the curve's points that the run contains, in swept order.
func (c *Curve) Points() []CurvePoint {
	var out []CurvePoint
	for i := range c.acc {
		if x, y, ok := c.acc[i].xy(); ok {
			out = append(out, CurvePoint{c.Values[i], x, y})
		}
	}
	return out
}

// Label names the curve, e.g. "sliding window, window_s 60 s".
func (c *Curve) Label() string {
	s := algoLabel(c.Algorithm)
	for _, f := range c.Fixed {
		s += ", " + f.String()
	}
	return s
}

func algoLabel(a model.Algorithm) string { return a.Title() }

// Heat is one sweep entry's grid of two swept parameters, each cell pooling
// the points binned into it.
type Heat struct {
	Algorithm      model.Algorithm
	XParam, YParam string
	XValues        []float64 // the spec's values of XParam (binned into NX bins)
	YValues        []float64
	NX, NY         int
	Fixed          []ParamValue // further parameters held fixed
	cells          []acc        // cells[y*NX+x]
}

// Cell returns the pooled legit cut % and missed % of bin (x, y).
func (h *Heat) Cell(x, y int) (legitCut, missed float64, ok bool) {
	return h.cells[y*h.NX+x].xy()
}

// binRange returns the range of values in bin b of n bins over vals.
func binRange(vals []float64, n, b int) (lo, hi float64) {
	first := (b*len(vals) + n - 1) / n
	last := ((b+1)*len(vals)+n-1)/n - 1
	return vals[first], vals[last]
}

func binOf(idx, total, n int) int { return idx * n / total }

// entryPlan maps an entry's point ids to axis indices and routes points to
// curves and heat-map cells.
type entryPlan struct {
	entry     *sweep.Entry
	first     int64
	size      int64
	primary   int   // axis swept along curves (-1: the entry has no axes)
	secondary int   // axis whose values pick the curve (-1: none)
	refIdx    []int // index each other axis must have to be drawn
	curveOf   map[int]*Curve
	slot      map[int]int // swept-axis index → curve slot when thinned (nil: identity)
	others    []int       // further swept axes (more than one value), one heat map per combination
	heats     []*Heat     // by mixed-radix index over others' indices; nil: no heat maps
	heatAll   bool        // heats cover every combination (else one heat on the refIdx slice)
	idx       []int       // scratch
	lo, hi    []float64   // each axis's least and greatest value
}

// Selected is a point shown with per-client bars and a timeline.
type Selected struct {
	Point
	Why     string       // e.g. "lesson: fixed window 60 s", "frontier knee"
	Slug    string       // file-name stem
	Clients []ClientStat // in scenario order; nil when the clients file is missing
}

// ClientStat is one client's requests at a selected point, averaged over
// replicates.
type ClientStat struct {
	Name     string
	Class    model.Class
	Stage    model.Stage
	Offered  float64
	Admitted float64
	Cut      float64
}

// Load reads a run directory's points files in one streaming pass (only the
// columns it needs, one record batch at a time) and the clients files that
// hold the selected points. Bad input is a *sweep.InputError naming the file.
func Load(ctx context.Context, dir string, opts Options) (*Run, error) {
	r := &Run{Dir: dir, opts: opts.withDefaults()}
	// A finished run missing parts its manifest lists: refused (exit 1, how
	// to recompute them), or read without them under AllowIncomplete.
	if missing := sweep.MissingParts(dir); len(missing) > 0 && sweep.RunComplete(dir) {
		if !opts.AllowIncomplete {
			e := &IncompleteError{Dir: dir, Missing: missing, Finished: true}
			if run, err := sweep.OpenRun(dir, sweep.OpenOptions{AllowIncomplete: true}); err == nil && run.Manifest != nil {
				e.Parts = len(run.Manifest.Parts)
			}
			return nil, e
		}
	}
	// Without manifest.json, checkComplete below names the missing parts.
	run, err := sweep.OpenRun(dir, sweep.OpenOptions{AllowIncomplete: opts.AllowIncomplete || !sweep.RunComplete(dir)})
	if err != nil {
		return nil, err
	}
	if len(run.Missing) > 0 {
		r.Incomplete = fmt.Sprintf("INCOMPLETE RUN: %d of %d part files listed in manifest.json are missing (%s); figures and tables show only the points present, and the frontier may not be the run's; %s recomputes them",
			len(run.Missing), 2*len(run.Manifest.Parts), strings.Join(run.Missing, ", "), ResumeCommand(dir))
	}
	files := run.Points
	r.Files = len(files)
	if r.specYAML = run.SpecYAML; r.specYAML == "" {
		return nil, inputErrorf("%s: no %s metadata (not written by ratesweep run)", files[0], sweep.MetaSpec)
	}
	if r.Spec, err = sweep.ParseSpec([]byte(r.specYAML), nil); err != nil {
		return nil, inputErrorf("%s: metadata %s: %v", files[0], sweep.MetaSpec, err)
	}
	if err := checkComplete(dir, r.Spec); err != nil {
		if !opts.AllowIncomplete {
			return nil, err
		}
		var ie *IncompleteError
		errors.As(err, &ie)
		r.Incomplete = fmt.Sprintf("INCOMPLETE RUN: no manifest.json, %d of %d part files missing; figures and tables show only the points present, and the frontier may not be the run's",
			len(ie.Missing), 2*ie.Parts)
	}
	plans := r.plan()
	if err := r.scanPoints(ctx, run, plans); err != nil {
		return nil, err
	}
	if r.opts.Progress != nil {
		r.opts.Progress(r.Rows, r.Rows)
	}
	if r.Points == 0 {
		return nil, inputErrorf("%s: the points files hold no rows", dir)
	}
	r.selectPoints()
	if err := r.loadClients(ctx, run); err != nil {
		return nil, err
	}
	return r, nil
}

func inputErrorf(format string, args ...any) error {
	return &sweep.InputError{Msg: fmt.Sprintf(format, args...)}
}

// plan decides, from the spec alone, which curves and heat maps to gather.
func (r *Run) plan() []*entryPlan {
	var plans []*entryPlan
	var first int64
	for ei := range r.Spec.Entries {
		e := &r.Spec.Entries[ei]
		pl := &entryPlan{entry: e, first: first, size: e.Size(), primary: -1, secondary: -1,
			curveOf: map[int]*Curve{}, idx: make([]int, len(e.Axes))}
		first += pl.size
		plans = append(plans, pl)
		for _, ax := range e.Axes {
			pl.lo, pl.hi = append(pl.lo, slices.Min(ax.Values)), append(pl.hi, slices.Max(ax.Values))
		}
		if len(e.Axes) == 0 {
			continue
		}
		// Primary: the axis with the most values (the last on ties), e.g.
		// limit or capacity; secondary: the next, e.g. window_s or rate.
		order := make([]int, len(e.Axes))
		for i := range order {
			order[i] = len(e.Axes) - 1 - i
		}
		slices.SortStableFunc(order, func(a, b int) int { return len(e.Axes[b].Values) - len(e.Axes[a].Values) })
		pl.primary = order[0]
		if len(order) > 1 && len(e.Axes[order[1]].Values) > 1 {
			pl.secondary = order[1]
		}
		pl.refIdx = make([]int, len(e.Axes))
		var fixed []ParamValue
		for i, ax := range e.Axes {
			pl.refIdx[i] = -1
			if i == pl.primary || i == pl.secondary {
				continue
			}
			pl.refIdx[i] = refIndex(e.Algorithm, ax)
			if len(ax.Values) > 1 {
				fixed = append(fixed, fixedValue(e, ax.Param, ax.Values[pl.refIdx[i]]))
				pl.others = append(pl.others, i)
			}
		}
		prim := &e.Axes[pl.primary]
		keep := thinAxis(prim.Values, r.opts.MaxCurvePoints)
		kept := make([]float64, len(keep))
		if len(keep) < len(prim.Values) {
			pl.slot = make(map[int]int, len(keep))
		}
		for slot, k := range keep {
			kept[slot] = prim.Values[k]
			if pl.slot != nil {
				pl.slot[k] = slot
			}
		}
		picks := []int{0}
		if pl.secondary >= 0 {
			sec := &e.Axes[pl.secondary]
			picks = pickIndices(sec.Values, r.opts.MaxCurves, refIndexOK(e.Algorithm, *sec))
		}
		for _, k := range picks {
			c := &Curve{Algorithm: e.Algorithm, Param: prim.Param, Total: len(prim.Values),
				Values: kept, acc: make([]acc, len(kept))}
			if pl.secondary >= 0 {
				c.Fixed = append(c.Fixed, fixedValue(e, e.Axes[pl.secondary].Param, e.Axes[pl.secondary].Values[k]))
			} else {
				// A single-valued other axis still names the curve.
				for i, ax := range e.Axes {
					if i != pl.primary && len(ax.Values) == 1 {
						c.Fixed = append(c.Fixed, fixedValue(e, ax.Param, ax.Values[0]))
					}
				}
			}
			c.Fixed = append(c.Fixed, fixed...)
			pl.curveOf[k] = c
			r.Curves = append(r.Curves, c)
		}
		if pl.secondary >= 0 {
			xs, ys := prim.Values, e.Axes[pl.secondary].Values
			combos := 1
			for _, i := range pl.others {
				combos *= len(e.Axes[i].Values)
			}
			pl.heatAll = combos <= maxHeatsPerEntry
			if !pl.heatAll {
				combos = 1
			}
			for k := range combos {
				hf := fixed
				if pl.heatAll {
					hf = nil
					rest := k
					for j := len(pl.others) - 1; j >= 0; j-- {
						ax := &e.Axes[pl.others[j]]
						hf = append([]ParamValue{fixedValue(e, ax.Param, ax.Values[rest%len(ax.Values)])}, hf...)
						rest /= len(ax.Values)
					}
				}
				h := &Heat{Algorithm: e.Algorithm, XParam: prim.Param, YParam: e.Axes[pl.secondary].Param,
					XValues: xs, YValues: ys, NX: min(len(xs), r.opts.MaxHeatBins), NY: min(len(ys), r.opts.MaxHeatBins), Fixed: hf}
				h.cells = make([]acc, h.NX*h.NY)
				pl.heats = append(pl.heats, h)
				r.Heats = append(r.Heats, h)
			}
		}
	}
	return plans
}

// maxHeatsPerEntry bounds the heat maps of one sweep entry: one per
// combination of its further swept parameters when there are at most this
// many, else one at the lesson's (or the middle) values.
const maxHeatsPerEntry = 6

// thinAxis picks at most k indices of an axis's values for a curve, in
// ascending order: all of them when there are few; else half evenly spaced
// and, for a sorted positive axis spanning a factor of 10 or more, half
// spaced geometrically, so that the low values (where curves bend) keep
// their detail. The first and last are always kept.
func thinAxis(vals []float64, k int) []int {
	n := len(vals)
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	lo, hi := vals[0], vals[n-1]
	geo := lo > 0 && hi/lo >= 10 && slices.IsSorted(vals)
	even := k
	if geo {
		even = k / 2
	}
	var out []int
	for i := range even {
		out = append(out, int(math.Round(float64(i)*float64(n-1)/float64(max(even-1, 1)))))
	}
	if geo {
		m := k - even
		for i := range m {
			target := lo * math.Pow(hi/lo, float64(i)/float64(max(m-1, 1)))
			j, _ := slices.BinarySearch(vals, target)
			if j > 0 && (j == n || target-vals[j-1] < vals[j]-target) {
				j--
			}
			out = append(out, j)
		}
	}
	if geo { // round values (1, 2, 5 × 10^k) that the axis has, for labels
		for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
			for _, m := range []float64{1, 2, 5} {
				if j, found := slices.BinarySearch(vals, m*math.Pow(10, e)); found {
					out = append(out, j)
				}
			}
		}
	}
	out = append(out, 0, n-1)
	slices.Sort(out)
	return slices.Compact(out)
}

// refIndex is the index of the lesson's value for ax's parameter when the
// axis has it, else the middle index.
func refIndex(a model.Algorithm, ax sweep.Axis) int {
	if k := refIndexOK(a, ax); k >= 0 {
		return k
	}
	return len(ax.Values) / 2
}

// refIndexOK is the index of the lesson's value for ax's parameter, or -1.
func refIndexOK(a model.Algorithm, ax sweep.Axis) int {
	for _, ref := range lessonRefs {
		if ref.Algorithm == a {
			return slices.Index(ax.Values, ref.Get(ax.Param))
		}
	}
	return -1
}

// pickIndices picks at most k indices of the sorted values vals, spread
// evenly over their range (geometrically when it spans a factor of 10 or
// more), always including must (when >= 0), in ascending order.
func pickIndices(vals []float64, k, must int) []int {
	n := len(vals)
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	lo, hi := slices.Min(vals), slices.Max(vals)
	geo := lo > 0 && hi/lo >= 10
	var out []int
	for i := range k {
		f := float64(i) / float64(max(k-1, 1))
		target := lo + f*(hi-lo)
		if geo {
			target = lo * math.Pow(hi/lo, f)
		}
		best := 0
		for j, v := range vals {
			if math.Abs(v-target) < math.Abs(vals[best]-target) {
				best = j
			}
		}
		out = append(out, best)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if must >= 0 && !slices.Contains(out, must) {
		// Replace the nearest pick that is not an end (ends show the range).
		best := -1
		for i, v := range out {
			if (i == 0 || i == len(out)-1) && len(out) > 2 {
				continue
			}
			if best < 0 || abs(v-must) < abs(out[best]-must) {
				best = i
			}
		}
		out[best] = must
		slices.Sort(out)
		out = slices.Compact(out)
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// pointColumns are the points columns the report reads.
func pointColumns() []string {
	cols := []string{"point_id", "algorithm"}
	for _, p := range model.Params {
		cols = append(cols, p.Name)
	}
	return append(cols, "offered_legit", "offered_abusive", "caught", "missed", "false_cut",
		"cut_design", "cut_code", "cut_none", "mean_delay_s", "p99_delay_s", "replicate")
}

// scanPoints pools the run's rows point by point; a row listed twice (a
// key of sweep.Keys) is refused, never counted as another replicate.
func (r *Run) scanPoints(ctx context.Context, run *sweep.RunDir, plans []*entryPlan) error {
	files := run.Points
	keys := run.Keys()
	cols := pointColumns()
	repCol := len(cols) - 1
	react := len(files) > 0 && sweep.HasReactions(files[0])
	if react {
		cols = append(cols, reactionColumns...)
	}
	costAt := len(cols)
	costed := len(files) > 0 && sweep.HasCosts(files[0])
	if costed {
		cols = append(cols, costColumns...)
	}
	np := len(model.Params)
	total := r.Spec.Points() * int64(max(1, r.Spec.Replicates))
	var cur Point
	have := false
	algoIdx := map[model.Algorithm]int{}
	emit := func(f string) error {
		if !have {
			return nil
		}
		have = false
		return r.emit(f, &cur, plans, algoIdx)
	}
	for _, f := range files {
		lastName, lastAlg := "", model.Algorithm(0)
		err := sweep.ScanFile(ctx, f, cols, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			if r.opts.Progress != nil {
				r.opts.Progress(r.Rows, total)
			}
			for i := range int(rec.NumRows()) {
				r.Rows++
				id, ok := sweep.Int(c[0], i)
				if !ok {
					return inputErrorf("%s: null or non-integer point_id", f)
				}
				rep, _ := sweep.Int(c[repCol], i)
				if err := keys.Next(f, id, rep); err != nil {
					return err
				}
				name, _ := sweep.String(c[1], i)
				if name != lastName || lastAlg == 0 {
					a, ok := model.ParseAlgorithm(name)
					if !ok {
						return inputErrorf("%s: point_id %d: unknown algorithm %s", f, id, yamlx.Excerpt(name))
					}
					lastName, lastAlg = name, a
				}
				var m model.Metrics
				k := 2 + np
				for _, dst := range []*int64{&m.OfferedLegit, &m.OfferedAbusive, &m.Caught, &m.Missed,
					&m.FalseCut, &m.CutDesign, &m.CutCode, &m.CutNone} {
					v, ok := sweep.Int(c[k], i)
					if !ok {
						return inputErrorf("%s: point_id %d: column %s is null or not an integer", f, id, cols[k])
					}
					if err := sweep.CheckMetric(f, id, cols[k], float64(v)); err != nil {
						return err
					}
					*dst = v
					k++
				}
				if react {
					var ab [2]int64
					for j := range ab {
						v, ok := sweep.Int(c[repCol+1+j], i)
						if err := run.Optional(f, id, cols[repCol+1+j], float64(v), ok); err != nil {
							return err
						}
						ab[j] = v
					}
					p99, ok := sweep.Float(c[repCol+3], i)
					if err := run.Optional(f, id, cols[repCol+3], p99, ok); err != nil {
						return err
					}
					readReactions(&m, ab[:], p99)
				}
				if costed {
					var cc [5]int64
					for j := range cc {
						v, ok := sweep.Int(c[costAt+j], i)
						if err := run.Optional(f, id, cols[costAt+j], float64(v), ok); err != nil {
							return err
						}
						cc[j] = v
					}
					readCost(&m, cc[:])
				}
				for _, dst := range []*float64{&m.MeanDelayS, &m.P99DelayS} {
					v, ok := sweep.Float(c[k], i)
					if !ok || math.IsNaN(v) || v < 0 {
						return inputErrorf("%s: point_id %d: column %s is null, NaN or negative", f, id, cols[k])
					}
					if err := sweep.CheckMetric(f, id, cols[k], v); err != nil {
						return err
					}
					*dst = v
					k++
				}
				if have && id == cur.ID {
					cur.add(&m)
					continue
				}
				if err := emit(f); err != nil {
					return err
				}
				// The row's policy is the spec's for its point_id (the check
				// every reader of a run shares).
				if err := run.Policy(f, id, name, func(prm string) (float64, bool) {
					j := slices.IndexFunc(model.Params, func(p model.Param) bool { return p.Name == prm })
					if j < 0 {
						return 0, false
					}
					return sweep.ParamAt(model.Params[j], c[2+j], i)
				}); err != nil {
					return err
				}
				cur = Point{ID: id, Policy: model.Policy{Algorithm: lastAlg}}
				if lastAlg == model.AllOf && id >= 0 && id < r.Spec.Points() {
					cur.Policy = stackPolicy(r.Spec, id)
					cur.add(&m)
					have = true
					continue
				}
				for j, prm := range model.Params {
					if !lastAlg.Takes(prm.Name) {
						continue
					}
					v, ok := sweep.ParamAt(prm, c[2+j], i)
					if !ok {
						if slices.Contains(lastAlg.Params(), prm.Name) {
							return inputErrorf("%s: point_id %d: %s needs %s, but it is null", f, id, lastAlg, prm.Name)
						}
						continue // an optional parameter left at its default
					}
					if v == prm.Default && !slices.Contains(lastAlg.Params(), prm.Name) {
						continue // the zero Policy means the default (nodes 0 is 1)
					}
					cur.Policy.Set(prm.Name, v)
				}
				cur.add(&m)
				have = true
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := emit(f); err != nil {
			return err
		}
	}
	return nil
}

// emit routes one pooled point to the frontiers, curves and heat maps.
func (r *Run) emit(file string, p *Point, plans []*entryPlan, algoIdx map[model.Algorithm]int) error {
	r.Points++
	pl := findPlan(plans, p.ID)
	if pl == nil {
		return inputErrorf("%s: point_id %d is outside the grid of the spec in its metadata (%d points)", file, p.ID, r.Spec.Points())
	}
	// The point's algorithm and parameters were checked against the spec
	// as it was read (sweep.RunDir.Policy).
	rest := p.ID - pl.first
	for i := len(pl.entry.Axes) - 1; i >= 0; i-- {
		n := int64(len(pl.entry.Axes[i].Values))
		pl.idx[i] = int(rest % n)
		rest /= n
	}
	p.tie = pickTie{optional: optionalSet(p.Policy)}
	if pl.atEnd() { // only then can it have an edge (EdgesOfRange allocates)
		p.tie.edges = len(EdgesOfRange(r.Spec, p.ID))
	}
	r.Frontier.Add(*p)
	ai, ok := algoIdx[p.Policy.Algorithm]
	if !ok {
		ai = len(r.Algos)
		algoIdx[p.Policy.Algorithm] = ai
		r.Algos = append(r.Algos, &AlgoSummary{Algorithm: p.Policy.Algorithm})
	}
	r.Algos[ai].Points++
	r.Algos[ai].Frontier.Add(*p)
	for _, ref := range lessonRefs {
		if p.Policy == ref && !slices.ContainsFunc(r.Refs, func(q Point) bool { return q.Policy == ref }) {
			r.Refs = append(r.Refs, *p)
		}
	}
	if pl.primary < 0 {
		return nil
	}
	pi := pl.idx[pl.primary]
	onSlice := true // on the drawn slice of the further axes
	for i, want := range pl.refIdx {
		if want >= 0 && pl.idx[i] != want {
			onSlice = false
		}
	}
	if pl.secondary >= 0 && (pl.heatAll || onSlice) {
		si := pl.idx[pl.secondary]
		k := 0
		if pl.heatAll {
			for _, i := range pl.others {
				k = k*len(pl.entry.Axes[i].Values) + pl.idx[i]
			}
		}
		h := pl.heats[k]
		h.cells[binOf(si, len(h.YValues), h.NY)*h.NX+binOf(pi, len(h.XValues), h.NX)].add(p)
	}
	if !onSlice {
		return nil
	}
	si := 0
	if pl.secondary >= 0 {
		si = pl.idx[pl.secondary]
	}
	if c := pl.curveOf[si]; c != nil {
		slot, ok := pi, true
		if pl.slot != nil {
			slot, ok = pl.slot[pi]
		}
		if ok {
			c.acc[slot].add(p)
		}
	}
	return nil
}

// atEnd reports whether the point whose axis indices are in pl.idx has a
// swept axis at its smallest or largest value.
func (pl *entryPlan) atEnd() bool {
	for i, ax := range pl.entry.Axes {
		if len(ax.Values) < 2 {
			continue
		}
		if v := ax.Values[pl.idx[i]]; v == pl.lo[i] || v == pl.hi[i] {
			return true
		}
	}
	return false
}

func findPlan(plans []*entryPlan, id int64) *entryPlan {
	for _, pl := range plans {
		if id >= pl.first && id < pl.first+pl.size {
			return pl
		}
	}
	return nil
}

// selectPoints picks the points shown per client: the lesson's reference
// points present in the run, then the overall frontier's knees.
func (r *Run) selectPoints() {
	seen := map[int64]bool{}
	for _, p := range r.Refs {
		seen[p.ID] = true
		r.Selected = append(r.Selected, Selected{Point: p, Why: "lesson: " + lessonName(p.Policy)})
	}
	for _, k := range r.Frontier.Knees(r.opts.Knees) {
		if seen[k.ID] {
			continue
		}
		seen[k.ID] = true
		r.Selected = append(r.Selected, Selected{Point: k.Point, Why: "frontier knee"})
	}
	for i := range r.Selected {
		r.Selected[i].Slug = fmt.Sprintf("%02d-%s", i+1, slug(r.Selected[i].Policy))
	}
}

// slug is a file-name stem for a policy, e.g. "sliding_window-limit600-window_s60".
func slug(p model.Policy) string {
	if p.Stack != nil {
		s := p.Algorithm.String() + "-" + p.Stack.RejectedCounts.String()
		for _, c := range p.Stack.Components {
			s += "-" + slug(c)
			if c.Key != model.KeyClient {
				s += "-" + c.Key.String()
			}
		}
		return s
	}
	s := p.Algorithm.String()
	for _, n := range p.Algorithm.Params() {
		s += "-" + ParamValue{Name: n, Value: p.Get(n)}.slug()
	}
	return s
}

// loadClients reads the per-client rows of the selected points from the
// clients files of run that hold them (the manifest's parts, or the part
// layout that follows from the spec).
func (r *Run) loadClients(ctx context.Context, run *sweep.RunDir) error {
	byFile := map[string][]int{}
	var order []string
	for i, s := range r.Selected {
		name := run.ClientsFile(s.ID, r.Spec.Points())
		if _, ok := byFile[name]; !ok {
			order = append(order, name)
		}
		byFile[name] = append(byFile[name], i)
	}
	sc := r.Spec.Scenario
	for _, f := range order {
		if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s is missing: no per-client bars for %d selected point(s)", f, len(byFile[f])))
			continue
		}
		if err := sweep.Confine(r.Dir, f); err != nil {
			return err
		}
		md, err := sweep.FileMetadata(f)
		if err != nil {
			return err
		}
		if md[sweep.MetaSpec] != r.specYAML {
			return inputErrorf("%s: its %s differs from the points files': the directory mixes runs", f, sweep.MetaSpec)
		}
		want := map[int64]int{}
		counts := map[int64][]int{}
		// Each selected point's clients by name (a scenario's are shared).
		var scIdx map[string]int
		if sc != nil {
			scIdx = make(map[string]int, len(sc.Clients))
			for k, c := range sc.Clients {
				scIdx[c.Name] = k
			}
		}
		logIdx := map[int64]map[string]int{}
		for _, i := range byFile[f] {
			id := r.Selected[i].ID
			want[id] = i
			r.Selected[i].Clients = []ClientStat{}
			if sc != nil {
				for _, c := range sc.Clients {
					r.Selected[i].Clients = append(r.Selected[i].Clients, ClientStat{Name: c.Name, Class: c.Class, Stage: c.Stage})
				}
			} else {
				logIdx[id] = map[string]int{}
			}
			counts[id] = make([]int, len(r.Selected[i].Clients))
		}
		// Only the row groups that can hold a selected point.
		keep := func(a, b int64) bool {
			for id := range want {
				if id >= a && id <= b {
					return true
				}
			}
			return false
		}
		cols := []string{"point_id", "client", "offered", "admitted", "cut", "class", "stage"}
		err = sweep.ScanPointRange(ctx, f, cols, keep, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				id, _ := sweep.Int(c[0], i)
				si, ok := want[id]
				if !ok {
					continue
				}
				name, _ := sweep.String(c[1], i)
				sel := &r.Selected[si]
				k, found := scIdx[name]
				if sc == nil {
					k, found = logIdx[id][name]
				}
				if !found {
					k = -1
				}
				switch {
				case k < 0 && sc != nil:
					return inputErrorf("%s: point_id %d: client %s is not in the spec's scenario", f, id, yamlx.Excerpt(name))
				case k < 0:
					// A replayed log: its rows (top keys and other keys) name themselves.
					class, _ := sweep.String(c[5], i)
					stage, _ := sweep.String(c[6], i)
					cs := ClientStat{Name: strings.Clone(name), Class: model.Legit}
					if class == "abusive" {
						cs.Class = model.Abusive
					}
					for _, st := range model.Stages {
						if st.String() == stage {
							cs.Stage = st
						}
					}
					sel.Clients = append(sel.Clients, cs)
					counts[id] = append(counts[id], 0)
					k = len(sel.Clients) - 1
					logIdx[id][cs.Name] = k
				}
				off, _ := sweep.Int(c[2], i)
				adm, _ := sweep.Int(c[3], i)
				cut, _ := sweep.Int(c[4], i)
				cs := &r.Selected[si].Clients[k]
				cs.Offered += float64(off)
				cs.Admitted += float64(adm)
				cs.Cut += float64(cut)
				counts[id][k]++
			}
			return nil
		})
		if err != nil {
			return err
		}
		for id, si := range want {
			for k, n := range counts[id] {
				cs := &r.Selected[si].Clients[k]
				if n == 0 {
					return inputErrorf("%s: no rows for point_id %d, client %q", f, id, cs.Name)
				}
				cs.Offered /= float64(n)
				cs.Admitted /= float64(n)
				cs.Cut /= float64(n)
			}
		}
	}
	return nil
}
