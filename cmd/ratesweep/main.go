// Command ratesweep sweeps rate-limit policies over traffic models and real
// logs, writes every outcome to Parquet, and reports the trade-off between
// abusive requests missed and legitimate requests falsely cut.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/sweep"
	"github.com/spf13/pflag"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the job or the check failed
	exitUsage   = 2 // bad usage or bad input
)

// usageError is bad usage of the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitError carries an explicit exit code (e.g. 130 after Ctrl-C).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// badInput marks an error as bad input (exit 2).
type badInput struct{ err error }

func (e *badInput) Error() string { return e.err.Error() }
func (e *badInput) Unwrap() error { return e.err }

type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer // escaped once a command runs (escapeWriter)
	// term is stderr unescaped, for the progress bar's own control
	// sequences (it writes no input).
	term   io.Writer
	stdin  io.Reader // nil: none
	getenv func(string) string
	signal func() string // the signal that cancelled ctx ("interrupt", "terminated"), or ""
	// flags are the command's flags once it registered them (help, completion).
	flags *pflag.FlagSet
}

// progressOut is where the progress bar writes: stderr unescaped.
func (e *env) progressOut() io.Writer {
	if e.term != nil {
		return e.term
	}
	return e.stderr
}

type command struct {
	name, args, short string
	run               func(e *env, args []string) error
}

func commands() []command {
	return []command{
		{"init", "[--from-log LOG]", "write a commented starter spec (from a log: grid ranges from its profile)", cmdInit},
		{"run", "[SPEC.yaml | -]", "run a sweep (default: the embedded default spec) and write Parquet", cmdRun},
		{"merge", "RUN_DIR", "check that every shard finished and combine their manifests (--compact: fewer files)", cmdMerge},
		{"report", "[RUN_DIR]", "tables and trade-off plots from a run directory", cmdReport},
		{"check", "--baseline DIR RUN_DIR", "compare a run with a baseline run (exit 1 on a regression)", cmdCheck},
		{"recommend", "RUN_DIR...", "choose the policy that best meets bounds on false cuts and missed abuse (--max-false-cut ...)", cmdRecommend},
		{"explain", "RUN_DIR POLICY", "why a policy cuts each legitimate client (shared key, window shape, burst, rate); --vs: against another", cmdExplain},
		{"export", "--to TARGET POLICY", "write a policy in nginx, HAProxy, envoy, Kong, Traefik, Go or Redis configuration", cmdExport},
		{"shadow", "LOG POLICY", "compare the decisions an nginx dry run, HAProxy or envoy logged with the model's", cmdShadow},
		{"inspect", "LOG | --spec SPEC", "profile an access log (requests, keys, peak rates) to help choose a grid", cmdInspect},
		{"tables", "[SCENARIO.yaml]", "print the lesson's tables (default: the lesson's scenario)", cmdTables},
		{"version", "", "print the version", cmdVersion},
		{"schema", "[spec | scenario]", "print the JSON Schema of specs or scenarios (for editors)", cmdSchema},
		{"completion", "bash | zsh | fish", "print a shell completion script", cmdCompletion},
	}
}

// stopGrace is how long a command may take to stop after SIGINT or
// SIGTERM cancelled its context before it is ended at once: every file it
// writes is complete or a temporary, so a run resumes either way.
const stopGrace = 900 * time.Millisecond

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value
	got.Store("")
	go func() {
		s := <-sigs
		got.Store(s.String())
		cancel() // stop cleanly; a second signal, or stopGrace, exits at once
		code, word := 130, "interrupted"
		if s == syscall.SIGTERM {
			code, word = 143, "terminated"
		}
		select {
		case s2 := <-sigs:
			code = 130
			if s2 == syscall.SIGTERM {
				code = 143
			}
		case <-time.After(stopGrace):
			fmt.Fprintf(os.Stderr, "ratesweep: %s: the command did not stop within %v, so it ends now; a run keeps its completed parts (finish it with ratesweep run --resume)\n", word, stopGrace)
		}
		os.Exit(code)
	}()
	e := &env{ctx: ctx, stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin, getenv: os.Getenv,
		signal: func() string { return got.Load().(string) }}
	stop := startProfiles(os.Getenv)
	code := run(e, os.Args[1:])
	stop()
	cancel()
	os.Exit(code)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "ratesweep chooses a rate-limit policy from evidence: caught, missed and falsely cut requests.\n\n")
	fmt.Fprintf(w, "Usage:\n")
	rows := append(commands(), command{name: "--version", short: "print the version and the commit it was built from"})
	nw, aw := 0, 0
	for _, c := range rows {
		nw, aw = max(nw, len(c.name)), max(aw, len(c.args))
	}
	for _, c := range rows {
		fmt.Fprintf(w, "  ratesweep %-*s %-*s  %s\n", nw, c.name, aw, c.args, c.short)
	}
	fmt.Fprintf(w, "\nExamples:\n")
	for _, l := range topExamples {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "\nRun 'ratesweep COMMAND --help' for a command's flags and examples.\n")
}

// run executes one command line and returns the exit code. A panic (a bug:
// no input may cause one) becomes a one-line error and exit 1.
func run(e *env, args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			reportPanic(e, r, debug.Stack())
			code = exitFailure
		}
	}()
	// The size cap of spec, scenario and rules files (0: the default).
	maxInput := int64(0)
	if v := e.getenv("RATESWEEP_MAX_INPUT"); v != "" {
		n, err := yamlx.ParseBytes(v)
		if err != nil || n <= 0 {
			fmt.Fprintf(e.stderr, "ratesweep: RATESWEEP_MAX_INPUT=%q is not a size (e.g. 64MiB)\n", v)
			return exitUsage
		}
		maxInput = n
	}
	yamlx.SetMaxFileBytes(maxInput)
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	if name == "help" && len(args) == 2 {
		return run(e, []string{args[1], "--help"}) // ratesweep help run
	}
	if name == "-h" || name == "--help" || name == "help" {
		usage(e.stdout)
		return exitOK
	}
	if name == "--version" || name == "-V" {
		return exitCode(e, printVersion(e.stdout))
	}
	for _, c := range commands() {
		if c.name == name {
			// Input echoed (names, keys, paths in warnings) must not drive
			// the terminal.
			e.term = e.stderr
			e.stdout, e.stderr = escapeWriter{e.stdout}, escapeWriter{e.stderr}
			return exitCode(e, c.run(e, args[1:]))
		}
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	hint := ""
	if s := yamlx.Suggest(name, names); s != "" {
		hint = fmt.Sprintf("; did you mean %q?", s)
	} else if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || name == "-" {
		hint = fmt.Sprintf("; to run a spec: ratesweep run %s", name)
	}
	fmt.Fprintf(e.stderr, "ratesweep: unknown command %q%s\n\n", name, hint)
	usage(e.stderr)
	return exitUsage
}

func exitCode(e *env, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	var pe *sweep.PanicError
	if errors.As(err, &pe) {
		reportPanic(e, pe.Value, pe.Stack)
		return exitFailure
	}
	// An error may quote a name or a token of the input: escaped like stdout.
	stderr := escapeWriter{e.stderr}
	var all *yamlx.Errors
	if errors.As(err, &all) {
		for _, l := range strings.Split(all.Error(), "\n") {
			fmt.Fprintf(stderr, "ratesweep: %s\n", l)
		}
	} else {
		fmt.Fprintf(stderr, "ratesweep: %v\n", err)
	}
	var ee *exitError
	var ue *usageError
	var ye *yamlx.Error
	var bi *badInput
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue), errors.As(err, &ye), errors.As(err, &bi):
		return exitUsage
	}
	return exitFailure
}

// reportPanic prints a panic (a bug: no input may cause one) as one line
// asking for a report; RATESWEEP_TRACE=1 adds the stack.
func reportPanic(e *env, v any, stack []byte) {
	msg := strings.Join(strings.Fields(fmt.Sprint(v)), " ")
	fmt.Fprintf(e.stderr, "ratesweep: internal error: %s. This is a bug in ratesweep: please report it with the command line and its input files (RATESWEEP_TRACE=1 prints the stack)\n", msg)
	if e.getenv("RATESWEEP_TRACE") != "" {
		e.stderr.Write(stack)
	}
}

// newFlags returns a flag set for a command whose errors are usage errors;
// --help prints the command's help (usage, examples, flags) to stdout.
func newFlags(e *env, name, args, short string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseFlags reports errors
	// pflag calls Usage for --help only (ContinueOnError).
	fs.Usage = func() { writeHelp(e.stdout, fs, name, args, short) }
	e.flags = fs
	return fs
}

func parseFlags(fs *pflag.FlagSet, args []string, maxArgs int) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, err
		}
		return nil, usagef("%s: %v (see ratesweep %s --help)", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > maxArgs {
		return nil, usagef("%s: too many arguments: %v", fs.Name(), fs.Args()[maxArgs:])
	}
	return fs.Args(), nil
}
