package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"regexp"
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
