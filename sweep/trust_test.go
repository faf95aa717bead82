package sweep

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Files a run writes take 0666 less the umask, like os.Create's: the test
// re-runs itself under umask 027 and expects 0640.
func TestFileModeFollowsUmask(t *testing.T) {
	if dir := os.Getenv("SWEEP_UMASK_CHILD"); dir != "" {
		spec := mustSpec(t, "lesson-sweep.yaml")
		if _, err := Run(context.Background(), spec, Options{OutDir: dir, Workers: 1}); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command("sh", "-c", `umask 027 && exec "$0" -test.run '^TestFileModeFollowsUmask$'`, os.Args[0])
	cmd.Env = append(os.Environ(), "SWEEP_UMASK_CHILD="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, f := range []string{"spec.yaml", "manifest.json", "points/part-000000.parquet", "clients/part-000000.parquet"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v under umask 027, want -rw-r-----", f, st.Mode().Perm())
		}
	}
}

// Grid sizes are counted exactly: axes of 2²², 2²¹ and 2²¹ values (2⁶⁴
// points) are refused naming the true size, instead of wrapping to 0 and
// running "0 points"; so are 2⁶³ points (negative in an int64), and a grid
// whose points fit but whose rows (× replicates) do not.
func TestGridSizeOverflow(t *testing.T) {
	spec := "name: big\nscenario: {name: s, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\nsweep:\n" +
		"  - algorithm: nginx\n    rate: {from: 0.001, to: 4194.304, step: 0.001}\n    burst: {from: 0, to: 2097151, step: 1}\n    delay: {from: 0, to: 2097151, step: 1}\n"
	if _, err := ParseSpec([]byte(spec), nil); err == nil || !strings.Contains(err.Error(), "sweep: the grid has 18446744073709551616 points") {
		t.Errorf("2^64 points: %v", err)
	}
	axes := func(logs ...int) Entry {
		var e Entry
		for _, l := range logs {
			e.Axes = append(e.Axes, Axis{Values: make([]float64, 1<<l)})
		}
		return e
	}
	for _, c := range []struct {
		s    Spec
		want string
	}{
		{Spec{Replicates: 1, Entries: []Entry{axes(21, 21, 21)}}, "9223372036854775808 points × 1 replicates"},
		{Spec{Replicates: 1, Entries: []Entry{axes(21, 21, 20), axes(21, 21, 20)}}, "9223372036854775808 points"},
		{Spec{Replicates: 4, Entries: []Entry{axes(21, 20, 20)}}, "2305843009213693952 points × 4 replicates = 9223372036854775808 rows"},
	} {
		if err := checkGridSize(&c.s, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	ok := Spec{Replicates: 2, Entries: []Entry{axes(21, 20, 20)}}
	if err := checkGridSize(&ok, nil); err != nil {
		t.Errorf("2^62 rows: %v", err)
	}
}

// A spec name must be able to name a directory.
func TestSpecNameRefused(t *testing.T) {
	for _, name := range []string{`"a\0b"`, strings.Repeat("n", 256), `"tab\there"`} {
		spec := "name: " + name + "\nscenario: {name: s, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\nsweep: [{algorithm: fixed_window, window_s: 1, limit: 1}]\n"
		_, err := ParseSpec([]byte(spec), nil)
		if err == nil || !strings.Contains(err.Error(), "name: must be at most 255 bytes") || len(err.Error()) > 200 {
			t.Errorf("name %.20s…: %v", name, err)
		}
	}
}

// A second YAML document is refused, naming its line; a trailing "---" is not.
func TestMultiDocumentSpec(t *testing.T) {
	spec := "name: one\nscenario: {name: s, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\nsweep: [{algorithm: fixed_window, window_s: 1, limit: 1}]\n"
	if _, err := ParseSpec([]byte(spec+"---\nname: two\n"), nil); err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), "second YAML document") {
		t.Errorf("two documents: %v", err)
	}
	if _, err := ParseSpec([]byte(spec+"---\n"), nil); err != nil {
		t.Errorf("a trailing ---: %v", err)
	}
}

// More shards than parts are refused before anything is allocated per shard.
func TestShardBound(t *testing.T) {
	g := NewGrid(mustSpec(t, "lesson-sweep.yaml"))
	if err := g.CheckShard(Shard{0, 9999999999}); err == nil || !strings.Contains(err.Error(), "at most 1 shards") {
		t.Errorf("0/9999999999: %v", err)
	}
	if err := g.CheckShard(Shard{0, 1}); err != nil {
		t.Error(err)
	}
}
