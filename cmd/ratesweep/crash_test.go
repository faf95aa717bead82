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
	for kills < 20 {
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
