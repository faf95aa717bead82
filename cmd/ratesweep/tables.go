package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/report"
	"github.com/ratesweep/ratesweep/sweep"
)

func cmdTables(e *env, args []string) error {
	fs := newFlags(e, "tables", "[SCENARIO.yaml]", "Print the lesson's Tables 1–3 for a scenario (default: the lesson's).")
	rest, err := parseFlags(fs, args, 1)
	if err != nil {
		return err
	}
	path := ""
	if len(rest) == 1 {
		path = rest[0]
	}
	sc, err := sweep.LoadScenario(path)
	if err != nil {
		return err
	}
	load := model.NewWorkload
	if sweep.ShouldStream(sc, sweep.DefaultMaxMemory()) {
		load = model.NewStreamedWorkload // a long scenario, client by client
	}
	w, err := load(sc)
	if err != nil {
		return &badInput{err}
	}
	return report.WriteLessonText(e.stdout, model.ComputeLesson(w))
}

func cmdVersion(e *env, args []string) error {
	if _, err := parseFlags(newFlags(e, "version", "", "Print the version."), args, 0); err != nil {
		return err
	}
	return printVersion(e.stdout)
}

// printVersion prints the version, the commit (with "(modified)" for a
// dirty tree) and the Go toolchain.
func printVersion(w io.Writer) error {
	commit := sweep.Commit
	switch {
	case commit == "":
		commit = "unknown (built without VCS information; build with make)"
	case sweep.Dirty:
		commit += " (modified)"
	}
	_, err := fmt.Fprintf(w, "ratesweep %s\ncommit    %s\ngo        %s %s/%s\n",
		sweep.Version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}
