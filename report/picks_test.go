package report

import (
	"context"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/internal/choice"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

const nginxSpec = `name: nginx ties
scenario:
  name: bursts
  duration_s: 300
  clients:
    - {name: steady, class: legit, segments: [[0, 300, 3]]}
    - {name: bursty, class: legit, segments: [[0, 100, 1], [100, 110, 40], [110, 300, 1]]}
    - {name: scraper, class: abusive, stage: none, segments: [[0, 300, 9]]}
sweep:
  - algorithm: nginx
    rate: [2, 5, 10, 20]
    burst: [0, 10, 50, 500]
    delay: [0, 1000000]
`

// Settings with the same legitimate cut and missed abuse are shown by the
// least delay they add, then the simplest, then the one inside its swept
// ranges: checked against a fresh simulation of every grid point.
func TestTiesPreferLessDelayThenSimpler(t *testing.T) {
	dir := runSpec(t, nginxSpec)
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The oracle: every point simulated by the model, grouped by outcome.
	w, err := model.NewWorkload(r.Spec.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	sim := w.NewSimulator()
	g := sweep.NewGrid(r.Spec)
	type sim1 struct {
		id int64
		p  model.Policy
		m  model.Metrics
	}
	groups := map[[2]float64][]sim1{}
	var out model.Outcome
	for id := range g.Points() {
		p := g.Policy(id)
		sim.Run(p, &out)
		k := [2]float64{out.LegitCutPct, out.MissedPct}
		groups[k] = append(groups[k], sim1{id, p, out.Metrics})
	}
	queued := false
	for _, f0 := range r.Frontier.Points() {
		f := f0.Shown()
		grp := groups[[2]float64{f.X(), f.Y()}]
		if int64(len(grp)) != 1+f.Ties {
			t.Fatalf("%s: %d settings with its outcome, the frontier counts %d", paramsCell(f.Policy), len(grp), 1+f.Ties)
		}
		for _, o := range grp {
			if o.id == f.ID {
				if o.m.MeanDelayS != f.MeanDelayS || o.m.P99DelayS != f.P99DelayS {
					t.Errorf("%s: delay %g/%g, the model says %g/%g", paramsCell(f.Policy), f.MeanDelayS, f.P99DelayS, o.m.MeanDelayS, o.m.P99DelayS)
				}
				continue
			}
			better := o.m.MeanDelayS < f.MeanDelayS ||
				o.m.MeanDelayS == f.MeanDelayS && o.m.P99DelayS < f.P99DelayS ||
				o.m.MeanDelayS == f.MeanDelayS && o.m.P99DelayS == f.P99DelayS && choice.Optional(o.p) < choice.Optional(f.Policy) ||
				o.m.MeanDelayS == f.MeanDelayS && o.m.P99DelayS == f.P99DelayS && choice.Optional(o.p) == choice.Optional(f.Policy) &&
					len(EdgesOfRange(r.Spec, o.id)) < len(EdgesOfRange(r.Spec, f.ID))
			if better {
				t.Errorf("frontier shows %s (delay %g s), but %s ties with it and is preferable (delay %g s)",
					paramsCell(f.Policy), f.MeanDelayS, paramsCell(o.p), o.m.MeanDelayS)
			}
			if o.m.MeanDelayS > 0 {
				queued = true
			}
		}
	}
	if !queued {
		t.Fatal("no tie between a queueing setting and another: the test shows nothing")
	}
	// The delay column is in every table that lists nginx settings, and the
	// picks say what delay they add.
	for _, tb := range []*Table{r.TargetsTable(), r.SelectedTable(), r.StageTable(), r.FrontierTable()} {
		if tb.Headers[len(tb.Headers)-1] != "delay mean / p99" {
			t.Errorf("%q: no delay column (%v)", tb.Title, tb.Headers)
		}
		for _, row := range tb.Rows {
			if len(row) != len(tb.Headers) {
				t.Errorf("%q: row %v has %d cells for %d headers", tb.Title, row, len(row), len(tb.Headers))
			}
		}
	}
	for _, l := range r.PickSummary() {
		if strings.Contains(l, "which cuts") && !strings.Contains(l, "delay") {
			t.Errorf("pick %q says nothing of delay", l)
		}
	}
}

// A run without nginx has no delay column.
func TestNoDelayColumnWithoutShaping(t *testing.T) {
	r, err := Load(context.Background(), runSpec(t, tinySpec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range r.Tables() {
		for _, h := range tb.Headers {
			if strings.Contains(h, "delay") {
				t.Errorf("%q has a delay column", tb.Title)
			}
		}
	}
}

func TestSigDigits(t *testing.T) {
	for v, want := range map[float64]string{
		5.33669923121: "5.34", 1725: "1725", 0.1: "0.1", 1.5: "1.5", 0.123456: "0.123",
		133.7: "133.7", 1234.567: "1234.6", 0.0004567: "0.000457", 2: "2", 175.8: "175.8", 331.04: "331",
	} {
		if got := sigDigits(v, 3); got != want {
			t.Errorf("sigDigits(%v) = %s, want %s", v, got, want)
		}
	}
}
