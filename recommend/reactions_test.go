package recommend

import (
	"context"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// --max-amplification and --max-legit-delay-p99 bound the choice by the
// reaction columns, read the same through the streamed and in-memory paths.
func TestReactionConstraints(t *testing.T) {
	spec, err := sweep.LoadSpec("../sweep/testdata/retries-sweep.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	run, err := ReadRun(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var lo, hi float64 = 1e9, 0
	for _, m := range run.Measures {
		if m.AmplificationLegit == nil {
			t.Fatal("no amplification read")
		}
		lo, hi = min(lo, m.AmplificationLegit.Mean), max(hi, m.AmplificationLegit.Mean)
	}
	if !(lo < hi) {
		t.Fatalf("amplification %v to %v: the test needs policies that differ", lo, hi)
	}
	all := Bound{Value: 100, Pct: true}
	bound, delay := (lo+hi)/2, 1e9
	for _, o := range []Options{
		{MaxFalseCut: &all, MaxAmplification: &bound},
		{MaxFalseCut: &all, MaxAmplification: &bound, MaxLegitDelayP99S: &delay},
	} {
		res, err := RecommendDirs(context.Background(), []string{dir}, o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Overall == nil || res.Feasible == 0 || res.Feasible == res.Policies {
			t.Fatalf("bound %.3f×: %d of %d feasible, choice %v", bound, res.Feasible, res.Policies, res.Overall)
		}
		m := run.Measures[res.Overall.Label]
		if m.AmplificationLegit.Mean > bound {
			t.Errorf("chose %s at %.3f× above the bound %.3f×", res.Overall.Label, m.AmplificationLegit.Mean, bound)
		}
		t.Logf("%v: %d of %d feasible, chose %s (%.3f×)", res.Constraints, res.Feasible, res.Policies, res.Overall.Label, m.AmplificationLegit.Mean)
	}
}
