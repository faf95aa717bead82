package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
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
	// The default cap (16 MiB) admits the 2 MiB file: it fails for its content.
	code, _, stderr := runCLIEnv(t, nil, "tables", big)
	if code != exitUsage || strings.Contains(stderr, "larger than") {
		t.Fatalf("exit %d, stderr %q: the default cap refused a 2 MiB file", code, stderr)
	}
}

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
