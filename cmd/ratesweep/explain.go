package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ratesweep/ratesweep/explain"
	"github.com/ratesweep/ratesweep/sweep"
)

// cmdExplain says why a policy of a run cuts each legitimate client's
// requests and admits each abusive client's, and with --vs who is cut under
// one policy and not the other. Exit 2 on bad usage, bad input or a
// combination it does not support.
func cmdExplain(e *env, args []string) error {
	fs := newFlags(e, "explain", "RUN_DIR POLICY [--vs POLICY]",
		"For every legitimate client the policy cuts (and every abusive client it misses), the cause of each such\n"+
			"request, found by re-simulating that client's requests: shared_key (admitted had the key been the client\n"+
			"alone), window_shape (admitted by a sliding log at the same rate and window), burst (admitted at twice the\n"+
			"burst or capacity), else sustained_rate. Writes explain.parquet and explain.md; prints the summary.")
	vs := fs.String("vs", "", "a second policy of the run: who is cut (or missed) under one and not the other, and why")
	out := fs.String("out", "", "output directory (default RUN_DIR/explain)")
	allowIncomplete := fs.Bool("allow-incomplete", false, "read a run without its manifest.json (interrupted or not merged)")
	quiet := fs.BoolP("quiet", "q", false, "print nothing on success")
	rest, err := parseFlags(fs, args, 2)
	if err != nil {
		return err
	}
	if len(rest) != 2 {
		return usagef("explain: need a run directory and a policy label (see ratesweep explain --help)")
	}
	run, err := explain.OpenRun(rest[0], *allowIncomplete)
	if err != nil {
		return explainErr(err)
	}
	labels := []string{rest[1]}
	if *vs != "" {
		labels = append(labels, *vs)
	}
	var results []*explain.Result
	var rows []explain.Row
	for _, l := range labels {
		p, err := run.Policy(l)
		if err != nil {
			return &badInput{fmt.Errorf("explain: %w", err)}
		}
		res, err := run.Explain(p)
		if err != nil {
			return explainErr(err)
		}
		results = append(results, res)
		rows = append(rows, explain.Rows(res)...)
	}
	var md bytes.Buffer
	notes := ""
	if run.Replicates > 1 {
		notes = fmt.Sprintf("Replicate 0 of %d (seed %d).", run.Replicates, run.Seed)
	}
	var second *explain.Result
	if len(results) == 2 {
		second = results[1]
	}
	if err := explain.WriteMarkdown(&md, "Why policies cut and miss: "+run.Workload.Scenario.Name, notes, results[0], second); err != nil {
		return err
	}
	var pq bytes.Buffer
	if err := explain.WriteParquet(&pq, rows); err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join(rest[0], "explain")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"explain.parquet", pq.Bytes()}, {"explain.md", md.Bytes()}} {
		if err := writeReplace(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	if !*quiet {
		e.stdout.Write(md.Bytes())
		fmt.Fprintf(e.stdout, "wrote %s and %s\n", filepath.Join(dir, "explain.parquet"), filepath.Join(dir, "explain.md"))
	}
	return nil
}

// explainErr maps explain's errors to exit codes: a damaged run is a
// failure (1); refused combinations, bad runs and the rest bad input (2).
func explainErr(err error) error {
	var de *sweep.DamagedError
	if errors.As(err, &de) {
		return err
	}
	return &badInput{fmt.Errorf("explain: %w", err)}
}

// writeReplace writes data to path through a temporary file renamed over it.
func writeReplace(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}
