package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Every reader of a run refuses what it cannot trust, the same way: a part
// of another scenario, a manifest naming paths outside the run, a symlink
// out of it, an incomplete run, NULL or NaN metrics, rows listed twice.
// Each case gave a "best" policy with exit 0 from recommend or export --run
// (and report summed the duplicated rows).
func TestReadersRefuseForgedRuns(t *testing.T) {
	base := sweepRun(t, "forged", lessonScenario(t), "", checkGrid)
	const policy = "fixed_window window_s=30 limit=100"
	readers := func(dir string, extra ...string) [][]string {
		return [][]string{
			append([]string{"report", dir}, extra...),
			append([]string{"recommend", dir, "--max-false-cut", "1%"}, extra...),
			append([]string{"export", "--to", "nginx", "--run", dir, policy}, extra...),
		}
	}
	expect := func(name string, wantCode int, want string, cmds [][]string) {
		t.Helper()
		for _, args := range cmds {
			code, stdout, stderr := runCLI(t, args...)
			if code != wantCode || !strings.Contains(stderr+stdout, want) || strings.Contains(stderr, "goroutine") {
				t.Errorf("%s: %s: exit %d, want %d with %q\nstderr: %s", name, args[0], code, wantCode, want, stderr)
			}
		}
	}
	expect("a run as written", 0, "", readers(base))

	// A part of another scenario (same grid, same manifest otherwise).
	other := sweepRun(t, "forged", writeFile(t, t.TempDir(), "s.yaml",
		"name: other\nduration_s: 60\nclients:\n  - {name: a, class: legit, segments: [[0, 60, 3]]}\n  - {name: b, class: abusive, stage: code, segments: [[0, 60, 30]]}\n"), "", checkGrid)
	foreign := copyRun(t, base)
	for _, table := range []string{"points", "clients"} {
		b, err := os.ReadFile(filepath.Join(other, table, "part-000000.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(foreign, table), "part-000000.parquet", string(b))
	}
	expect("a part of another scenario", 2, "is not the run's", append(readers(foreign), []string{"check", "--baseline", base, foreign}))

	// A manifest naming a file outside the run.
	outside := copyRun(t, base)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.MkdirAll(filepath.Join(victim, "points"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(filepath.Join(outside, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, outside, "manifest.json", strings.Replace(string(m), `"file": "part-000000.parquet"`, `"file": "../../victim/points/part-000000.parquet"`, 1))
	expect("a manifest path through ../", 2, `manifest.json lists "../../victim/points/part-000000.parquet"`, append(readers(outside), []string{"check", "--baseline", base, outside}))
	expect("merge of a manifest path through ../", 1, `part 0 names files "../../victim/points/part-000000.parquet"`, [][]string{{"merge", outside}, {"merge", "--compact", outside}})

	// A part that is a symlink out of the run.
	linked := copyRun(t, base)
	part := filepath.Join(linked, "points", "part-000000.parquet")
	if err := os.Rename(part, filepath.Join(victim, "points", "part-000000.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(victim, "points", "part-000000.parquet"), part); err != nil {
		t.Fatal(err)
	}
	expect("a symlink out of the run", 2, "outside the run directory", append(readers(linked), []string{"check", "--baseline", base, linked}))
	expect("merge of a symlink out of the run", 1, "a symlink outside the run directory", [][]string{{"merge", linked}})

	// An incomplete run (no manifest): refused unless --allow-incomplete.
	killed := copyRun(t, base)
	if err := os.Remove(filepath.Join(killed, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	expect("incomplete", 2, "no manifest.json", readers(killed)[1:])
	expect("incomplete, allowed", 0, "", readers(killed, "--allow-incomplete"))

	// NULL and NaN metrics.
	for _, c := range []struct{ name, col, want string }{
		{"NaN", "legit_cut_pct", "legit_cut_pct is NaN"},
		{"NULL", "false_cut", "false_cut is NULL"},
	} {
		dir := copyRun(t, base)
		eachPart(t, dir, func(s *arrow.Schema, cols []arrow.Array) (*arrow.Schema, []arrow.Array) {
			i := s.FieldIndices(c.col)[0]
			out := slices.Clone(cols)
			b := array.NewBuilder(memory.DefaultAllocator, cols[i].DataType())
			defer b.Release()
			for r := range cols[i].Len() {
				switch {
				case r != 5:
					b.AppendValueFromString(cols[i].ValueStr(r))
				case c.name == "NaN":
					b.(*array.Float64Builder).Append(nanValue())
				default:
					b.AppendNull()
				}
			}
			out[i] = b.NewArray()
			fields := slices.Clone(s.Fields())
			fields[i].Nullable = true
			md := s.Metadata()
			return arrow.NewSchema(fields, &md), out
		})
		expect(c.name, 2, c.want, readers(dir)[1:])
		expect(c.name+", allowed", 0, "", readers(dir, "--allow-incomplete")[1:])
		expect(c.name+", checked", 2, c.want, [][]string{{"check", "--baseline", base, dir}, {"check", "--baseline", dir, base}})
		// Let through, the value compares as NaN: a change, never equal to the number.
		expect(c.name+", checked anyway", 1, c.col, [][]string{{"check", "--baseline", base, dir, "--allow-incomplete"}})
	}

	// Every row listed twice: refused, never summed as replicates.
	doubled := copyRun(t, base)
	eachPart(t, doubled, func(s *arrow.Schema, cols []arrow.Array) (*arrow.Schema, []arrow.Array) {
		var idx []int
		for i := range cols[0].Len() {
			idx = append(idx, i, i)
		}
		return s, takeRows(t, cols, idx)
	})
	expect("rows twice", 2, "144 rows, manifest.json says 72", readers(doubled))
	if err := os.Remove(filepath.Join(doubled, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	expect("rows twice, no manifest", 2, "point_id 0 replicate 0 comes again", readers(doubled, "--allow-incomplete"))
}

// --resume recomputes a part that is a symlink out of the run directory
// instead of keeping what it points to.
func TestResumeRecomputesSymlinkedPart(t *testing.T) {
	base := sweepRun(t, "forged", lessonScenario(t), "", checkGrid)
	run := copyRun(t, base)
	if err := os.Remove(filepath.Join(run, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(run, "points", "part-000000.parquet")
	elsewhere := filepath.Join(t.TempDir(), "part-000000.parquet")
	if err := os.Rename(part, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, part); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "run", filepath.Join(run, "spec.yaml"), "--out", run, "--resume", "--quiet"); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	if st, err := os.Lstat(part); err != nil || st.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the part is still a symlink (%v)", err)
	}
	if code, _, stderr := runCLI(t, "check", "--baseline", base, run); code != 0 {
		t.Errorf("check after resume: exit %d: %s", code, stderr)
	}
}
