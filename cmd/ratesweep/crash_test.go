//go:build crash

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/sweep"
)

// buildBinary builds ratesweep into a temporary directory.
func buildBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ratesweep")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// crashKills is the number of kills a campaign makes: def, or
// RATESWEEP_CRASH_KILLS (make test-adversarial runs a small campaign).
func crashKills(def int) int {
	if n, err := strconv.Atoi(os.Getenv("RATESWEEP_CRASH_KILLS")); err == nil && n > 0 {
		return n
	}
	return def
}

// TestCrashResume kills a sweep with SIGKILL at 20 random moments (seed:
// RATESWEEP_CRASH_SEED, default 1), resumes it each time with --resume, and
// checks that every Parquet file under a final name is complete after each
// kill and that the finished run is byte for byte the uninterrupted one.
// Run it with: make test-crash (go test -tags crash ./cmd/ratesweep).
func TestCrashResume(t *testing.T) {
	seed := uint64(1)
	if v := os.Getenv("RATESWEEP_CRASH_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("RATESWEEP_CRASH_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (set RATESWEEP_CRASH_SEED to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	bin := buildBinary(t)
	const specFile = "configs/bench.yaml"
	spec, err := sweep.LoadSpec("../../" + specFile)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ratesweep := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "../.."
		return cmd
	}

	// The uninterrupted run.
	ref := filepath.Join(tmp, "ref")
	start := time.Now()
	if out, err := ratesweep("run", specFile, "--out", ref, "--workers", "2", "--quiet").CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	full := time.Since(start)
	t.Logf("uninterrupted run: %.2f s", full.Seconds())

	dir := filepath.Join(tmp, "crashed")
	kills, finished, fresh := 0, 0, true
	for kills < crashKills(20) {
		args := []string{"run", specFile, "--out", dir, "--workers", "2", "--quiet"}
		if !fresh {
			args = append(args, "--resume")
		}
		cmd := ratesweep(args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// A random moment within the first half of a full run: the start,
		// the verification of kept parts, simulation or writing.
		delay := time.Duration(rng.Int64N(int64(full / 2)))
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run %v: %v\n%s", args, err, stderr.String())
			}
			// Finished before the kill: check it, then start afresh so that
			// every kill lands in a running sweep.
			finished++
			checkSameRun(t, ref, dir, spec)
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			fresh = true
			continue
		case <-time.After(delay):
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := <-done
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			kills++
		} else if err != nil {
			t.Fatalf("run %v: %v\n%s", args, err, stderr.String())
		} else { // it finished just before the kill
			finished++
		}
		fresh = false
		// No file under a final name is ever incomplete; a manifest means a
		// complete run.
		parts := completeParts(t, dir, spec)
		if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
			checkSameRun(t, ref, dir, spec)
		}
		t.Logf("kill %2d after %4.0f ms: %d parts complete", kills, delay.Seconds()*1000, len(parts))
	}
	if out, err := ratesweep("run", specFile, "--out", dir, "--workers", "2", "--resume").CombinedOutput(); err != nil {
		t.Fatalf("final resume: %v\n%s", err, out)
	} else {
		t.Logf("final resume: %s", strings.TrimSpace(string(out)))
	}
	checkSameRun(t, ref, dir, spec)
	t.Logf("%d kills, %d runs finished before their kill", kills, finished)
}

// checkSameRun fails unless dir's Parquet files are byte for byte ref's and
// its manifest lists the same files and checksum.
func checkSameRun(t *testing.T, ref, dir string, spec *sweep.Spec) {
	t.Helper()
	completeParts(t, dir, spec)
	for _, table := range []string{"points", "clients"} {
		want, _ := os.ReadDir(filepath.Join(ref, table))
		got, _ := os.ReadDir(filepath.Join(dir, table))
		if len(got) != len(want) {
			t.Fatalf("%s/: %d files, the uninterrupted run has %d", table, len(got), len(want))
		}
		for i, w := range want {
			if got[i].Name() != w.Name() {
				t.Fatalf("%s/: file %s, the uninterrupted run has %s", table, got[i].Name(), w.Name())
			}
			a, err := os.ReadFile(filepath.Join(ref, table, w.Name()))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, table, w.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Fatalf("%s/%s differs from the uninterrupted run's", table, w.Name())
			}
		}
	}
	mw, mg := readTestManifest(t, ref), readTestManifest(t, dir)
	mw.Finished, mg.Finished = "", ""
	if a, b := fmt.Sprintf("%+v", mw), fmt.Sprintf("%+v", mg); a != b {
		t.Fatalf("manifest differs:\n%s\n%s", a, b)
	}
	if rep, err := sweep.Merge(context.Background(), dir, sweep.MergeOptions{VerifySHA256: true}); err != nil {
		t.Fatalf("merge --sha256: %v %v", err, rep.Problems)
	}
}

func readTestManifest(t *testing.T, dir string) sweep.Manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m sweep.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCrashCompact kills 'merge --compact' of a 4-shard run with SIGKILL at
// 10 random moments (each kill on the directory the previous one left).
// After every kill the run must read as exactly one complete run — the
// files manifest.json lists hold every point once, whether parts or merged
// files — and 'check' against the uninterrupted run must pass; at the end
// 'merge' finishes the compaction and leaves only the merged files.
func TestCrashCompact(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 0))
	bin := buildBinary(t)
	const specFile = "configs/bench.yaml"
	spec, err := sweep.LoadSpec("../../" + specFile)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ratesweep := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "../.."
		return cmd
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := ratesweep(args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ratesweep %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	ref := filepath.Join(tmp, "ref")
	must("run", specFile, "--out", ref, "--quiet")
	sharded := filepath.Join(tmp, "sharded")
	for i := range 4 {
		must("run", specFile, "--out", sharded, "--quiet", "--shard", fmt.Sprintf("%d/4", i))
	}
	fresh := func() string {
		dir := filepath.Join(tmp, fmt.Sprintf("w%d", rng.Int()))
		if out, err := exec.Command("cp", "-a", sharded, dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		return dir
	}
	compact := []string{"--compact", "--compact-rows", "8192"} // 8 merged files a table
	dir := fresh()
	start := time.Now()
	must(append([]string{"merge", dir}, compact...)...)
	full := time.Since(start)
	t.Logf("uninterrupted merge --compact: %.2f s", full.Seconds())

	// SIGTERM stops a compaction promptly: exit 143, one complete run left.
	dir = fresh()
	term := ratesweep(append([]string{"merge", dir, "--quiet"}, compact...)...)
	if err := term.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(full / 2)
	term.Process.Signal(syscall.SIGTERM)
	sent := time.Now()
	if err := term.Wait(); err == nil {
		t.Logf("merge finished before SIGTERM")
	} else if code := term.ProcessState.ExitCode(); code != 143 || time.Since(sent) > 5*time.Second {
		t.Fatalf("merge after SIGTERM: exit %d after %v, want 143 promptly", code, time.Since(sent))
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		// Stopped while it read the shards' rows, before the manifest: the
		// run is as it was, and merge finishes it.
		t.Logf("SIGTERM before the manifest: merging again")
		must(append([]string{"merge", dir, "--quiet"}, compact...)...)
	}
	if out, err := ratesweep("check", "--baseline", ref, dir).CombinedOutput(); err != nil {
		t.Fatalf("check after SIGTERM: %v\n%s", err, out)
	}

	wantRows := spec.Rows()
	dir = fresh()
	kills, finished := 0, 0
	for kills < crashKills(10) {
		cmd := ratesweep(append([]string{"merge", dir, "--quiet"}, compact...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		delay := time.Duration(rng.Int64N(int64(full) * 11 / 10)) // a few land after the switch, or after the end
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("merge: %v\n%s", err, stderr.String())
			}
			finished++
			dir = fresh()
			continue
		case <-time.After(delay):
		}
		cmd.Process.Signal(syscall.SIGKILL)
		if err := <-done; err == nil {
			finished++
		} else {
			kills++
		}
		// One complete run, whatever the moment: the listed files hold
		// every row once, and check agrees with the uninterrupted run.
		files, err := sweep.PartFiles(dir, "points")
		if err != nil {
			t.Fatalf("kill %d after %v: %v", kills, delay, err)
		}
		var rows int64
		for _, f := range files {
			n, err := sweep.VerifyParquet(context.Background(), f)
			if err != nil {
				t.Fatalf("kill %d after %v: %v", kills, delay, err)
			}
			rows += n
		}
		if rows != wantRows {
			t.Fatalf("kill %d after %v: the listed files hold %d rows, want %d (%d files)", kills, delay, rows, wantRows, len(files))
		}
		args := []string{"check", "--baseline", ref, dir}
		if !sweep.RunComplete(dir) { // killed before the combined manifest: still the shards' run
			args = append(args, "--allow-incomplete")
		}
		if out, err := ratesweep(args...).CombinedOutput(); err != nil {
			t.Fatalf("kill %d after %v: check: %v\n%s", kills, delay, err, out)
		}
		t.Logf("kill %2d after %4.0f ms: %d files listed", kills, delay.Seconds()*1000, len(files))
	}
	// merge (without --compact) finishes what the last kill interrupted, or
	// reports the combined run; then a compaction completes.
	must("merge", dir)
	must(append([]string{"merge", dir}, compact...)...)
	for _, table := range []string{"points", "clients"} {
		names, _ := filepath.Glob(filepath.Join(dir, table, "*"))
		for _, n := range names {
			if !strings.HasPrefix(filepath.Base(n), sweep.CompactPrefix) {
				t.Errorf("left after the compaction: %s", n)
			}
		}
	}
	if out, err := ratesweep("check", "--baseline", ref, dir).CombinedOutput(); err != nil || !strings.Contains(string(out), "check ok: 60000 points compared: 60000 identical") {
		t.Fatalf("final check: %v\n%s", err, out)
	}
	t.Logf("%d kills, %d compactions finished before their kill", kills, finished)
}
