package check

// Reading a run's side of a comparison: its metadata, manifest and points, scanned in point order.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
