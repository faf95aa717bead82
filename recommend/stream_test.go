package recommend

import (
	"bytes"
	"context"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// runDir runs the spec at path (with --set overrides) into a temporary
// directory.
func runDir(t *testing.T, path string, sets ...string) string {
	t.Helper()
	spec, err := sweep.LoadSpec(path, sets...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The streaming path gives exactly what reading every row gives: the same
// JSON, for every kind of constraint, one run or several, feasible or not.
func TestStreamingMatchesInMemory(t *testing.T) {
	lesson := runDir(t, "embedded:baseline-lesson.yaml")
	// Three replicates with Poisson arrivals: intervals of non-zero width.
	a := runDir(t, "embedded:baseline-lesson.yaml", "replicates=3", "scenario.arrivals=poisson", "seed=1")
	b := runDir(t, "embedded:baseline-lesson.yaml", "replicates=3", "scenario.arrivals=poisson", "seed=2")
	logRun := runDir(t, "../configs/examples/antlr-org.yaml")
	cases := []struct {
		name string
		dirs []string
		o    Options
	}{
		{"false cut", []string{lesson}, Options{MaxFalseCut: bound("1%")}},
		{"per client", []string{lesson}, Options{MaxFalseCut: bound("1%"), MaxClientCut: bound("2%")}},
		{"missed", []string{lesson}, Options{MaxFalseCut: bound("5%"), MaxMissed: bound("60%")}},
		{"caught counts", []string{lesson}, Options{MaxFalseCut: bound("50"), MinCaught: bound("100")}},
		{"nothing feasible", []string{lesson}, Options{MaxFalseCut: bound("0%"), MaxMissed: bound("0%")}},
		{"replicates", []string{a}, Options{MaxFalseCut: bound("1%"), MaxClientCut: bound("3%")}},
		{"two runs", []string{a, b, lesson}, Options{MaxFalseCut: bound("1%")}},
		{"two runs per client", []string{b, a}, Options{MaxFalseCut: bound("2%"), MaxClientCut: bound("2%")}},
		{"log run", []string{logRun}, Options{MaxFalseCut: bound("1%"), MaxClientCut: bound("5%")}},
	}
	for _, c := range cases {
		var runs []*Run
		for _, d := range c.dirs {
			r, err := ReadRun(context.Background(), d)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
		}
		want, err := Recommend(runs, c.o)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := sameGrid(openRuns(t, c.dirs...)); !ok {
			t.Fatalf("%s: not streamed", c.name)
		}
		got, err := RecommendDirs(context.Background(), c.dirs, c.o)
		if err != nil {
			t.Fatal(err)
		}
		var wb, gb bytes.Buffer
		Write(&wb, want, "json")
		Write(&gb, got, "json")
		if wb.String() != gb.String() {
			t.Errorf("%s: streaming differs:\n--- streaming\n%s\n--- in memory\n%s", c.name, gb.String(), wb.String())
		}
		if (want.Overall == nil) != (c.name == "nothing feasible") {
			t.Errorf("%s: overall %v", c.name, want.Overall)
		}
	}
}

// Runs of different grids are joined on the policy label, in memory.
func TestDifferentGridsFallBack(t *testing.T) {
	a := runDir(t, "embedded:baseline-lesson.yaml")
	b := runDir(t, "embedded:baseline-lesson.yaml", "sweep[0].limit=[300, 600]")
	if _, _, ok := sameGrid(openRuns(t, a, b)); ok {
		t.Fatal("different grids streamed together")
	}
	res, err := RecommendDirs(context.Background(), []string{a, b}, Options{MaxFalseCut: bound("1%")})
	if err != nil || res.Overall == nil || len(res.Notes) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
}

// openRuns opens run directories with sweep.OpenRun.
func openRuns(t *testing.T, dirs ...string) []*sweep.RunDir {
	t.Helper()
	var out []*sweep.RunDir
	for _, d := range dirs {
		r, err := sweep.OpenRun(d, sweep.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}
