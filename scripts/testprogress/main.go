// Command testprogress runs `go test -json` and prints a line per package as
// it finishes ("ok  PKG  12.3s"), a "still running" line for a package that
// has printed nothing for -quiet (default 60 s), naming its running tests,
// and the whole output of every failing test and package. It exits with go
// test's status, and 1 when a package failed or did not build although go
// test said otherwise. Its own flags come first; the rest are go test's.
//
//	go run ./scripts/testprogress [-go go] [-quiet 60s] [go test flags] PACKAGES
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	goCmd, quiet, testArgs, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
	cmd := exec.Command(goCmd, append([]string{"test", "-json"}, testArgs...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fatal(err)
	}
	if err := cmd.Start(); err != nil {
		fatal(err)
	}
	p := newProgress(os.Stdout, quiet)
	done := make(chan struct{})
	go p.watch(done)
	readErr := p.read(out)
	close(done)
	waitErr := cmd.Wait()
	if readErr != nil {
		fatal(readErr)
	}
	failed := p.finish()
	var exit *exec.ExitError
	switch {
	case errors.As(waitErr, &exit):
		os.Exit(exit.ExitCode())
	case waitErr != nil:
		fatal(waitErr)
	case failed:
		os.Exit(1)
	}
}

// parseArgs reads testprogress's own flags (-go, -quiet), which come
// first; the arguments after them are go test's.
func parseArgs(args []string) (goCmd string, quiet time.Duration, testArgs []string, err error) {
	fs := flag.NewFlagSet("testprogress", flag.ContinueOnError)
	fs.StringVar(&goCmd, "go", "go", "the go command")
	fs.DurationVar(&quiet, "quiet", 60*time.Second, "print a still running line after this long without output")
	n := 0
	for n < len(args) {
		name, _, _ := strings.Cut(strings.TrimLeft(args[n], "-"), "=")
		if !strings.HasPrefix(args[n], "-") || (name != "go" && name != "quiet") {
			break
		}
		if strings.Contains(args[n], "=") {
			n++
		} else {
			n += 2
		}
	}
	if n > len(args) {
		return "", 0, nil, fmt.Errorf("%s needs a value", args[len(args)-1])
	}
	if err := fs.Parse(args[:n]); err != nil {
		return "", 0, nil, err
	}
	return goCmd, quiet, args[n:], nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "testprogress:", err)
	os.Exit(1)
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output and build-fail
	Test       string
	Elapsed    float64 // seconds
	Output     string
}

// pkgState is what is known of one package while its tests run.
type pkgState struct {
	start, last time.Time // first and latest event, local clock
	reported    time.Time // latest still running line
	output      []string  // package-level output
	tests       map[string]*testState
}

type testState struct {
	start  time.Time
	output []string
}

// progress holds every package seen; mu guards it against the watcher.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	quiet  time.Duration
	pkgs   map[string]*pkgState
	builds map[string][]string // build output per import path
	failed bool
}

func newProgress(w io.Writer, quiet time.Duration) *progress {
	return &progress{w: w, quiet: quiet, pkgs: map[string]*pkgState{}, builds: map[string][]string{}}
}

// read consumes the event stream until it ends; lines that are not JSON are
// passed through.
func (p *progress) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			p.mu.Lock()
			fmt.Fprintln(p.w, string(line))
			p.mu.Unlock()
			continue
		}
		p.mu.Lock()
		p.handle(e, time.Now())
		p.mu.Unlock()
	}
	return sc.Err()
}

func (p *progress) handle(e event, now time.Time) {
	switch e.Action {
	case "build-output":
		p.builds[e.ImportPath] = append(p.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		p.failed = true
		fmt.Fprint(p.w, strings.Join(p.builds[e.ImportPath], ""))
		delete(p.builds, e.ImportPath)
		return
	}
	if e.Package == "" {
		return
	}
	s := p.pkgs[e.Package]
	if s == nil {
		s = &pkgState{start: now, tests: map[string]*testState{}}
		p.pkgs[e.Package] = s
	}
	s.last = now
	if e.Test != "" {
		p.handleTest(s, e, now)
		return
	}
	switch e.Action {
	case "output":
		s.output = append(s.output, e.Output)
	case "pass":
		if cached(s.output) {
			fmt.Fprintf(p.w, "ok    %s  (cached)\n", e.Package)
		} else {
			fmt.Fprintf(p.w, "ok    %s  %.1fs\n", e.Package, e.Elapsed)
		}
		delete(p.pkgs, e.Package)
	case "skip":
		delete(p.pkgs, e.Package)
	case "fail":
		p.failed = true
		for _, name := range sortedTests(s) {
			fmt.Fprint(p.w, strings.Join(s.tests[name].output, ""))
		}
		fmt.Fprint(p.w, strings.Join(s.output, ""))
		fmt.Fprintf(p.w, "FAIL  %s  %.1fs\n", e.Package, e.Elapsed)
		delete(p.pkgs, e.Package)
	}
}

func (p *progress) handleTest(s *pkgState, e event, now time.Time) {
	t := s.tests[e.Test]
	if t == nil {
		t = &testState{start: now}
		s.tests[e.Test] = t
	}
	switch e.Action {
	case "output":
		t.output = append(t.output, e.Output)
	case "pass", "skip":
		delete(s.tests, e.Test)
	case "fail":
		fmt.Fprint(p.w, strings.Join(t.output, ""))
		delete(s.tests, e.Test)
	}
}

// watch prints a still running line for each package silent for p.quiet,
// once per p.quiet of silence, until done is closed.
func (p *progress) watch(done <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			p.mu.Lock()
			p.report(now)
			p.mu.Unlock()
		}
	}
}

func (p *progress) report(now time.Time) {
	names := make([]string, 0, len(p.pkgs))
	for name := range p.pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := p.pkgs[name]
		if now.Sub(s.last) < p.quiet || now.Sub(s.reported) < p.quiet {
			continue
		}
		s.reported = now
		var running []string
		for _, test := range sortedTests(s) {
			running = append(running, fmt.Sprintf("%s %.0f s", test, now.Sub(s.tests[test].start).Seconds()))
		}
		line := fmt.Sprintf("still running: %s (%.0f s", name, now.Sub(s.start).Seconds())
		if len(running) > 0 {
			line += "; " + strings.Join(running, ", ")
		}
		fmt.Fprintln(p.w, line+")")
	}
}

// finish reports packages whose events ended without a result and says
// whether anything failed.
func (p *progress) finish() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, s := range p.pkgs {
		p.failed = true
		fmt.Fprint(p.w, strings.Join(s.output, ""))
		fmt.Fprintf(p.w, "FAIL  %s  (no result)\n", name)
	}
	return p.failed
}

// cached reports whether a package's output says its result was cached.
func cached(output []string) bool {
	for _, line := range output {
		if strings.HasPrefix(line, "ok  ") && strings.HasSuffix(strings.TrimSpace(line), "(cached)") {
			return true
		}
	}
	return false
}

// sortedTests returns the names of a package's running tests, parents
// before their subtests.
func sortedTests(s *pkgState) []string {
	names := make([]string, 0, len(s.tests))
	for name := range s.tests {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
