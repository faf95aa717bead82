//go:build long

package sweep

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/model/reference"
)

// TestReferenceLogReplay checks log replays (whole, key shards, spilled)
// against the reference on random logs and entries.
func TestReferenceLogReplay(t *testing.T) {
	const trials = 60
	start := time.Now()
	r := rand.New(rand.NewPCG(43, 11))
	dir := t.TempDir()
	d := newDiffTally()
	for trial := range trials {
		rs := randomDiffLog(r)
		startS := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix() + r.Int64N(86400)
		logPath := filepath.Join(dir, fmt.Sprintf("log%d.csv", trial))
		writeLog(t, logPath, rs, startS)
		o := logOpts{costed: r.IntN(3) == 0, logStart: r.IntN(3) == 0}
		mode := replayModes[r.IntN(len(replayModes))]
		if r.IntN(4) == 0 { // reactions: no costs, run whole
			o.costed, mode = false, replayModes[r.IntN(2)]
			o.retry = &reference.Retry{MaxRetries: 1 + r.IntN(4)}
			if r.IntN(2) == 0 {
				o.retry.BaseS, o.retry.CapS = []float64{0.25, 0.5, 1}[r.IntN(3)], []float64{0, 1, 2}[r.IntN(3)]
			}
		}
		specOf := func(yamls []string) string { return logSpec(logPath, o, yamls) }
		entries := drawEntries(r, 6+r.IntN(12), logShapes, o.costed, d.skipped)
		if mode.shards > 0 || mode.name == "spill" { // key shards and passes refuse what needs every key at once
			entries = slices.DeleteFunc(entries, func(e diffEntry) bool {
				return slices.ContainsFunc(e.points, model.Policy.Distributed)
			})
		}
		sp, entries := readTogether(t, entries, specOf, dir, d.skipped)
		if sp == nil {
			continue
		}
		out := filepath.Join(dir, fmt.Sprintf("out%d", trial))
		name := mode.name
		if !runReplay(t, sp, out, mode) {
			name += " (not reached)"
		}
		d.modes[name]++
		rows := pointRows(t, out, entries)
		row := 0
		for k, e := range entries {
			for j, p := range e.points {
				d.pairs[e.shape.name]++
				want := referenceMetrics(t, p, rs, o, startS)
				got := pointMetrics(p, rows[row], want)
				row++
				if got == want {
					continue
				}
				if s := e.shape.name; e.shape.known != "" {
					msg := ""
					if len(d.known[s]) == 0 { // the first is shrunk and shown
						msg = logReproduction(t, p, rs, startS, o, entries, k, j, mode, got, want, dir)
					}
					d.known[s] = append(d.known[s], msg)
					continue
				}
				t.Errorf("trial %d: %s", trial, logReproduction(t, p, rs, startS, o, entries, k, j, mode, got, want, dir))
			}
		}
	}
	d.report(t, logShapes, "log", start)
}

// Key shards merged equal the run over the whole log, byte for byte, for
// every algorithm, on a generated log, the three example logs and two logs
// as replicates, for 1, 2, 3 and 8 shards.
func TestKeyShardsMergeEqualsWholeLog(t *testing.T) {
	dir := t.TempDir()
	writeZipfLog(t, filepath.Join(dir, "zipf.log"), 20000, 2000, 1)
	writeZipfLog(t, filepath.Join(dir, "day2.log"), 3000, 40, 2)
	gen := func(name, logs string) string {
		p := filepath.Join(dir, name+".yaml")
		os.WriteFile(p, []byte("name: "+name+"\nseed: 3\ntraffic:\n  log: "+logs+"\n  format: combined\n  top_keys: 12\n  rules:\n"+
			"    - {name: crawler, stage: none, user_agent: bot}\n"+
			"    - {name: missing, stage: design, scope: request, status: 404}\n"+
			"    - {name: busy, stage: code, rate: {requests: 30, window_s: 60}}\n"+
			"sweep:\n  - {algorithm: fixed_window, window_s: 60, limit: 10}\n"), 0o644)
		return p
	}
	specs := []string{gen("zipf", "zipf.log"), gen("days", "[zipf.log, day2.log]")}
	if !testing.Short() {
		for _, s := range []string{"antlr-org", "elastic-apache", "nasa-ksc"} {
			specs = append(specs, filepath.Join("..", "configs", "examples", s+".yaml"))
		}
	}
	sweepAll := everyAlgorithmSweep(t)
	for _, path := range specs {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			// A random spread draws one stream over every key in turn (key
			// shards refuse it): the elastic log spread evenly.
			sets := []string{sweepAll}
			if strings.Contains(path, "elastic") {
				sets = append(sets, "traffic.spread=even", "replicates=1")
			}
			spec, err := LoadSpec(path, sets...)
			if err != nil {
				t.Fatal(err)
			}
			checkKeyShards(t, spec, sameRunFiles)
		})
	}
}

// Grid.Policies (the odometer a part's policies come from) equals
// Grid.Policy at every point of every committed spec, from any start.
func TestGridPolicies(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "configs", "*.yaml"))
	files = append(files, filepath.Join("..", "bench", "10m.yaml"))
	specs := 0
	for _, path := range files {
		s, err := LoadSpec(path)
		if err != nil {
			continue // not a spec (a scenario or a schema)
		}
		specs++
		g := NewGrid(s)
		starts := []int64{0, 1, g.Points() / 3, max(g.Points()-2, 0)}
		for _, part := range ShardParts(g, Shard{0, 1}) {
			starts = append(starts, part.From)
		}
		for _, from := range starts {
			dst := make([]model.Policy, min(g.Points()-from, 70_000))
			changed := make([]int8, len(dst))
			g.Policies(dst, from, changed)
			vals, prev := make([]float64, len(model.Params)), make([]float64, len(model.Params))
			for i := range dst {
				if want := g.Policy(from + int64(i)); dst[i] != want {
					t.Fatalf("%s: point %d from %d: %+v, want %+v", path, from+int64(i), from, dst[i], want)
				}
				// changed names the one parameter that may differ.
				dst[i].Values(vals)
				if j := changed[i]; j >= 0 {
					if i == 0 || dst[i].Algorithm != dst[i-1].Algorithm {
						t.Fatalf("%s: point %d from %d: changed %d at an entry's start", path, from+int64(i), from, j)
					}
					for k := range vals {
						if k != int(j) && vals[k] != prev[k] {
							t.Fatalf("%s: point %d from %d: %s differs, changed says %s", path, from+int64(i), from, model.Params[k].Name, model.Params[j].Name)
						}
					}
				}
				vals, prev = prev, vals
			}
		}
	}
	if specs < 5 {
		t.Fatalf("only %d specs among %d files", specs, len(files))
	}
}
