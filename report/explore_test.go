package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/export"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/recommend"
	"github.com/ratesweep/ratesweep/sweep"
)

// explorePage writes explore.html for the run in dir and returns the page
// and the data it embeds.
func explorePage(t *testing.T, dir string) (string, *exploreData) {
	t.Helper()
	ctx := context.Background()
	r, err := Load(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.writeExplore(ctx, &b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	m := regexp.MustCompile(`<script type="application/octet-stream" id="data">([A-Za-z0-9+/=]*)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("explore.html: no base64 data script")
	}
	z, err := base64.StdEncoding.DecodeString(m[1])
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	js, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var d exploreData
	if err := json.Unmarshal(js, &d); err != nil {
		t.Fatal(err)
	}
	return page, &d
}

// The page embeds recommend's own replicate means, bit for bit, so the
// choice the page makes can equal recommend's.
func TestExploreDataIsRecommends(t *testing.T) {
	dir := runSpec(t, strings.Replace(tinySpec, "scenario:", "replicates: 3\nscenario:", 1))
	page, d := explorePage(t, dir)
	run, err := recommend.ReadRun(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.ID) != len(run.Labels) {
		t.Fatalf("%d settings embedded, the run has %d", len(d.ID), len(run.Labels))
	}
	for i, id := range d.ID {
		if i > 0 && id <= d.ID[i-1] {
			t.Fatalf("settings not in point_id order at %d: %d after %d", i, id, d.ID[i-1])
		}
		l := d.Algs[d.Alg[i]] + " " + d.Label[i]
		m := run.Measures[l]
		if m == nil {
			t.Fatalf("setting %d: label %q is not the run's", i, l)
		}
		if m.PointID != id || m.LegitCutPct.Mean != d.LC[i] || m.MissedPct.Mean != d.MP[i] || m.WorstClientPct != d.WC[i] {
			t.Errorf("%s: embedded id %d lc %v mp %v wc %v, recommend reads %d %v %v %v",
				l, id, d.LC[i], d.MP[i], d.WC[i], m.PointID, m.LegitCutPct.Mean, m.MissedPct.Mean, m.WorstClientPct)
		}
	}
	if d.Reps != 3 || len(d.LCI) != 2*len(d.ID) || len(d.WCI) != 2*len(d.ID) {
		t.Errorf("3 replicates: reps %d, %d legit-cut and %d worst-client interval bounds for %d settings", d.Reps, len(d.LCI), len(d.WCI), len(d.ID))
	}
	// Self-contained, and names are data, not markup.
	for _, bad := range []string{"http://", "https://", " src=", "<i>run"} {
		if strings.Contains(page, bad) {
			t.Errorf("explore.html contains %q", bad)
		}
	}
	if !strings.Contains(page, "tiny &lt;i&gt;run") {
		t.Error("explore.html does not show the run's name escaped")
	}
	found := false
	for _, c := range d.Clients {
		found = found || c == evilName
	}
	if !found {
		t.Errorf("clients %q: the client named like markup is missing", d.Clients)
	}
}

// Every frontier setting carries, for every target, what `ratesweep export
// --to TARGET --run DIR LABEL` prints.
func TestExploreExportsAreExports(t *testing.T) {
	dir := runSpec(t, tinySpec)
	_, d := explorePage(t, dir)
	pts, err := export.ReadRun(context.Background(), dir, sweep.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	index := map[int64]int{}
	for i, id := range d.ID {
		index[id] = i
	}
	n := 0
	for _, q := range r.Frontier.Points() {
		i := index[q.ID]
		p, err := model.ParseLabel(d.Algs[d.Alg[i]] + " " + d.Label[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range export.Targets {
			got, ok := d.Exports[target][i]
			if !ok {
				t.Errorf("point %d --to %s: no export embedded", q.ID, target)
				continue
			}
			res, asked, exported, err := export.NearestIn(p, target, pts, export.Options{Nodes: 1, Zone: "ratesweep"})
			if err != nil {
				continue
			}
			var want bytes.Buffer
			if err := export.Write(&want, res, asked, exported, dir); err != nil {
				t.Fatal(err)
			}
			if got != want.String() {
				t.Errorf("point %d --to %s: embedded\n%s\nexport prints\n%s", q.ID, target, got, want.String())
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no export compared")
	}
	if total := len(d.Exports[export.Targets[0]]); total != r.Frontier.Len() {
		t.Errorf("%d settings carry an export, the frontier has %d", total, r.Frontier.Len())
	}
}

// A run sampled past the page's limit keeps every setting recommend can
// choose: for random bounds and random sets of algorithms, recommend run
// on the settings embedded chooses as recommend run on the whole run (the
// overall choice, the nearest miss and the best of each algorithm).
func TestExploreSampleKeepsChoices(t *testing.T) {
	spec := strings.NewReplacer("step: 100}", "step: 10}", "capacity: [100, 500, 900]", "capacity: {from: 20, to: 1000, step: 20}").Replace(tinySpec)
	dir := runSpec(t, spec)
	ctx := context.Background()
	r, err := Load(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 40
	d, err := r.exploreData(ctx, limit)
	if err != nil {
		t.Fatal(err)
	}
	run, err := recommend.ReadRun(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Total != len(run.Labels) || len(d.ID) >= d.Total || len(d.ID) < min(limit, d.Total) {
		t.Fatalf("%d settings in the run, %d embedded for a limit of %d", d.Total, len(d.ID), limit)
	}
	for _, q := range r.Frontier.Points() {
		if !slices.Contains(d.ID, q.ID) {
			t.Errorf("frontier point %d not embedded", q.ID)
		}
	}
	// The choosable settings alone (no frontier, no sample).
	all, err := r.exploreData(ctx, math.MaxInt)
	if err != nil {
		t.Fatal(err)
	}
	keep, n := exploreKeep(all.Alg, all.Label, all.LC, all.MP, all.WC, make([]bool, len(all.ID)), 1)
	if n > len(keep) || len(keep) >= len(all.ID) {
		t.Fatalf("%d choosable of %d, %d kept with their neighbours", n, len(all.ID), len(keep))
	}
	embedded := map[string]bool{}
	for _, i := range keep {
		embedded[all.Algs[all.Alg[i]]+" "+all.Label[i]] = true
	}
	sub := func(keep func(l string) bool) *recommend.Run {
		out := &recommend.Run{Dir: run.Dir, Measures: run.Measures, Offered: run.Offered}
		for _, l := range run.Labels {
			if keep(l) {
				out.Labels = append(out.Labels, l)
			}
		}
		return out
	}
	label := func(c *recommend.Choice) string {
		if c == nil {
			return ""
		}
		return c.Label
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for k := range 300 {
		algs := map[string]bool{}
		for _, a := range d.Algs {
			algs[a] = rng.IntN(3) > 0
		}
		pb := func(p float64) *recommend.Bound { return &recommend.Bound{Value: p, Pct: true} }
		o := recommend.Options{MaxFalseCut: pb(rng.Float64() * 20)}
		if rng.IntN(2) == 0 {
			o.MaxMissed = pb(rng.Float64() * 100)
		}
		if rng.IntN(2) == 0 {
			o.MaxClientCut = pb(rng.Float64() * 50)
		}
		inAlg := func(l string) bool { a, _, _ := strings.Cut(l, " "); return algs[a] }
		full := sub(inAlg)
		if len(full.Labels) == 0 {
			continue
		}
		want, err := recommend.Recommend([]*recommend.Run{full}, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := recommend.Recommend([]*recommend.Run{sub(func(l string) bool { return inAlg(l) && embedded[l] })}, o)
		if err != nil {
			t.Fatal(err)
		}
		if label(got.Overall) != label(want.Overall) || label(got.NearestMiss) != label(want.NearestMiss) || len(got.ByAlgorithm) != len(want.ByAlgorithm) {
			t.Fatalf("case %d %v: sampled chooses %q (nearest %q, %d by algorithm), the whole run %q (nearest %q, %d)", k, algs,
				label(got.Overall), label(got.NearestMiss), len(got.ByAlgorithm), label(want.Overall), label(want.NearestMiss), len(want.ByAlgorithm))
		}
		if want.Overall != nil {
			nb := func(c *recommend.Choice) (out []string) {
				for _, n := range c.Neighbors {
					out = append(out, n.Label)
				}
				return out
			}
			if g, w := nb(got.Overall), nb(want.Overall); !slices.Equal(g, w) {
				t.Fatalf("case %d: neighbours of %s sampled %q, whole run %q", k, want.Overall.Label, g, w)
			}
		}
		for j := range want.ByAlgorithm {
			if got.ByAlgorithm[j].Label != want.ByAlgorithm[j].Label {
				t.Fatalf("case %d: best %s sampled %q, whole run %q", k, want.ByAlgorithm[j].Algorithm, got.ByAlgorithm[j].Label, want.ByAlgorithm[j].Label)
			}
		}
	}
	t.Logf("%d settings, %d embedded (%d choosable)", d.Total, len(d.ID), d.Choosable)
}

// exploreGridSpec is tinySpec's scenario under fixed windows of windows
// lengths (1 s up) and limits 10, 20, … (limits of them): windows × limits
// settings.
func exploreGridSpec(windows, limits int) string {
	head, _, _ := strings.Cut(tinySpec, "sweep:")
	return head + fmt.Sprintf("sweep:\n  - algorithm: fixed_window\n    window_s: {from: 1, to: %d, step: 1}\n    limit: {from: 10, to: %d, step: 10}\n", windows, 10*limits)
}

// explorePageSize is the size of explore.html for the run in dir, and its data.
func explorePageSize(tb testing.TB, dir string) (size int, d *exploreData) {
	ctx := context.Background()
	r, err := Load(ctx, dir, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.writeExplore(ctx, &b); err != nil {
		tb.Fatal(err)
	}
	d, err = r.exploreData(ctx, exploreMaxSettings)
	if err != nil {
		tb.Fatal(err)
	}
	return b.Len(), d
}

// explore.html for 10,000 settings stays within 1.5 MB.
func TestExploreSize10k(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10,000-setting sweep")
	}
	n, d := explorePageSize(t, runSpec(t, exploreGridSpec(50, 200)))
	if len(d.ID) != 10_000 || d.Total != 10_000 {
		t.Fatalf("%d settings embedded of %d, want all 10,000", len(d.ID), d.Total)
	}
	if n > 1_500_000 {
		t.Errorf("explore.html is %d bytes for 10,000 settings, more than 1.5 MB", n)
	}
	t.Logf("explore.html: %d bytes for 10,000 settings", n)
}

// BenchmarkExploreSize1e6 reports explore.html's size (bytes/page) and the
// settings it holds for a run of 1,000,000 settings (the sweep runs once,
// outside the timing; the report's Load and the page are timed).
func BenchmarkExploreSize1e6(b *testing.B) {
	spec, err := sweep.ParseSpec([]byte(exploreGridSpec(500, 2000)), nil)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Shard: sweep.Shard{Index: 0, Count: 1}}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		n, d := explorePageSize(b, dir)
		b.ReportMetric(float64(n), "bytes/page")
		b.ReportMetric(float64(len(d.ID)), "settings/page")
		b.ReportMetric(float64(d.Choosable), "choosable/page")
	}
}
