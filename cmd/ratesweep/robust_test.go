package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLIEnv is runCLI with environment variables.
func runCLIEnv(t testing.TB, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{ctx: context.Background(), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	code := run(e, args)
	return code, out.String(), errb.String()
}

// A scenario, spec or rules file that is a device, a named pipe or too
// large is refused with exit 2 and the file's name, before it is read.
func TestInputFilesBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return writeSpec(t, dir, name, text) }
	fifo := filepath.Join(dir, "pipe.yaml")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("no named pipe here: %v", err)
	}
	sweepPart := "sweep:\n  - algorithm: fixed_window\n    window_s: 60\n    limit: 10\n"
	big := write("big.yaml", "name: big\n# "+strings.Repeat("x", 2<<20)+"\nduration_s: 10\nclients: []\n")
	cases := []struct {
		name string
		vars map[string]string
		args []string
		want string
	}{
		{"scenario /dev/zero", nil, []string{"run", "--dry-run", write("zero.yaml", "name: z\nscenario: /dev/zero\n"+sweepPart)}, "/dev/zero: is not a regular file (a character device)"},
		{"spec /dev/zero", nil, []string{"run", "--dry-run", "/dev/zero"}, "/dev/zero: is not a regular file (a character device)"},
		{"spec fifo", nil, []string{"run", "--dry-run", fifo}, fifo + ": is not a regular file (a named pipe)"},
		{"tables fifo", nil, []string{"tables", fifo}, "a named pipe"},
		{"rules fifo", nil, []string{"inspect", "--rules", fifo, "../../configs/examples/logs/antlr_org_20030902/access.log.gz"}, fifo + ": is not a regular file (a named pipe)"},
		{"spec too large", map[string]string{"RATESWEEP_MAX_INPUT": "1MiB"}, []string{"run", "--dry-run", big}, "larger than 1.0 MiB"},
		{"bad cap", map[string]string{"RATESWEEP_MAX_INPUT": "lots"}, []string{"version"}, "RATESWEEP_MAX_INPUT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLIEnv(t, c.vars, c.args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line with %q", code, stderr, c.want)
			}
		})
	}
	// A spec on standard input that never ends (cat /dev/zero | ratesweep run -).
	var errb bytes.Buffer
	e := &env{ctx: context.Background(), stdout: &bytes.Buffer{}, stderr: &errb, stdin: zeros{},
		getenv: func(k string) string { return map[string]string{"RATESWEEP_MAX_INPUT": "1MiB"}[k] }}
	if code := run(e, []string{"run", "-", "--dry-run"}); code != exitUsage || !strings.Contains(errb.String(), "standard input is larger than 1.0 MiB") {
		t.Fatalf("endless stdin: exit %d, %q", code, errb.String())
	}
	// The default cap (16 MiB) admits the 2 MiB file: it fails for its content.
	code, _, stderr := runCLIEnv(t, nil, "tables", big)
	if code != exitUsage || strings.Contains(stderr, "larger than") {
		t.Fatalf("exit %d, stderr %q: the default cap refused a 2 MiB file", code, stderr)
	}
}

// zeros is an endless reader of zero bytes, like /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// panicWriter panics on every write, standing in for any bug in a command.
type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("boom\nsecond line") }

// A panic anywhere in a command is one line on stderr, exit 1, and a
// request to report it; RATESWEEP_TRACE=1 adds the stack.
func TestPanicIsOneLine(t *testing.T) {
	for _, trace := range []string{"", "1"} {
		var errb bytes.Buffer
		e := &env{ctx: context.Background(), stdout: panicWriter{}, stderr: &errb,
			getenv: func(k string) string {
				if k == "RATESWEEP_TRACE" {
					return trace
				}
				return ""
			}}
		code := run(e, []string{"version"})
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if code != exitFailure || !strings.HasPrefix(lines[0], "ratesweep: internal error: boom second line.") ||
			!strings.Contains(lines[0], "please report it") {
			t.Fatalf("exit %d, stderr %q", code, errb.String())
		}
		if (trace == "") != (len(lines) == 1) || (trace != "" && !strings.Contains(errb.String(), "goroutine")) {
			t.Fatalf("RATESWEEP_TRACE=%q: %d lines: %q", trace, len(lines), errb.String())
		}
	}
}

// writeSpec writes a spec file into dir.
func writeSpec(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// weekSpec is a week of 5,000 clients (604,800 s): 12 GB of
// per-second arrays if they were all kept.
func weekSpec(algorithm string) string {
	var b strings.Builder
	b.WriteString("name: week\nscenario:\n  name: week of 5000 clients\n  duration_s: 604800\n  clients:\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "    - {name: c%d, class: legit, segments: [[0, 604800, 1]]}\n", i)
	}
	fmt.Fprintf(&b, "sweep:\n  - algorithm: %s\n    window_s: 60\n    limit: 30\n", algorithm)
	return b.String()
}

// Limits count what they cost and refuse up front (exit 2, nothing
// written), naming the figure and what drives it.
func TestLimitsRefuseUpFront(t *testing.T) {
	dir := t.TempDir()
	lesson, _ := filepath.Abs("../../configs/lesson.yaml")
	reps := writeSpec(t, dir, "reps.yaml", "name: reps\nscenario: "+lesson+"\nreplicates: 100000\nseed: 1\nsweep:\n"+
		"  - algorithm: fixed_window\n    window_s: 60\n    limit: {from: 1, to: 2000, step: 1}\n")
	flood := writeSpec(t, dir, "flood.yaml", `name: flood
scenario:
  name: flood
  duration_s: 1
  clients:
    - {name: flood, class: abusive, stage: none, segments: [[0, 1, 1000000000]]}
sweep:
  - algorithm: fixed_window
    window_s: 1
    limit: 10
    key: global
`)
	small := writeSpec(t, dir, "small.yaml", "name: small\nscenario: "+lesson+"\nsweep:\n"+
		"  - algorithm: fixed_window\n    window_s: 60\n    limit: {from: 1, to: 2000, step: 1}\n")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		// 2,000 points pass --max-points 50 M, 200 M rows do not.
		{"replicates count as rows", []string{"run", reps}, []string{"2000 points × 100000 replicates = 200000000 points rows", "--max-points 50000000"}},
		// Raising --max-points, the memory of a part of 1,024 points × 100,000 replicates refuses.
		{"part buffers", []string{"run", reps, "--max-points", "1000000000", "--max-memory", "8GiB"}, []string{"more than --max-memory 8.0 GiB", "part buffers"}},
		// One client at 10^9 requests/s under key: global: 10^9 requests of 32 bytes.
		{"event-mode flood", []string{"run", flood, "--max-memory", "8GiB"}, []string{"more than --max-memory 8.0 GiB", "merged request stream", "1000000000 requests"}},
		{"max-output", []string{"run", small, "--max-output", "10KB"}, []string{"KiB of Parquet (2000 points rows, 14000 clients rows)", "more than --max-output 9.8 KiB"}},
		{"bad size", []string{"run", small, "--max-memory", "lots"}, []string{"--max-memory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(c.name, " ", "-"))
			code, _, stderr := runCLI(t, append(c.args, "--out", out)...)
			for _, w := range c.want {
				if code != exitUsage || !strings.Contains(stderr, w) {
					t.Fatalf("exit %d, stderr %q; want exit 2 and %q", code, stderr, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatalf("a refused run created %s", out)
			}
		})
	}
	// The dry run says the same before anything runs.
	code, stdout, _ := runCLI(t, "run", "--dry-run", flood, "--max-memory", "8GiB")
	if code != 0 || !strings.Contains(stdout, "memory      about 29.") || !strings.Contains(stdout, "run would refuse it: the run needs about") {
		t.Fatalf("dry run: exit %d\n%s", code, stdout)
	}
}

// The week of 5,000 clients is streamed client by client: the dry run's
// estimate stays small instead of the 12 GB of per-second arrays.
func TestWeekIsStreamed(t *testing.T) {
	spec := writeSpec(t, t.TempDir(), "week.yaml", weekSpec("sliding_window"))
	code, stdout, stderr := runCLI(t, "run", "--dry-run", "--workers", "2", spec)
	if code != 0 || !strings.Contains(stdout, "the scenario streamed client by client") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	var v float64
	var unit string
	i := strings.Index(stdout, "memory      about ")
	if _, err := fmt.Sscanf(stdout[i+len("memory      about "):], "%f %s", &v, &unit); err != nil || unit != "MiB" || v > 200 {
		t.Fatalf("estimate %v %s (%v):\n%s", v, unit, err, stdout)
	}
}
