package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/sweep"
)

// completeParts checks every Parquet file under dir's points/ and clients/
// (each must open and hold its part's rows) and returns the part names.
func completeParts(t testing.TB, dir string, spec *sweep.Spec) []string {
	t.Helper()
	all := sweep.Parts(spec.Points(), sweep.Shard{Index: 0, Count: 1})
	rows := map[string]int64{}
	for _, p := range all {
		rows[p.Name()] = p.Points() * int64(spec.Replicates)
	}
	var names []string
	for _, table := range []string{"points", "clients"} {
		per := int64(1)
		if table == "clients" {
			per = int64(len(spec.Scenario.Clients))
		}
		files, _ := filepath.Glob(filepath.Join(dir, table, "*.parquet"))
		for _, f := range files {
			var n int64
			err := sweep.ScanFile(context.Background(), f, []string{"point_id"}, func(rec arrow.RecordBatch) error {
				n += rec.NumRows()
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if want, ok := rows[filepath.Base(f)]; !ok || n != want*per {
				t.Fatalf("%s: %d rows, want %d", f, n, want*per)
			}
			if table == "points" {
				names = append(names, filepath.Base(f))
			}
		}
	}
	return names
}

// waitForParts waits until dir holds more than n points parts.
func waitForParts(t *testing.T, dir string, n int, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(dir, "points", "part-*.parquet"))
		if len(files) > n {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended before it was signalled: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatal("no part written within 60 s")
}

// TestHelperMain is the ratesweep binary when the test binary runs itself
// with RATESWEEP_HELPER_MAIN=1 (see helperCommand).
func TestHelperMain(t *testing.T) {
	if os.Getenv("RATESWEEP_HELPER_MAIN") != "1" {
		t.Skip("only a child process of another test runs this")
	}
	i := slices.Index(os.Args, "--")
	os.Args = append([]string{"ratesweep"}, os.Args[i+1:]...)
	main()
}

// helperCommand runs "ratesweep args..." as a child process (the test
// binary itself, see TestHelperMain), from the repository root.
func helperCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperMain$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "RATESWEEP_HELPER_MAIN=1")
	cmd.Dir = "../.."
	return cmd
}

// SIGTERM and SIGINT stop a run with 143 and 130, a resume hint, and every
// completed part kept; the next --resume keeps them untouched.
func TestSignalsKeepCompletedParts(t *testing.T) {
	spec, err := sweep.LoadSpec("embedded:bench.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	kept := map[string][]byte{}
	for i, sig := range []struct {
		sig  syscall.Signal
		code int
		word string
	}{{syscall.SIGTERM, 143, "terminated"}, {syscall.SIGINT, 130, "interrupted"}} {
		args := []string{"run", "configs/bench.yaml", "--out", dir, "--workers", "1", "--quiet"}
		if i > 0 {
			args = append(args, "--resume")
		}
		cmd := helperCommand(args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		waitForParts(t, dir, len(kept), done)
		if err := cmd.Process.Signal(sig.sig); err != nil {
			t.Fatal(err)
		}
		err := <-done
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != sig.code {
			t.Fatalf("%v: %v, want exit %d; stderr: %s", sig.sig, err, sig.code, stderr.String())
		}
		msg := stderr.String()
		if !strings.Contains(msg, sig.word) || !strings.Contains(msg, "--resume") || !strings.Contains(msg, dir) {
			t.Fatalf("%v: stderr lacks the resume hint: %s", sig.sig, msg)
		}
		parts := completeParts(t, dir, spec)
		if len(parts) <= len(kept) {
			t.Fatalf("%v: %d parts kept, %d before", sig.sig, len(parts), len(kept))
		}
		for name, data := range kept { // kept by --resume, not recomputed
			now, err := os.ReadFile(filepath.Join(dir, "points", name))
			if err != nil || !bytes.Equal(now, data) {
				t.Fatalf("%v: points/%s changed by --resume (%v)", sig.sig, name, err)
			}
		}
		for _, name := range parts {
			if kept[name], err = os.ReadFile(filepath.Join(dir, "points", name)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
			t.Fatalf("%v: an interrupted run wrote its manifest", sig.sig)
		}
	}
}

func TestMergeCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	spec := "../../configs/bench.yaml" // 59 parts: work for 3 shards
	// More shards than parts: exit 2, naming the bound.
	if code, _, stderr := runCLI(t, "run", spec, "--out", dir, "--shard", "0/1000000"); code != 2 || !strings.Contains(stderr, "at most 59 shards") {
		t.Fatalf("run --shard 0/1000000: exit %d, %s", code, stderr)
	}
	// More shards than any run may have: exit 2, naming the maximum.
	if code, _, stderr := runCLI(t, "run", spec, "--out", dir, "--shard", "0/9999999999"); code != 2 || !strings.Contains(stderr, "N <= 1000000") {
		t.Fatalf("run --shard 0/9999999999: exit %d, %s", code, stderr)
	}
	// Not a run directory: exit 2.
	if code, _, stderr := runCLI(t, "merge", t.TempDir()); code != 2 || !strings.Contains(stderr, "spec.yaml") {
		t.Fatalf("merge of an empty dir: exit %d, %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "merge"); code != 2 {
		t.Fatalf("merge without RUN_DIR: exit %d", code)
	}
	for _, i := range []string{"2/3", "0/3"} {
		if code, _, stderr := runCLI(t, "run", spec, "--out", dir, "--shard", i, "--quiet"); code != 0 {
			t.Fatalf("run --shard %s: exit %d: %s", i, code, stderr)
		}
	}
	code, _, stderr := runCLI(t, "merge", dir)
	if code != 1 || !strings.Contains(stderr, "missing or unfinished shards (0-based index): 1") || !strings.Contains(stderr, "shard 1/3") {
		t.Fatalf("merge with shard 1 missing: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "run", spec, "--out", dir, "--shard", "1/3", "--quiet"); code != 0 {
		t.Fatalf("run --shard 1/3: exit %d: %s", code, stderr)
	}
	code, out, stderr := runCLI(t, "merge", "--sha256", "--compact", dir)
	if code != 0 || !strings.Contains(out, "merged 3 shard(s)") || !strings.Contains(out, "compacted into 1 file(s)") {
		t.Fatalf("merge: exit %d: %s %s", code, out, stderr)
	}
	single := filepath.Join(t.TempDir(), "single")
	if code, _, stderr := runCLI(t, "run", spec, "--out", single, "--quiet"); code != 0 {
		t.Fatalf("single run: exit %d: %s", code, stderr)
	}
	a, err := sweep.ReadPoints(context.Background(), single)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sweep.ReadPoints(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("points rows: single %d, merged %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Key() != b[i].Key() || a[i].Metrics != b[i].Metrics {
			t.Fatalf("row %d: single %+v, merged %+v", i, a[i], b[i])
		}
	}
	if code, out, _ := runCLI(t, "merge", single); code != 0 || !strings.Contains(out, "complete single-process run") {
		t.Fatalf("merge of a single run: exit %d: %s", code, out)
	}
}

func TestShardFromScheduler(t *testing.T) {
	for _, c := range []struct {
		flag   string
		shards int
		env    map[string]string
		want   string // shard, or "" for a usage error
	}{
		{"", 0, nil, "0/1"},
		{"2/5", 0, map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3"}, "2/5"},
		{"", 0, map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3"}, "1/3"},
		{"", 0, map[string]string{"SLURM_ARRAY_TASK_ID": "12", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_MAX": "13"}, "2/4"},
		{"", 0, map[string]string{"SLURM_ARRAY_TASK_ID": "3"}, ""},
		{"", 0, map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3"}, ""},
		{"", 0, map[string]string{"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "3"}, ""},
		{"", 8, map[string]string{"JOB_COMPLETION_INDEX": "7"}, "7/8"},
		{"", 0, map[string]string{"JOB_COMPLETION_INDEX": "7", "RATESWEEP_SHARDS": "8"}, "7/8"},
		{"", 0, map[string]string{"JOB_COMPLETION_INDEX": "7"}, ""},
		{"", 4, map[string]string{"JOB_COMPLETION_INDEX": "4"}, ""},
		{"1/1", 0, nil, ""},
	} {
		got, err := shardFromEnv(c.flag, c.shards, func(k string) string { return c.env[k] })
		var ue *usageError
		switch {
		case c.want == "" && !errors.As(err, &ue):
			t.Errorf("%q %d %v: got %v, %v; want a usage error", c.flag, c.shards, c.env, got, err)
		case c.want != "" && (err != nil || got.String() != c.want):
			t.Errorf("%q %d %v: got %v, %v; want %s", c.flag, c.shards, c.env, got, err, c.want)
		}
	}
}
