package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// soakLog writes a gzip log of about size bytes of lines to path: a first
// member of 64 MiB of varied lines (the sample a size estimate reads),
// then copies of one member of repeated lines of 64 addresses, 16 MiB each
// packed in some 60 KiB: a 16 GiB log is a file of about 80 MB.
func soakLog(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	var n int64
	for n < 64<<20 {
		k, _ := fmt.Fprintf(zw, "10.%d.%d.%d - - [01/Jul/1995:00:00:01 -0400] \"GET /%016x HTTP/1.0\" 200 %d\n", r.IntN(4), r.IntN(256), r.IntN(256), r.Uint64(), r.IntN(100000))
		n += int64(k)
	}
	zw.Close()
	var m bytes.Buffer
	zw, _ = gzip.NewWriterLevel(&m, gzip.BestCompression)
	var per int64
	for i := 0; per < 16<<20; i++ {
		k, _ := fmt.Fprintf(zw, "10.0.0.%d - - [01/Jul/1995:00:00:02 -0400] \"GET / HTTP/1.0\" 200 1\n", i%64)
		per += int64(k)
	}
	zw.Close()
	for ; n < size; n += per {
		w.Write(m.Bytes())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// soakRun runs the command args in a process of its own (stdin: in, or
// nothing) and returns its exit code, stderr and peak RSS, bytes.
func soakRun(t *testing.T, in io.Reader, args ...string) (int, string, int64) {
	t.Helper()
	js, _ := json.Marshal(args)
	cmd := helperCmd(t, "cli", string(js))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if in != nil {
		stdin, _ := cmd.StdinPipe()
		go func() { io.Copy(stdin, in); stdin.Close() }()
	}
	start := time.Now()
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("%v: exit %d, peak RSS %.0f MiB, %.1f s", args, code, float64(peak)/(1<<20), time.Since(start).Seconds())
	return code, errb.String(), peak
}

// The memory budgets hold for any input (RATESWEEP_SOAK=1, make
// test-adversarial; about a minute): a 16 GiB gzip of many members under
// --max-memory 1536MiB peaks under 1.5 × the budget in init --from-log,
// inspect and run (each exits 2 naming --max-memory), inspect under
// 2.5GiB, whose estimate lets it start, stops reading at the budget, and
// an endless standard input under 512 MiB stays under 800 MB.
func TestAdversarialMemorySoak(t *testing.T) {
	if os.Getenv("RATESWEEP_SOAK") == "" {
		t.Skip("set RATESWEEP_SOAK=1 (make test-adversarial)")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log.gz")
	soakLog(t, log, 16<<30)
	spec := writeFile(t, dir, "s.yaml", "name: s\ntraffic: {log: access.log.gz}\nsweep:\n  - {algorithm: fixed_window, window_s: 60, limit: [10, 100]}\n")
	const budget = 1536 << 20
	for _, c := range []struct {
		args  []string
		limit int64
	}{
		{[]string{"init", "--from-log", log, "--max-memory", "1536MiB", "-q"}, budget},
		{[]string{"inspect", log, "--max-memory", "1536MiB", "-q"}, budget},
		{[]string{"inspect", log, "--max-memory", "2.5GiB", "-q"}, 5 << 29},
		{[]string{"run", spec, "--out", filepath.Join(dir, "run"), "--max-memory", "1536MiB", "--no-output", "-q"}, budget},
	} {
		code, stderr, peak := soakRun(t, nil, c.args...)
		if code != 2 || !strings.Contains(stderr, "--max-memory") || peak > c.limit*3/2 {
			t.Errorf("%v: exit %d, peak RSS %d bytes (budget %d), stderr %q", c.args, code, peak, c.limit, stderr)
		}
	}
	code, stderr, peak := soakRun(t, &endlessLog{}, "inspect", "-", "--max-memory", "512MiB", "-q")
	if code != 2 || !strings.Contains(stderr, "--max-memory") || peak > 800e6 {
		t.Errorf("endless standard input: exit %d, peak RSS %d bytes, stderr %q", code, peak, stderr)
	}
}
