package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Shard counts have one documented maximum in every shard mode, and merge
// takes the count from the manifests, never from a directory's name; the
// errors are short. run --shard-by key --shard 0/99999999999 was accepted,
// merge --shards 99999999999 grew to 11 GB, and a key shard directory
// renamed shard-00000-of-99999 gave a 6.8 MB error.
func TestShardCountsBounded(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	log, _ := filepath.Abs("../../configs/examples/logs/antlr_org_20030902/access.log.gz")
	writeFile(t, dir, "s.yaml", "name: k\ntraffic: {log: "+log+", format: combined, top_keys: 10}\nshard_by: key\nsweep:\n"+
		"  - {algorithm: sliding_window, window_s: 60, limit: [10, 30, 90]}\n")
	out := filepath.Join(dir, "keys")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", spec, "--shard-by", "key", "--shard", "0/99999999999", "--out", out}, "N <= 1000000"},
		{[]string{"run", spec, "--shard", "0/1000001", "--out", out}, "N <= 1000000"},
		{[]string{"run", spec, "--shards", "1000001", "--out", out}, "--shards must be 1 to 1000000"},
		{[]string{"merge", "--shards", "99999999999", out}, "--shards must be 1 to 1000000"},
		{[]string{"run", spec, "--shard", "0/" + strings.Repeat("9", 40000), "--out", out}, "expected I/N"},
	} {
		code, _, stderr := withTimeout(t, 20*time.Second, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || len(stderr) > 400 {
			t.Errorf("%.80v: exit %d, want 2 with %q in a short error; stderr (%d bytes): %.400s", c.args, code, c.want, len(stderr), stderr)
		}
	}
	// A key shard whose directory claims 99999 shards: its manifest says 2.
	if code, _, stderr := runCLI(t, "run", spec, "--shard", "0/2", "--out", out, "--quiet"); code != 0 {
		t.Fatalf("key shard 0/2: exit %d: %s", code, stderr)
	}
	if err := os.Rename(filepath.Join(out, "keyshards", "shard-00000-of-00002"), filepath.Join(out, "keyshards", "shard-00000-of-99999")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLIEnv(t, map[string]string{"CLOUD_RUN_TASK_INDEX": strings.Repeat("7", 40000)}, "run", "--dry-run", spec)
	if code != exitUsage || len(stderr) > 400 {
		t.Errorf("a 40 KB engine variable: exit %d, stderr (%d bytes) %.400s", code, len(stderr), stderr)
	}
	code, _, stderr = withTimeout(t, 20*time.Second, "merge", out)
	if code == 0 || len(stderr) > 2000 || strings.Contains(stderr, "99998") {
		t.Errorf("merge of a renamed key shard: exit %d, stderr (%d bytes): %.2000s", code, len(stderr), stderr)
	}
}
