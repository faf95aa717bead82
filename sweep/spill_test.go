package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/ingest"
)

// What a spilled run killed mid-way leaves (its spill files, some passes)
// is its own: --resume and --force both clean it up and finish with the
// in-memory run's bytes; a file of another name there is foreign.
func TestSpillLeftoversAreOwn(t *testing.T) {
	dir := t.TempDir()
	writeZipfLog(t, filepath.Join(dir, "z.log"), 50000, 3000, 9)
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(p, []byte("name: z\ntraffic: {log: z.log, format: combined, top_keys: 15}\nsweep:\n"+
		"  - {algorithm: sliding_window, window_s: 60, limit: [5, 40]}\n"), 0o644)
	spec, err := LoadSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	mustRun(t, spec, Options{OutDir: whole, MaxMemory: -1})
	budget := estimateRun(spec, Shard{0, 1}, 4, 1, 0).MemoryBytes
	passes := SpillPasses(spec, Shard{0, 1}, 1, budget)
	if passes < 2 {
		t.Fatalf("%d passes", passes)
	}
	killed := func() string {
		out := filepath.Join(t.TempDir(), "out")
		mustRun(t, spec, Options{OutDir: out, Shard: Shard{0, passes}, ShardBy: ShardByKey, Workers: 1})
		sd := filepath.Join(out, SpillDir)
		os.MkdirAll(sd, 0o755)
		for i := range passes {
			os.WriteFile(filepath.Join(sd, ingest.SpillFile(0, i)), []byte("half a row"), 0o644)
		}
		return out
	}
	for _, o := range []Options{{Resume: true}, {Force: true}} {
		out := killed()
		o.OutDir, o.MaxMemory, o.Workers = out, budget, 1
		if _, err := Run(t.Context(), spec, o); err != nil {
			t.Fatalf("resume %v force %v: %v", o.Resume, o.Force, err)
		}
		sameRunFiles(t, whole, out)
		for _, d := range []string{SpillDir, KeyShardsDir} {
			if fileExists(filepath.Join(out, d)) {
				t.Errorf("resume %v force %v: %s/ left behind", o.Resume, o.Force, d)
			}
		}
	}
	out := killed()
	os.WriteFile(filepath.Join(out, SpillDir, "notes.txt"), nil, 0o644)
	_, err = Run(t.Context(), spec, Options{OutDir: out, MaxMemory: budget, Force: true})
	if err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("a foreign file in %s/: %v", SpillDir, err)
	}
}
