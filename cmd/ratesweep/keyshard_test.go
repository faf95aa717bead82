package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Key shards through the command line, each shard taken from an engine's
// variables as a batch engine starts it: merged, the run is byte for byte
// the single run's; bad uses exit 2 naming the cause.
func TestRunShardByKeyCLI(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	log, _ := filepath.Abs("../../configs/examples/logs/antlr_org_20030902/access.log.gz")
	os.WriteFile(spec, []byte("name: k\ntraffic: {log: "+log+", format: combined, top_keys: 10}\nshard_by: key\nsweep:\n"+
		"  - {algorithm: sliding_window, window_s: 60, limit: [10, 30, 90]}\n  - {algorithm: gcra, rate: [0.5, 2], capacity: [5, 50]}\n"), 0o644)
	single := filepath.Join(dir, "single")
	if code, _, stderr := runCLI(t, "run", spec, "--out", single, "-q"); code != 0 {
		t.Fatalf("single run: exit %d: %s", code, stderr)
	}
	keys := filepath.Join(dir, "keys")
	checkKeyShards(t, spec, single, keys)
	if code, _, stderr := runCLI(t, "report", keys); code != 0 {
		t.Errorf("report of the merged run: exit %d: %s", code, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--shard-by", "keys", spec}, "--shard-by: unknown shard_by \"keys\""},
		{[]string{"run", "embedded:lesson-sweep.yaml", "--shard-by", "key", "--shard", "0/2", "--out", filepath.Join(dir, "x"),
			"--set", "sweep=[{algorithm: fixed_window, window_s: 60, limit: 10, key: [client, global]}]"}, "sweep[0].key: global needs every key at once"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// checkKeyShards runs spec (shard_by: key) as three key shards into keys,
// each taking its shard from an engine's variables as a batch engine starts
// it, merges them, and checks that the merged files are the single run's
// (in single) byte for byte.
func checkKeyShards(t *testing.T, spec, single, keys string) {
	t.Helper()
	for i := range 3 {
		vars := map[string]string{"CLOUD_RUN_TASK_INDEX": string(rune('0' + i)), "CLOUD_RUN_TASK_COUNT": "3"}
		if code, stdout, stderr := runCLIEnv(t, vars, "run", spec, "--out", keys); code != 0 || !strings.Contains(stdout, "ratesweep merge "+keys) {
			t.Fatalf("key shard %d: exit %d: %s%s", i, code, stdout, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "merge", keys); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"points/part-000000.parquet", "clients/part-000000.parquet"} {
		a, _ := os.ReadFile(filepath.Join(single, f))
		b, err := os.ReadFile(filepath.Join(keys, f))
		if err != nil || len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: merged key shards differ from the single run (%v)", f, err)
		}
	}
}

// A scenario sweep's key shards, run and merged through the command line,
// are byte for byte the single run.
func TestRunShardByKeyScenarioCLI(t *testing.T) {
	dir := t.TempDir()
	single := filepath.Join(dir, "single")
	if code, _, stderr := runCLI(t, "run", "embedded:lesson-sweep.yaml", "--out", single, "-q"); code != 0 {
		t.Fatalf("single run: exit %d: %s", code, stderr)
	}
	keys := filepath.Join(dir, "keys")
	for i := range 3 {
		if code, _, stderr := runCLI(t, "run", "embedded:lesson-sweep.yaml", "--shard-by", "key", "--shard", string(rune('0'+i))+"/3", "--out", keys, "-q"); code != 0 {
			t.Fatalf("key shard %d: exit %d: %s", i, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "merge", keys); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(single, "*", "part-*.parquet"))
	if len(files) == 0 {
		t.Fatal("the single run wrote no parts")
	}
	for _, f := range files {
		rel, _ := filepath.Rel(single, f)
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(keys, rel))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: merged key shards differ from the single run (%v)", rel, err)
		}
	}
}
