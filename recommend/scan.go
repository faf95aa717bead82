package recommend

// Reading a run's points and clients files for the streamed choice: the
// selected rows, the metric columns.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// readSelected reads the points and clients rows of the wanted point ids
// of a run directory (only the row groups that hold them).
func readSelected(ctx context.Context, dir *sweep.RunDir, want map[int64]bool) (*Run, error) {
	ids := make([]int64, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	keep := func(lo, hi int64) bool {
		i, _ := slices.BinarySearch(ids, lo)
		return i < len(ids) && ids[i] <= hi
	}
	run := &Run{Dir: dir.Dir, Measures: map[string]*Measure{}, Offered: scenarioOffered(dir)}
	byID := map[int64]*Measure{}
	reps := map[int64]int{}
	err := scanPoints(ctx, dir, keep, want, func(_, label string, a *repAcc) error {
		m := a.measure()
		byID[a.id], reps[a.id] = m, len(a.fc)
		if _, dup := run.Measures[label]; !dup {
			run.Labels = append(run.Labels, label)
		}
		run.Measures[label] = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = scanClients(ctx, dir, keep, want, func(id int64, pc *clientAcc) error {
		if m := byID[id]; m != nil {
			pc.fill(m, reps[id], true)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return run, nil
}

var metricColumns = []string{"offered_legit", "offered_abusive", "caught", "missed", "false_cut", "legit_cut_pct", "missed_pct", "legit_blocked_s", "mean_delay_s", "p99_delay_s"}

// scanPoints reads a run's points rows in file order and calls emit once
// per point with its replicates gathered; with want (nil: every point),
// only for the wanted points, and with their labels.
// Rows must come in point order, replicates in order within a point.
//
// Every row's key is checked (sweep.Keys: no row listed twice), and so is
// every metric it reads (sweep.RunDir.Metric: no NULL or NaN).
func scanPoints(ctx context.Context, run *sweep.RunDir, keep func(lo, hi int64) bool, want map[int64]bool, emit func(alg, label string, a *repAcc) error) error {
	files := run.Points
	keys := run.Keys()
	// The parameters are read on every pass: each point's policy is checked
	// against the spec (sweep.RunDir.Policy); labels only with want.
	labels := want != nil
	cols := []string{"point_id", "replicate", "algorithm"}
	stacked := labels && strings.Contains(run.SpecYAML, "all_of:") // all_of points: the label from the policy column
	for _, p := range model.Params {
		cols = append(cols, p.Name)
	}
	if stacked {
		cols = append(cols, sweep.PolicyColumn)
	}
	mcAt := len(cols)
	cols = append(cols, metricColumns...)
	react := len(files) > 0 && sweep.HasReactions(files[0])
	if react {
		cols = append(cols, reactionColumns...)
	}
	costAt := len(cols)
	costed := len(files) > 0 && sweep.HasCosts(files[0])
	if costed {
		cols = append(cols, costColumns...)
	}
	var a repAcc
	a.id = -1
	countIf := run.CountIfOf()
	var alg, label string
	lastRep := int64(-1)
	intern := map[string]string{}
	for _, f := range files {
		err := sweep.ScanPointRange(ctx, f, cols, keep, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			mc := c[mcAt : mcAt+len(metricColumns)]
			for i := range int(rec.NumRows()) {
				id, _ := sweep.Int(c[0], i)
				rep, _ := sweep.Int(c[1], i)
				if err := keys.Next(f, id, rep); err != nil {
					return err
				}
				if want != nil && !want[id] {
					continue
				}
				if id != a.id {
					if id < a.id {
						return fmt.Errorf("%s: points are not in point order (point %d after %d)", f, id, a.id)
					}
					if a.id >= 0 {
						if err := emit(alg, label, &a); err != nil {
							return err
						}
					}
					a.reset(id)
					s, _ := sweep.String(c[2], i)
					if alg = intern[s]; alg == "" {
						alg = string([]byte(s))
						intern[alg] = alg
					}
					// The row's policy is the spec's for its point_id.
					err := run.Policy(f, id, alg, func(name string) (float64, bool) {
						j := slices.IndexFunc(model.Params, func(p model.Param) bool { return p.Name == name })
						if j < 0 {
							return 0, false
						}
						return sweep.ParamAt(model.Params[j], c[3+j], i)
					})
					if err != nil {
						return err
					}
					if stacked && alg == model.AllOf.String() {
						label, _ = sweep.String(c[3+len(model.Params)], i)
					} else if labels {
						label = model.PolicyLabel(alg, func(name string) (float64, bool) {
							j := slices.IndexFunc(model.Params, func(p model.Param) bool { return p.Name == name })
							return sweep.ParamAt(model.Params[j], c[3+j], i)
						})
						if ci := countIf(id); ci != "" {
							label += " count_if=" + ci
						}
					}
				} else if rep <= lastRep {
					return fmt.Errorf("%s: point %d: replicates are not in order", f, id)
				}
				lastRep = rep
				var m model.Metrics
				for j, dst := range []*int64{&m.OfferedLegit, &m.OfferedAbusive, &m.Caught, &m.Missed, &m.FalseCut} {
					v, ok := sweep.Int(mc[j], i)
					if err := run.Metric(f, id, metricColumns[j], float64(v), ok); err != nil {
						return err
					}
					*dst = v
				}
				for j, dst := range []*float64{&m.LegitCutPct, &m.MissedPct} {
					v, ok := sweep.Float(mc[5+j], i)
					if err := run.Metric(f, id, metricColumns[5+j], v, ok); err != nil {
						return err
					}
					*dst = v
				}
				// Columns runs written before them lack: NULL is 0.
				var err error
				float := func(c arrow.Array, name string) float64 {
					v, ok := sweep.Float(c, i)
					if err == nil {
						err = run.Optional(f, id, name, v, ok)
					}
					return v
				}
				m.LegitBlockedS = float(mc[7], metricColumns[7])
				m.MeanDelayS = float(mc[8], metricColumns[8])
				m.P99DelayS = float(mc[9], metricColumns[9])
				if react {
					rc := c[mcAt+len(metricColumns):]
					m.Reactions.Measured = true
					m.Reactions.AmplificationLegit = float(rc[0], reactionColumns[0])
					m.Reactions.LegitDelayP99S = float(rc[1], reactionColumns[1])
				}
				if costed {
					m.Cost.Measured = true
					for j, dst := range []*int64{&m.Cost.FalseCut, &m.Cost.OfferedLegit} {
						v, ok := sweep.Int(c[costAt+j], i)
						if err == nil {
							err = run.Optional(f, id, costColumns[j], float64(v), ok)
						}
						*dst = v
					}
				}
				if err != nil {
					return err
				}
				a.add(&m)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if a.id >= 0 {
		return emit(alg, label, &a)
	}
	return nil
}

// scanClients reads a run's clients rows in file order (point order) and
// calls emit once per point that has rows, with its legitimate clients
// summed over replicates.
func scanClients(ctx context.Context, run *sweep.RunDir, keep func(lo, hi int64) bool, want map[int64]bool, emit func(id int64, pc *clientAcc) error) error {
	files := run.Clients
	cols := []string{"point_id", "replicate", "client", "class", "offered", "cut"}
	cur := int64(-1)
	pc := newClientAcc()
	for _, f := range files {
		err := sweep.ScanPointRange(ctx, f, cols, keep, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				var r sweep.ClientRow
				r.PointID, _ = sweep.Int(c[0], i)
				if want != nil && !want[r.PointID] {
					continue
				}
				if r.PointID != cur {
					if r.PointID < cur {
						return fmt.Errorf("%s: clients are not in point order (point %d after %d)", f, r.PointID, cur)
					}
					if cur >= 0 {
						if err := emit(cur, pc); err != nil {
							return err
						}
					}
					cur, pc = r.PointID, newClientAcc()
				}
				rep, _ := sweep.Int(c[1], i)
				r.Replicate = int32(rep)
				r.Client, _ = sweep.String(c[2], i)
				r.Class, _ = sweep.String(c[3], i)
				r.Offered, _ = sweep.Int(c[4], i)
				r.Cut, _ = sweep.Int(c[5], i)
				pc.add(&r)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if cur >= 0 {
		return emit(cur, pc)
	}
	return nil
}
