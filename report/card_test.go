package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/export"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/recommend"
	"github.com/ratesweep/ratesweep/sweep"
)

// The decision card comes first on both pages, right after the title: a
// line per target with its pick (the best-settings section's), and the
// pick's configuration for every export target.
func TestCardOpensTheReport(t *testing.T) {
	dir := runSpec(t, strings.Replace(tinySpec, "scenario:", "replicates: 3\nscenario:", 1))
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report")
	if _, err := r.Write(out); err != nil {
		t.Fatal(err)
	}
	card := r.Card(context.Background())
	if len(card) != len(r.Targets()) || len(card) == 0 {
		t.Fatalf("%d card lines for %d targets", len(card), len(r.Targets()))
	}
	for i, tg := range r.Targets() {
		c := card[i]
		b, ok := r.Frontier.Best(tg.MissedPct)
		if !ok {
			if c.Setting != "" || c.None == "" {
				t.Errorf("target %s: no setting reaches it, card says %+v", tg.label(), c)
			}
			continue
		}
		if want := b.Policy.Algorithm.String() + " " + paramsCell(b.Policy); c.Setting != want {
			t.Errorf("target %s: card picks %q, best settings %q", tg.label(), c.Setting, want)
		}
		for _, v := range []string{c.Caught, c.Missed, c.FalseCut} {
			if !strings.Contains(v, "%") || !strings.Contains(v, "–") {
				t.Errorf("target %s: %q has no interval over the 3 replicates", tg.label(), v)
			}
		}
		if len(c.Exports) != len(export.Targets) {
			t.Errorf("target %s: %d exports, want one per target (%d)", tg.label(), len(c.Exports), len(export.Targets))
		}
		for _, e := range c.Exports {
			if !strings.Contains(e.Text, "ratesweep export --to "+e.Target) {
				t.Errorf("target %s: the %s export is not export's text:\n%s", tg.label(), e.Target, e.Text)
			}
		}
		if len(c.Clients) > cardClients {
			t.Errorf("target %s: %d clients named, at most %d", tg.label(), len(c.Clients), cardClients)
		}
		for _, n := range c.Clients {
			if strings.Contains(n, "scraper") || strings.Contains(n, "login burst") {
				t.Errorf("target %s: an abusive client among those it hurts: %s", tg.label(), n)
			}
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormedHTML(t, page)
	p := string(page)
	_, body, _ := strings.Cut(p, "</h1>")
	if i := strings.Index(body, `<section id="pick"`); i < 0 || strings.Index(body, "<section") != i || strings.Index(body, "<svg") < i || strings.Index(body, `class="warning"`) >= 0 && strings.Index(body, `class="warning"`) < i {
		t.Error("index.html: the card is not the first thing after the title")
	}
	for _, want := range []string{"<select>", "<button type=\"button\">Copy</button>", "navigator.clipboard", "ratesweep export --to nginx"} {
		if !strings.Contains(p, want) {
			t.Errorf("index.html: the card has no %q", want)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, mdBody, _ := strings.Cut(string(md), "\n\n")
	if !strings.HasPrefix(mdBody, "## What to pick\n\n| missed at most | setting |") {
		t.Errorf("report.md does not open with the card:\n%.300s", mdBody)
	}
	if !strings.Contains(mdBody, "```\n# ratesweep export --to ") {
		t.Error("report.md: no export in a fenced block")
	}
	if strings.Index(mdBody, "## What to pick") > strings.Index(mdBody, "## Trade-off") {
		t.Error("report.md: the card comes after the trade-off")
	}
}

// Each kind of warning the card gives: a cliff one grid step away, a
// parameter on an end of its sweep, the delay a shaping setting adds, and
// the retries of clients that react.
func TestCardWarnings(t *testing.T) {
	dir := runSpec(t, tinySpec)
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	has := func(ws []string, prefix string) bool {
		for _, w := range ws {
			if strings.HasPrefix(w, prefix) {
				return true
			}
		}
		return false
	}
	// fixed_window: window_s [30, 60] × limit 100…1000; point 0 is
	// window_s=30 limit=100, its grid neighbours window_s=60 (10) and
	// limit=200 (1).
	steps := gridSteps(r.Spec, 0)
	if len(steps) != 2 || steps[0].id != 10 || steps[0].param != "window_s" || steps[1].id != 1 || steps[1].value != 200 {
		t.Fatalf("grid steps of point 0: %+v", steps)
	}
	p := Point{ID: 0, Policy: model.Policy{Algorithm: model.FixedWindow}}
	flat := map[int64]*recommend.Measure{0: {}, 1: {}, 10: {}}
	if ws := r.cardWarnings(&p, flat); has(ws, "cliff") || !has(ws, "edge of the grid: window_s=30") {
		t.Errorf("a flat neighbourhood on the grid's corner: %q", ws)
	}
	steep := map[int64]*recommend.Measure{0: {}, 1: {MissedPct: recommend.Interval{Mean: 12}}, 10: {}}
	if ws := r.cardWarnings(&p, steep); !has(ws, "cliff: one grid step, to limit=200,") {
		t.Errorf("missed 12 points apart one step away: %q", ws)
	}
	nginx, err := model.ParseLabel("nginx rate=2 burst=10 delay=2")
	if err != nil {
		t.Fatal(err)
	}
	q := Point{ID: -1, Policy: nginx}
	q.MeanDelayS, q.P99DelayS = 1.5, 4
	if ws := r.cardWarnings(&q, nil); !has(ws, "delay: it queues the requests it admits, 1.5 s on average (p99 4 s)") {
		t.Errorf("a shaping setting: %q", ws)
	}
	q.MeanDelayS, q.P99DelayS = 0, 0
	q.Reactions.Measured, q.Reactions.AmplificationLegit = true, 1.4
	if ws := r.cardWarnings(&q, nil); !has(ws, "amplification: legitimate clients retry, sending 1.40×") || has(ws, "delay") {
		t.Errorf("clients that retry: %q", ws)
	}
}

// A replayed log's card names keys, never a row of many keys summed.
func TestCardLogRunNamesKeys(t *testing.T) {
	spec, err := sweep.LoadSpec("../configs/examples/antlr-org.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, c := range r.Card(context.Background()) {
		for _, n := range c.Clients {
			named++
			if strings.HasPrefix(n, "other keys") {
				t.Errorf("target %s: %q is many keys, not one client", c.Target, n)
			}
		}
	}
	if named == 0 {
		t.Error("no legitimate key named on the card")
	}
}
