package model_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/ratesweep/ratesweep/configs"
	"github.com/ratesweep/ratesweep/model"
)

func lessonWorkload(t testing.TB) *model.Workload {
	t.Helper()
	sc, err := model.ParseScenario(configs.Lesson)
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// The lesson's workload table and totals.
func TestLessonScenarioTotals(t *testing.T) {
	w := lessonWorkload(t)
	want := []int64{1200, 1720, 1080, 300, 2700, 7800, 2160}
	names := []string{"subscriber portal, steady", "field app, shift start", "billing-period batch query",
		"internal monitoring poll", "off-workflow bulk download", "page-crawling scraper", "login attempt sequence"}
	var o model.Outcome
	w.NewSimulator().Run(model.LessonBucket, &o)
	for i, c := range o.Clients {
		if c.Offered != want[i] {
			t.Errorf("client %d offered %d, want %d", i, c.Offered, want[i])
		}
		if got := w.Scenario.Clients[i].Name; got != names[i] {
			t.Errorf("client %d name %q, want %q", i, got, names[i])
		}
	}
	if o.OfferedLegit+o.OfferedAbusive != 16960 || o.OfferedAbusive != 12660 || o.OfferedLegit != 4300 {
		t.Errorf("totals: legit %d abusive %d, want 4300 12660 (16960)", o.OfferedLegit, o.OfferedAbusive)
	}
}

// The lesson's Table 1.
func TestLessonTable1(t *testing.T) {
	l := model.ComputeLesson(lessonWorkload(t))
	cuts := [][3]int64{ // fixed, sliding, bucket per client
		{0, 0, 0}, {360, 640, 0}, {45, 240, 0}, {0, 0, 0}, {0, 0, 0}, {4800, 4800, 3910}, {240, 960, 0},
	}
	for i, want := range cuts {
		for s := range 3 {
			if got := l.Shapes[s].Clients[i].Cut(); got != want[s] {
				t.Errorf("%s, client %d: cut %d, want %d", l.Shapes[s].Policy.Label(), i, got, want[s])
			}
		}
	}
	summary := []struct {
		label                    string
		caught, missed, false_   int64
		legitPct                 float64
		design, code, none       int64
		onlyHerePct              float64
		missedPctForCompleteness float64
	}{
		{"fixed window 60 s", 5040, 7620, 405, 9.4, 0, 240, 4800, 95.2, 60.2},
		{"sliding window 60 s", 5760, 6900, 880, 20.5, 0, 960, 4800, 83.3, 54.5},
		{"token bucket 10/s", 3910, 8750, 0, 0.0, 0, 0, 3910, 100.0, 69.1},
	}
	for s, want := range summary {
		got := l.Shapes[s]
		if got.Policy.Label() != want.label {
			t.Errorf("shape %d label %q, want %q", s, got.Policy.Label(), want.label)
		}
		if got.Caught != want.caught || got.Missed != want.missed || got.FalseCut != want.false_ {
			t.Errorf("%s: caught/missed/false cut = %d/%d/%d, want %d/%d/%d", want.label,
				got.Caught, got.Missed, got.FalseCut, want.caught, want.missed, want.false_)
		}
		if round1(got.LegitCutPct) != want.legitPct {
			t.Errorf("%s: legit cut %% = %.1f, want %.1f", want.label, got.LegitCutPct, want.legitPct)
		}
		// Table 3a.
		if got.CutDesign != want.design || got.CutCode != want.code || got.CutNone != want.none {
			t.Errorf("%s: cut by stage design/code/none = %d/%d/%d, want %d/%d/%d", want.label,
				got.CutDesign, got.CutCode, got.CutNone, want.design, want.code, want.none)
		}
		if round1(got.OnlyHerePct) != want.onlyHerePct {
			t.Errorf("%s: only here %% = %.1f, want %.1f", want.label, got.OnlyHerePct, want.onlyHerePct)
		}
		if round1(got.MissedPct) != want.missedPctForCompleteness {
			t.Errorf("%s: missed %% = %.1f, want %.1f", want.label, got.MissedPct, want.missedPctForCompleteness)
		}
	}
}

// The lesson's Table 2, both halves.
func TestLessonTable2(t *testing.T) {
	l := model.ComputeLesson(lessonWorkload(t))
	type row struct{ v, falseCut, caught, missed, login int64 }
	check := func(name string, got []model.SweepRow, want []row) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", name, len(got), len(want))
		}
		for i, w := range want {
			g := got[i]
			if g.Value != w.v || g.Outcome.FalseCut != w.falseCut || g.Outcome.Caught != w.caught ||
				g.Outcome.Missed != w.missed || g.FocusAdmit != w.login {
				t.Errorf("%s %d: got false cut %d caught %d missed %d login admitted %d, want %v",
					name, g.Value, g.Outcome.FalseCut, g.Outcome.Caught, g.Outcome.Missed, g.FocusAdmit, w)
			}
		}
	}
	check("sliding limit", l.LimitSweep, []row{
		{600, 880, 5760, 6900, 1200},
		{800, 480, 4360, 8300, 1600},
		{1000, 240, 2960, 9700, 2000},
		{1240, 0, 1600, 11060, 2160},
		{1500, 0, 300, 12360, 2160},
	})
	check("bucket capacity", l.CapacitySweep, []row{
		{200, 1020, 5190, 7470, 1580},
		{400, 620, 4590, 8070, 1980},
		{600, 220, 4210, 8450, 2160},
		{900, 0, 3910, 8750, 2160},
		{1200, 0, 3610, 9050, 2160},
	})
}

// The lesson's Table 3b: the limit needed to see the bulk download.
func TestLessonTable3Design(t *testing.T) {
	l := model.ComputeLesson(lessonWorkload(t))
	want := []struct {
		limit, bulkCut, legitCut int64
		pct                      float64
	}{
		{600, 0, 880, 20.5}, {540, 0, 1000, 23.3}, {480, 300, 1120, 26.0}, {360, 900, 1360, 31.6},
	}
	for i, w := range want {
		g := l.DesignSweep[i]
		if g.Value != w.limit || g.FocusCut != w.bulkCut || g.Outcome.FalseCut != w.legitCut || round1(g.Outcome.LegitCutPct) != w.pct {
			t.Errorf("limit %d: bulk cut %d legit cut %d (%.1f%%), want %+v",
				g.Value, g.FocusCut, g.Outcome.FalseCut, g.Outcome.LegitCutPct, w)
		}
	}
}

func ExampleSimulator_Run() {
	sc := &model.Scenario{Name: "two clients", DurationS: 4, Clients: []model.Client{
		{Name: "user", Class: model.Legit, Segments: []model.Segment{{T0: 0, T1: 4, Rate: 2}}},
		{Name: "bot", Class: model.Abusive, Stage: model.StageNone, Segments: []model.Segment{{T0: 1, T1: 3, Rate: 10}}},
	}}
	w, _ := model.NewWorkload(sc)
	var o model.Outcome
	w.NewSimulator().Run(model.Policy{Algorithm: model.TokenBucket, Rate: 2, Capacity: 4}, &o)
	fmt.Printf("caught %d, missed %d, false cut %d\n", o.Caught, o.Missed, o.FalseCut)
	// Output: caught 14, missed 6, false cut 0
}
