package sweep

import (
	"context"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// runSpec is the spec a run's rows are checked against, parsed once from
// the parts' ratesweep.spec.
type runSpec struct {
	once sync.Once
	spec *Spec // nil: no spec metadata, or one that does not parse
	grid *Grid
	algs map[string]model.Algorithm // algorithm column values seen
	mu   sync.Mutex
}

func (r *RunDir) runSpec() *runSpec {
	rs := r.spec
	rs.once.Do(func() {
		if r.SpecYAML == "" {
			return
		}
		if s, err := ParseSpec([]byte(r.SpecYAML), nil); err == nil {
			rs.spec, rs.grid, rs.algs = s, NewGrid(s), map[string]model.Algorithm{}
		}
	})
	return rs
}

// algorithm parses an algorithm column value, remembering it.
func (rs *runSpec) algorithm(name string) (model.Algorithm, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if a, ok := rs.algs[name]; ok {
		return a, true
	}
	a, ok := model.ParseAlgorithm(name)
	if ok && len(rs.algs) < 64 {
		rs.algs[name] = a
	}
	return a, ok
}

// Policy checks that points row id of file holds the policy the run's spec
// (its footer's ratesweep.spec) gives point id: the same algorithm, and
// every swept parameter at the grid's value. param returns the row's value
// of a parameter (enumerated ones mapped to their values), ok false when
// NULL. A row that disagrees is an *InputError naming the file, the
// point_id and the column: a part rewritten after the run (its manifest
// hash left stale) would otherwise have its numbers shown as another
// policy's. A run without spec metadata is not checked; the components of
// an all_of point are not parameter columns, so only its algorithm is.
func (r *RunDir) Policy(file string, id int64, algorithm string, param func(name string) (float64, bool)) error {
	rs := r.runSpec()
	if rs.spec == nil {
		return nil
	}
	g := rs.grid
	if id < 0 || id >= g.total {
		return inputErrorf("%s: point_id %d is outside the grid of the spec in its metadata (%d points)", file, id, g.total)
	}
	e := len(g.offsets) - 1
	for e > 0 && g.offsets[e] > id {
		e--
	}
	entry := &rs.spec.Entries[e]
	alg, ok := rs.algorithm(algorithm)
	if !ok {
		return inputErrorf("%s: point_id %d: column algorithm is %s, not an algorithm", file, id, yamlx.Excerpt(algorithm))
	}
	if alg != entry.Algorithm {
		return inputErrorf("%s: point_id %d: column algorithm is %s, but the spec in its metadata says %s", file, id, alg, entry.Algorithm)
	}
	if entry.Components != nil {
		return nil
	}
	rest := id - g.offsets[e]
	var p model.Policy
	for i := len(entry.Axes) - 1; i >= 0; i-- {
		ax := &entry.Axes[i]
		n := int64(len(ax.Values))
		want := ax.Values[rest%n]
		rest /= n
		v, ok := param(ax.Param)
		if !ok {
			if slices.Contains(alg.Params(), ax.Param) {
				return inputErrorf("%s: point_id %d: column %s is NULL, but the spec in its metadata says %g", file, id, ax.Param, want)
			}
			v = 0 // an optional parameter left at its default
		}
		// As the writer wrote it: a whole-number parameter truncated, an
		// absent one at its default (nodes 0 is 1).
		p.Set(ax.Param, v)
		if got := p.Value(ax.Param); got != want {
			return inputErrorf("%s: point_id %d has %s = %g, but the spec in its metadata says %g", file, id, ax.Param, got, want)
		}
	}
	return nil
}

// VerifyRows reads every points row of an opened run and checks it as
// ReadRunPoints does (keys, policy against the spec, metric values), one
// record batch at a time and without building rows: for a command that
// trusts a run without reading it all, such as check --update and merge.
func VerifyRows(ctx context.Context, run *RunDir) error {
	cols := PointColumns()
	np := len(model.Params)
	paramAt := make(map[string]int, np)
	for j, p := range model.Params {
		paramAt[p.Name] = j
	}
	// The metric columns after the parameters, in PointColumns' order;
	// NULL is refused in the first len(intMetrics)+len(pctMetrics).
	required := len(intMetrics) + len(pctMetrics)
	keys := run.Keys()
	for _, f := range run.Points {
		err := ScanFile(ctx, f, cols, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				id, _ := Int(c[0], i)
				rep, _ := Int(c[1], i)
				if err := keys.Next(f, id, rep); err != nil {
					return err
				}
				alg, _ := String(c[2], i)
				err := run.Policy(f, id, alg, func(name string) (float64, bool) {
					j, ok := paramAt[name]
					if !ok {
						return 0, false
					}
					return ParamAt(model.Params[j], c[3+j], i)
				})
				if err != nil {
					return err
				}
				for k, name := range cols[3+np:] {
					v, ok := Float(c[3+np+k], i)
					check := run.Optional
					if k < required {
						check = run.Metric
					}
					if err := check(f, id, name, v, ok); err != nil {
						return err
					}
				}
			}
			return ctx.Err()
		})
		if err != nil {
			return err
		}
		for _, extra := range [][]string{reactionColumnNames(f), costColumnNames(f)} {
			if len(extra) == 0 {
				continue
			}
			id := int64(0)
			err := ScanFile(ctx, f, append([]string{"point_id"}, extra...), func(rec arrow.RecordBatch) error {
				c := rec.Columns()
				for i := range int(rec.NumRows()) {
					id, _ = Int(c[0], i)
					for k, name := range extra {
						v, ok := Float(c[1+k], i)
						if err := run.Optional(f, id, name, v, ok); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// reactionColumnNames are the points reaction columns file f has (none
// when its clients do not react).
func reactionColumnNames(f string) []string {
	if !HasReactions(f) {
		return nil
	}
	var out []string
	for _, m := range reactionInts {
		out = append(out, m.name)
	}
	for _, m := range reactionFloats {
		out = append(out, m.name)
	}
	return out
}

// costColumnNames are the points cost columns file f has (none when its
// requests carry no costs).
func costColumnNames(f string) []string {
	if !HasCosts(f) {
		return nil
	}
	return CostColumns()
}

// verifyPointFiles reads the points rows of files (a run's parts in point
// order, spec specYAML) and checks them as VerifyRows does: merge's check
// before it writes the manifest that makes the run complete.
func verifyPointFiles(ctx context.Context, dir, specYAML string, files []string) error {
	sort.Slice(files, func(i, j int) bool { return files[i] < files[j] })
	run := &RunDir{Dir: dir, Complete: true, Points: files, SpecYAML: specYAML, spec: &runSpec{}}
	return VerifyRows(ctx, run)
}

// metricRange is what a points metric may hold.
type metricRange uint8

const (
	anyFinite   metricRange = iota // a finite number
	nonNegative                    // a count, a time, s, or a rate: 0 or more
	share                          // a percentage: 0 to 100
)

// metricRanges are the points metrics with a range narrower than any
// finite number; a metric not named here need only be finite.
var metricRanges = func() map[string]metricRange {
	m := map[string]metricRange{
		"legit_cut_pct": share, "missed_pct": share, "only_here_pct": share,
		"mean_delay_s": nonNegative, "p99_delay_s": nonNegative, legitBlockedMetric: nonNegative,
	}
	for _, l := range [][]intMetric{intMetrics, stageMetrics, accountMetrics, blockCountMetrics, stateMetrics, reactionInts, costMetrics} {
		for _, im := range l {
			m[im.name] = nonNegative
		}
	}
	return m
}()

// CheckMetric refuses a points metric value ratesweep never writes, as an
// *InputError naming the file, point_id and column: ±Inf, a negative count
// or time, a percentage outside 0 to 100. NaN and NULL are the reader's to
// judge (RunDir.Metric).
func CheckMetric(file string, id int64, name string, v float64) error {
	return checkRange(file, id, name, v)
}

// Optional checks a metric value of a column that may be NULL (one that
// runs written before it lack, or one ratesweep leaves NULL where it did not
// measure): NULL passes; NaN is refused unless the run was opened with
// AllowIncomplete; then CheckMetric.
func (r *RunDir) Optional(file string, id int64, name string, v float64, ok bool) error {
	switch {
	case !ok:
		return nil
	case math.IsNaN(v) && r.allowIncomplete:
		return nil
	case math.IsNaN(v):
		return inputErrorf("%s: point_id %d: %s is NaN (ratesweep writes a number: the file was altered or not written by ratesweep); read it anyway with --allow-incomplete", file, id, name)
	}
	return checkRange(file, id, name, v)
}

// checkRangeOK is checkRange of a value that may be NULL (ok false).
func checkRangeOK(file string, id int64, name string, v float64, ok bool) error {
	if !ok {
		return nil
	}
	return checkRange(file, id, name, v)
}

// checkRange refuses a metric value outside what ratesweep writes: ±Inf
// anywhere, a negative count or time, a percentage outside 0 to 100.
func checkRange(file string, id int64, name string, v float64) error {
	if math.IsInf(v, 0) {
		return inputErrorf("%s: point_id %d: %s is %v (ratesweep writes a finite number: the file was altered or not written by ratesweep)", file, id, name, v)
	}
	switch metricRanges[name] {
	case nonNegative:
		if v < 0 {
			return inputErrorf("%s: point_id %d: %s is %g, below 0 (ratesweep writes a count or a time of 0 or more: the file was altered or not written by ratesweep)", file, id, name, v)
		}
	case share:
		if v < 0 || v > 100 {
			return inputErrorf("%s: point_id %d: %s is %g, outside 0 to 100 (ratesweep writes a percentage: the file was altered or not written by ratesweep)", file, id, name, v)
		}
	}
	return nil
}
