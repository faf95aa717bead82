package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// allOfGrid is a spec of one all_of entry of four components, each with
// two axes of 100 values: 2 × 10^16 points.
const allOfGrid = `name: big
scenario:
  name: s
  duration_s: 60
  clients:
    - {name: a, class: legit, segments: [[0, 60, 1]]}
sweep:
  - rejected_counts: [all, none]
    all_of:
      - {algorithm: sliding_window, window_s: {from: 1, to: 100, count: 100}, limit: {from: 1, to: 100, count: 100}}
      - {algorithm: sliding_window, window_s: {from: 1, to: 100, count: 100}, limit: {from: 1, to: 100, count: 100}}
      - {algorithm: sliding_window, window_s: {from: 1, to: 100, count: 100}, limit: {from: 1, to: 100, count: 100}}
      - {algorithm: sliding_window, window_s: {from: 1, to: 100, count: 100}, limit: {from: 1, to: 100, count: 100}}
`

// An all_of grid of 2 × 10^16 points is counted before anything is
// allocated: run and run --dry-run exit 2 at once naming --max-points
// (they passed 6 GB listing its parts), and raising --max-points past
// what any run takes does not let it through.
func TestAdversarialAllOfGridCounted(t *testing.T) {
	spec := writeFile(t, t.TempDir(), "big.yaml", allOfGrid)
	out := t.TempDir()
	for _, args := range [][]string{
		{"run", spec, "--dry-run"},
		{"run", spec, "--out", out},
		{"run", spec, "--dry-run", "--shard", "0/2"},
		{"run", spec, "--dry-run", "--max-points", "100000000000000000"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "20000000000000000 points rows") || !strings.Contains(stderr, "--max-points") || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming --max-points", args, code, stderr)
		}
	}
}

// endlessLog is a Common Log Format stream over 16 addresses, 64 lines a
// second, generated as it is read: endless, or of lines lines when that is
// not 0.
type endlessLog struct {
	lines int
	line  []byte
	n     int
	off   int
	stamp string
}

func (r *endlessLog) Read(p []byte) (int, error) {
	k := 0
	for k < len(p) {
		if r.off == len(r.line) {
			if r.lines > 0 && r.n == r.lines {
				if k == 0 {
					return 0, io.EOF
				}
				return k, nil
			}
			if r.n%64 == 0 {
				r.stamp = time.Unix(804571201+int64(r.n/64), 0).UTC().Format("02/Jan/2006:15:04:05 -0700")
			}
			r.line = fmt.Appendf(r.line[:0], "10.0.0.%d - - [%s] \"GET /a HTTP/1.0\" 200 1\n", r.n%16, r.stamp)
			r.n, r.off = r.n+1, 0
		}
		c := copy(p[k:], r.line[r.off:])
		k, r.off = k+c, r.off+c
	}
	return k, nil
}

// manyMembersGzip is a gzip log of members copies of one member of lines
// lines of 16 addresses (a log of many members, as cat a.gz b.gz or log
// rotation make, packing each line in a few bytes).
func manyMembersGzip(t testing.TB, members, lines int) []byte {
	t.Helper()
	var m bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&m, gzip.BestCompression)
	for i := range lines {
		fmt.Fprintf(zw, "10.0.0.%d - - [01/Jul/1995:00:00:01 -0400] \"GET / HTTP/1.0\" 200 1\n", i%16)
	}
	zw.Close()
	return bytes.Repeat(m.Bytes(), members)
}

// keepMemoryLimit restores the process's memory limit after a test of a
// command that sets it (debug.SetMemoryLimit).
func keepMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
}

// inspect - reads standard input within --max-memory: a stream of 4
// million lines (an endless one alike, in the soak test) stops at the
// budget with exit 2 naming it and the flag (an endless one grew past
// 3 GB before).
func TestAdversarialStdinWithinBudget(t *testing.T) {
	keepMemoryLimit(t)
	var out, errb bytes.Buffer
	e := &env{ctx: context.Background(), stdout: &out, stderr: &errb, stdin: &endlessLog{lines: 4_000_000}, getenv: func(string) string { return "" }}
	code := run(e, []string{"inspect", "--max-memory", "80MiB", "-", "-q"})
	if code != 2 || !strings.Contains(errb.String(), "inspect: (stdin): ") || !strings.Contains(errb.String(), "more than --max-memory 80.0 MiB") ||
		!strings.Contains(errb.String(), "raise --max-memory") || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// init --from-log takes --max-memory and counts what it reads: a gzip of
// 24 members holding 1.2 million lines (300 KB) stops at the budget with
// exit 2 naming it; within the budget the spec is written.
func TestAdversarialInitFromLogBudget(t *testing.T) {
	keepMemoryLimit(t)
	dir := t.TempDir()
	log := writeFile(t, dir, "access.log.gz", string(manyMembersGzip(t, 24, 50_000)))
	code, stdout, stderr := runCLI(t, "init", "--from-log", log, "--max-memory", "80MiB")
	if code != 2 || !strings.Contains(stderr, "init: "+log+": ") || !strings.Contains(stderr, "decompressed from gzip") || !strings.Contains(stderr, "raise --max-memory") || stdout != "" {
		t.Errorf("over budget: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "init", "--from-log", log, "--max-memory", "1GiB", "-q")
	if code != 0 || !strings.Contains(stdout, "traffic:") {
		t.Errorf("within budget: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "init", "--max-memory", "1GiB"); code != 2 || !strings.Contains(stderr, "--from-log") {
		t.Errorf("--max-memory without --from-log: exit %d, stderr %q", code, stderr)
	}
}

// run with log: - stops before reading anything (it read standard input
// whole, past 2 GB, before it said a sweep needs a file).
func TestAdversarialRunLogStdin(t *testing.T) {
	keepMemoryLimit(t)
	spec := writeFile(t, t.TempDir(), "s.yaml", "name: s\ntraffic: {log: \"-\"}\nsweep:\n  - {algorithm: fixed_window, window_s: 60, limit: [10]}\n")
	var out, errb bytes.Buffer
	e := &env{ctx: context.Background(), stdout: &out, stderr: &errb, stdin: &endlessLog{}, getenv: func(string) string { return "" }}
	done := make(chan int)
	go func() {
		done <- run(e, []string{"run", spec, "--out", filepath.Join(t.TempDir(), "o"), "--max-memory", "512MiB", "-q"})
	}()
	select {
	case code := <-done:
		if code != 2 || !strings.Contains(errb.String(), "a sweep needs the log as a file") {
			t.Errorf("exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run with log: - still reading after 20 s")
	}
}
