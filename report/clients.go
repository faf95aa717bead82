package report

// The clients table of the selected points.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

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
