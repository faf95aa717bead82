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
	"github.com/ratesweep/ratesweep/internal/choice"
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
	// Steps, when set, is called as Write draws the report: with the steps
	// done and their total (one per figure, one for the pages and files
	// after them), once with none done and after each step; never by two
	// goroutines at once.
	Steps func(done, total int)
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
	targets    []Target  // Targets, once chosen
	reads      readCache // the run as recommend and export read it (card.go)
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
	p.tie = pickTie{optional: choice.Optional(p.Policy)}
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
