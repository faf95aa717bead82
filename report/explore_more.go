package report

// The explorer's further columns: parameter defaults, the delay and block
// tails, the exports, the tie ranks.

import (
	"bytes"
	"context"
	_ "embed"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/export"
	"github.com/ratesweep/ratesweep/internal/choice"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/recommend"
	"github.com/ratesweep/ratesweep/sweep"
)

// tieRanks are the tie ranks of the settings ids (exploreData.TR): the
// page breaks a tie of both metrics by the smaller rank, then the earlier
// setting, as the choice rule does. Ranks are dense (equal keys, equal
// rank): small numbers that compress well.
func tieRanks(spec *sweep.Spec, ids []int64, labels map[int64]string, measure func(int64) *recommend.Measure) []int {
	keys := make([]choice.Keys, len(ids))
	for i, id := range ids {
		m := measure(id)
		keys[i] = choice.Keys{MeanDelayS: m.MeanDelayS, P99DelayS: m.P99DelayS, Edges: len(choice.EdgesOfRange(spec, id))}
		if p, err := model.ParseLabel(labels[id]); err == nil {
			keys[i].Optional = choice.Optional(p)
		}
	}
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return choice.CompareTies(&keys[a], &keys[b]) })
	rank := make([]int, len(ids))
	for k := 1; k < len(order); k++ {
		rank[order[k]] = rank[order[k-1]]
		if choice.CompareTies(&keys[order[k-1]], &keys[order[k]]) != 0 {
			rank[order[k]]++
		}
	}
	return rank
}

// addDefaults fills in Defaults from the labels.
func (d *exploreData) addDefaults() {
	seen := make([]map[string]bool, len(d.Algs))
	for i, l := range d.Label {
		a := d.Alg[i]
		if seen[a] == nil {
			seen[a] = map[string]bool{}
		}
		for _, t := range strings.Fields(l) {
			if name, _, ok := strings.Cut(t, "="); ok {
				seen[a][name] = true
			}
		}
	}
	some := false
	d.Defaults = make([]map[string]float64, len(d.Algs))
	for a, alg := range d.Algs {
		al, _ := model.ParseAlgorithm(alg)
		d.Defaults[a] = map[string]float64{}
		for _, prm := range model.Params {
			if al.Takes(prm.Name) && prm.Values == nil && !slices.Contains(al.Params(), prm.Name) && seen[a][prm.Name] {
				d.Defaults[a][prm.Name] = prm.Default
				some = true
			}
		}
	}
	if !some {
		d.Defaults = nil
	}
}

// addTails fills in the delay nginx adds (DM, DP; with delays) and the
// penalty box's blocks started (BN; with blocks), means over replicates,
// from the points files; index maps a point_id to its setting. A run
// written before the blocks column has no BN.
func (d *exploreData) addTails(ctx context.Context, dir string, index map[int64]int, delays, blocks bool) error {
	run, err := sweep.OpenRun(dir, sweep.OpenOptions{AllowIncomplete: true})
	if err != nil {
		return err
	}
	n := len(d.ID)
	sum := [3][]float64{make([]float64, n), make([]float64, n), make([]float64, n)}
	reps := make([]float64, n)
	scan := func(withBlocks bool) error {
		cols := []string{"point_id", "mean_delay_s", "p99_delay_s"}
		if withBlocks {
			cols = append(cols, "blocks")
		}
		for _, f := range run.Points {
			err := sweep.ScanFile(ctx, f, cols, func(rec arrow.RecordBatch) error {
				c := rec.Columns()
				for i := range int(rec.NumRows()) {
					id, _ := sweep.Int(c[0], i)
					k, ok := index[id]
					if !ok {
						continue
					}
					reps[k]++
					for j := 1; j < len(cols); j++ {
						if j == 3 {
							v, _ := sweep.Int(c[j], i)
							sum[2][k] += float64(v)
						} else if v, ok := sweep.Float(c[j], i); ok && !math.IsNaN(v) {
							sum[j-1][k] += v
						}
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := scan(blocks); err != nil {
		if !blocks {
			return err
		}
		clear(reps)
		clear(sum[0])
		clear(sum[1])
		blocks = false
		if err := scan(false); err != nil {
			return err
		}
	}
	mean := func(s []float64) []float64 {
		out := make([]float64, n)
		for k := range out {
			out[k] = roundSig(s[k]/max(reps[k], 1), 6) // shown, not compared
		}
		return out
	}
	if delays {
		d.DM, d.DP = mean(sum[0]), mean(sum[1])
	}
	if blocks {
		d.BN = mean(sum[2])
	}
	return nil
}

// addExports fills in, for every target, the text `ratesweep export --to
// TARGET --run DIR LABEL` prints for the settings at (pts: the run as
// export reads it).
func (d *exploreData) addExports(dir string, pts []*export.Point, at []int, labels map[int64]string) error {
	o := export.Options{Nodes: 1, Zone: "ratesweep"}
	d.Targets = export.Targets
	for _, t := range export.Targets {
		texts := map[int]string{}
		for _, i := range at {
			p, err := model.ParseLabel(labels[d.ID[i]])
			if err != nil {
				return err
			}
			var b bytes.Buffer
			res, asked, exported, err := export.NearestIn(p, t, pts, o)
			if err != nil {
				texts[i] = "ratesweep: export: " + err.Error() + "\n"
				continue
			}
			if err := export.Write(&b, res, asked, exported, dir); err != nil {
				return err
			}
			texts[i] = b.String()
		}
		d.Exports[t] = texts
	}
	return nil
}
