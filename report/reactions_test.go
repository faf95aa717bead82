package report

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// A run whose clients react shows each frontier point's amplification, as
// its simulation gives it; other runs' frontier tables are unchanged.
func TestFrontierShowsAmplification(t *testing.T) {
	spec, err := sweep.LoadSpec("../sweep/testdata/retries-sweep.yaml")
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
	ft := r.FrontierTable()
	if !slices.Contains(ft.Headers, "amplification legit") {
		t.Fatalf("frontier table headers %v: no amplification", ft.Headers)
	}
	w, err := model.NewWorkload(spec.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	sim := w.NewSimulator()
	sim.SetReplicate(spec.Seed, 0)
	for _, q := range r.Frontier.Points() {
		var out model.Outcome
		sim.Run(q.Policy, &out)
		if q.Reactions.AmplificationLegit != out.Reactions.AmplificationLegit || q.Reactions.AmplificationAbusive != out.Reactions.AmplificationAbusive {
			t.Errorf("%v: amplification %v/%v, simulated %v/%v", q.Policy, q.Reactions.AmplificationLegit, q.Reactions.AmplificationAbusive,
				out.Reactions.AmplificationLegit, out.Reactions.AmplificationAbusive)
		}
	}
	files, err := r.Write(filepath.Join(dir, "report"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report", "report.md"))
	if err != nil || !strings.Contains(string(md), "amplification legit") || !strings.Contains(string(md), "clients react to rejections") {
		t.Errorf("report.md (of %d files) lacks the amplification or the timelines' warning: %v", len(files), err)
	}
	plain, err := Load(context.Background(), runSpec(t, tinySpec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(plain.FrontierTable().Headers, "amplification legit") {
		t.Error("a run without reactions shows amplification")
	}
}
