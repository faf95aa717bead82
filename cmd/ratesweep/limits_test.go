//go:build limits

package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/ratesweep/ratesweep/sweep"
)

// Tests of running out of memory and out of disk with the real binary:
// make test-limits (go test -tags limits ./cmd/ratesweep). The disk-full
// test needs root to mount a tmpfs and is skipped otherwise.

func buildLimitsBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ratesweep")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// checkNoStack fails on a Go runtime stack trace or a fatal error.
func checkNoStack(t *testing.T, stderr string) {
	t.Helper()
	for _, bad := range []string{"goroutine ", "fatal error", "panic:", "runtime."} {
		if strings.Contains(stderr, bad) {
			t.Fatalf("stack trace or fatal error (%q) in stderr:\n%s", bad, stderr)
		}
	}
}

// A week of 5,000 clients under a 4 GiB address-space limit
// (prlimit --as; the Go runtime alone reserves about 1.8 GiB of address
// space, so much smaller limits fail at start-up): it either finishes within
// it (streamed client by client, about 70 MB resident) or refuses cleanly;
// it never dies with "fatal error: out of memory". Without streaming its
// per-second arrays alone are 12 GB.
func TestWeekUnderMemoryLimit(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	bin := buildLimitsBinary(t)
	dir := t.TempDir()
	spec := writeSpec(t, dir, "week.yaml", weekSpec("fixed_window"))
	out := filepath.Join(dir, "out")
	cmd := exec.Command("prlimit", "--as=4294967296", bin, "run", spec, "--out", out, "--quiet", "--workers", "2")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	checkNoStack(t, stderr.String())
	var ee *exec.ExitError
	switch {
	case err == nil:
		m := readManifest(t, filepath.Join(out, "manifest.json"))
		// 5,000 clients × 1 request/s for a week, a limit of 30 per 60 s
		// window: 30 of every 60 requests cut.
		if want := int64(5000) * 30 * (604800 / 60); m.FalseCutSum != want {
			t.Fatalf("Σ false cut %d, want %d", m.FalseCutSum, want)
		}
		t.Logf("finished within 4 GiB of address space")
	case errors.As(err, &ee) && ee.ExitCode() == exitUsage && strings.Contains(stderr.String(), "--max-memory"):
		t.Logf("refused cleanly: %s", stderr.String())
	default:
		t.Fatalf("%v: %s", err, stderr.String())
	}
	// The budget follows the limit: 3/4 of 4 GiB.
	b, err := exec.Command("prlimit", "--as=4294967296", bin, "run", "--dry-run", spec).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "(--max-memory 3.0 GiB)") {
		t.Fatalf("dry run under 4 GiB: %v\n%s", err, b)
	}
}

func readManifest(t *testing.T, path string) sweep.Manifest {
	t.Helper()
	var m sweep.Manifest
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A sweep into a tmpfs too small for it: a clear one-line error, exit 1,
// no file under a final name incomplete, no manifest; once space is freed
// (the tmpfs grown), --resume finishes the run with the right checksum.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	bin := buildLimitsBinary(t)
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	out := filepath.Join(mnt, "run")
	spec := "../../configs/bench.yaml" // 60,000 points, about 1.4 MB of Parquet
	cmd := exec.Command(bin, "run", spec, "--out", out, "--quiet")
	b, err := cmd.CombinedOutput()
	stderr := string(b)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailure {
		t.Fatalf("want exit 1, got %v: %s", err, stderr)
	}
	checkNoStack(t, stderr)
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.Contains(stderr, "no space left on device") ||
		!strings.Contains(stderr, "free space, then resume with: ratesweep run") {
		t.Fatalf("want one line naming the full disk, got:\n%s", stderr)
	}
	t.Logf("disk full: %s", strings.TrimSpace(stderr))
	checkFinalFilesComplete(t, out)
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
		t.Fatal("a failed run wrote its manifest")
	}
	// Free space, resume.
	if o, err := exec.Command("mount", "-o", "remount,size=64m", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, o)
	}
	b, err = exec.Command(bin, "run", spec, "--out", out, "--quiet", "--resume").CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v: %s", err, b)
	}
	checkFinalFilesComplete(t, out)
	if m := readManifest(t, filepath.Join(out, "manifest.json")); m.FalseCutSum != 24882395 || m.Rows != 60000 {
		t.Fatalf("resumed run: %d rows, Σ false cut %d; want 60000 and 24882395 (the peers' checksum)", m.Rows, m.FalseCutSum)
	}
}

// checkFinalFilesComplete opens every Parquet file under a final name.
func checkFinalFilesComplete(t *testing.T, run string) {
	t.Helper()
	n := 0
	for _, sub := range []string{"points", "clients"} {
		files, _ := filepath.Glob(filepath.Join(run, sub, "*.parquet"))
		for _, f := range files {
			r, err := file.OpenParquetFile(f, false)
			if err != nil {
				t.Fatalf("incomplete file under a final name: %s: %v", f, err)
			}
			r.Close()
			n++
		}
	}
	t.Logf("%s: %d complete files", run, n)
}
