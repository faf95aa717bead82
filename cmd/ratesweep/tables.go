package main

import (
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
	_, err := e.stdout.Write([]byte("ratesweep " + sweep.Version + "\n"))
	return err
}
