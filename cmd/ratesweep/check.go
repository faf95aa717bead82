package main

import (
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/check"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/sweep"
)

// cmdCheck compares a run with a baseline run: exit 0 when every point is
// within tolerance, 1 on a change (or a removed point), 2 on bad usage or
// incompatible inputs (e.g. a different scenario).
func cmdCheck(e *env, args []string) error {
	fs := newFlags(e, "check", "--baseline DIR RUN_DIR",
		"Compare a run with a baseline run, joining points on their parameters. Exit 0 within tolerance, 1 on a change, 2 on bad usage or incompatible inputs.")
	baseline := fs.String("baseline", "", "baseline run directory (required)")
	tolAbs := fs.StringArray("tol-abs", nil, "absolute tolerance METRIC=V, or V for every metric (repeatable)")
	tolRel := fs.StringArray("tol-rel", nil, "relative tolerance METRIC=V, or V for every metric; V is a fraction (0.01) or a percentage (1%) of the baseline (repeatable)")
	alpha := fs.Float64("alpha", check.DefaultAlpha, "significance level for replicated points: Mann–Whitney U with Benjamini–Hochberg over all comparisons")
	allowScenario := fs.Bool("allow-scenario-change", false, "compare even if the scenario's hash differs (reported)")
	failOnAdded := fs.Bool("fail-on-added", false, "fail when the run has points the baseline lacks")
	allowRemoved := fs.Bool("allow-removed", false, "do not fail when baseline points are missing from the run")
	allowIncomplete := fs.Bool("allow-incomplete", false, "compare a baseline or run without manifest.json (killed, or sharded and not merged), or with NULL or NaN metrics")
	update := fs.Bool("update", false, "report the differences, then make the run the new baseline (exit 0)")
	format := fs.String("format", "text", "output format: text, markdown or json")
	maxRows := fs.Int("max-rows", 20, "rows per listing, worst first; the rest are counted (0 = all)")
	rest, err := parseFlags(fs, args, 1)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usagef("check: need the run directory: ratesweep check --baseline DIR RUN_DIR")
	}
	runDir := rest[0]
	if *baseline == "" {
		return usagef("check: --baseline DIR is required")
	}
	if !slices.Contains(check.Formats, *format) {
		return usagef("check: --format must be text, markdown or json, got %s", yamlx.Excerpt(*format))
	}
	if !(*alpha > 0 && *alpha < 1) {
		return usagef("check: --alpha must be between 0 and 1 (exclusive), got %v", *alpha)
	}
	if *maxRows < 0 {
		return usagef("check: --max-rows must be >= 0, got %d", *maxRows)
	}
	opts := check.Options{Alpha: *alpha, AllowScenarioChange: *allowScenario || *update,
		FailOnAdded: *failOnAdded, AllowRemoved: *allowRemoved, AllowIncomplete: *allowIncomplete, MaxRows: *maxRows}
	if err := parseTolerances(&opts, *tolAbs, *tolRel); err != nil {
		return err
	}

	if *update {
		return updateBaseline(e, *baseline, runDir, opts, *format, *maxRows)
	}
	// check streams, but may hold an index of the baseline's keys (16 bytes
	// a point): collecting at 1.5× the live heap instead of 2× keeps its
	// peak well inside bench-check's 500 MB at 10M points.
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	res, err := check.Compare(e.ctx, *baseline, runDir, opts)
	if err != nil {
		return checkInputError(err)
	}
	if err := check.Write(e.stdout, res, *format, *maxRows); err != nil {
		return err
	}
	if res.Failed() {
		return &exitError{exitFailure, fmt.Errorf("check failed: %s", res.Counts())}
	}
	return nil
}

// updateBaseline shows what the run changes (when there is a baseline) and
// then copies the run over the baseline.
func updateBaseline(e *env, baseDir, runDir string, opts check.Options, format string, maxRows int) error {
	if _, err := sweep.PartFiles(baseDir, "points"); err == nil {
		res, err := check.Compare(e.ctx, baseDir, runDir, opts)
		if err != nil {
			return checkInputError(err)
		}
		if format != "json" { // keep stdout one JSON document
			if err := check.Write(e.stdout, res, format, maxRows); err != nil {
				return err
			}
		}
	}
	files, bytes, err := check.UpdateBaseline(e.ctx, runDir, baseDir)
	if err != nil {
		return checkInputError(err)
	}
	msg := fmt.Sprintf("baseline %s updated from %s: %d files, %s", baseDir, runDir, files, humanBytes(float64(bytes)))
	if format == "json" {
		fmt.Fprintf(e.stdout, "{\"updated\": %s, \"from\": %s, \"files\": %d, \"bytes\": %d}\n",
			strconv.Quote(baseDir), strconv.Quote(runDir), files, bytes)
		return nil
	}
	fmt.Fprintln(e.stdout, msg)
	return nil
}

// checkInputError maps unreadable or incompatible inputs to exit 2.
func checkInputError(err error) error {
	var ie *sweep.InputError
	var ce *check.IncompatibleError
	if errors.As(err, &ie) || errors.As(err, &ce) {
		return &badInput{err}
	}
	return err
}

// parseTolerances reads --tol-abs and --tol-rel values: METRIC=V for one
// metric, or a bare V for all. A metric's own value overrides the bare one
// of the same kind.
func parseTolerances(o *check.Options, abs, rel []string) error {
	metrics := check.Metrics()
	perAbs, perRel := map[string]float64{}, map[string]float64{}
	parse := func(flag, arg string, into map[string]float64, all *float64, pct bool) error {
		name, val, hasName := strings.Cut(arg, "=")
		if !hasName {
			name, val = "", arg
		}
		if hasName && !slices.Contains(metrics, name) {
			return usagef("check: --%s %s: unknown metric %s (metrics: %s)", flag, yamlx.Excerpt(arg), yamlx.Excerpt(name), strings.Join(metrics, ", "))
		}
		scale := 1.0
		if s, ok := strings.CutSuffix(val, "%"); ok && pct {
			val, scale = s, 0.01
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			what := "a number >= 0"
			if pct {
				what += " (a fraction, or a percentage like 1%)"
			}
			return usagef("check: --%s %s: want METRIC=V or V with V %s", flag, arg, what)
		}
		if hasName {
			into[name] = v * scale
		} else {
			*all = v * scale
		}
		return nil
	}
	for _, a := range abs {
		if err := parse("tol-abs", a, perAbs, &o.Default.Abs, false); err != nil {
			return err
		}
	}
	for _, r := range rel {
		if err := parse("tol-rel", r, perRel, &o.Default.Rel, true); err != nil {
			return err
		}
	}
	for _, m := range metrics {
		a, hasA := perAbs[m]
		r, hasR := perRel[m]
		if !hasA && !hasR {
			continue
		}
		if !hasA {
			a = o.Default.Abs
		}
		if !hasR {
			r = o.Default.Rel
		}
		if o.Tolerances == nil {
			o.Tolerances = map[string]check.Tolerance{}
		}
		o.Tolerances[m] = check.Tolerance{Abs: a, Rel: r}
	}
	return nil
}
