package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/recommend"
	"github.com/ratesweep/ratesweep/sweep"
)

// cmdRecommend chooses the policy that best meets constraints from one or
// more run directories. Exit 1 when no policy meets them (the nearest miss
// is named), 2 on bad usage or input.
func cmdRecommend(e *env, args []string) error {
	fs := newFlags(e, "recommend", "RUN_DIR... --max-false-cut X [--max-missed Y | --min-caught Z]",
		"Choose the policy that meets the constraints best, per algorithm and overall, from runs' Parquet output.\n"+
			"Bounds are percentages (1%) or request counts (100). With several runs (days of logs, scenarios), the\n"+
			"choice is the best in the worst run, with each run's regret. Exit 1 when nothing meets the constraints.")
	maxFalseCut := fs.String("max-false-cut", "", "most legitimate requests cut, in total: a percentage (1%) or a count")
	maxMissed := fs.String("max-missed", "", "most abusive requests admitted: a percentage or a count")
	minCaught := fs.String("min-caught", "", "fewest abusive requests cut: a percentage or a count")
	maxClient := fs.String("max-client-cut", "", "most requests cut from any one legitimate client: a percentage of its own or a count")
	maxCost := fs.String("max-false-cut-cost", "", "most cost units of legitimate requests cut (runs whose requests carry costs): a percentage of the legitimate cost or a count")
	maxBlocked := fs.String("max-legit-blocked-s", "", "most seconds legitimate clients spend blocked by a penalty box (block_s), summed over them")
	maxAmp := fs.Float64("max-amplification", 0, "most legitimate attempts per intended request, retries included (runs whose clients react; 0: no bound)")
	maxDelay := fs.String("max-legit-delay-p99", "", "most added latency, seconds, of the 99th percentile of legitimate requests eventually served (runs whose clients react)")
	cliff := fs.Float64("cliff", 5, "percentage points one grid step may move legit_cut_pct or missed_pct before the choice is flagged as on a cliff")
	format := fs.String("format", "text", "output format: text, markdown or json")
	allowIncomplete := fs.Bool("allow-incomplete", false, "read runs without manifest.json, or with NULL or NaN metrics, instead of refusing them")
	rest, err := parseFlags(fs, args, 1<<20)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return usagef("recommend: need at least one run directory")
	}
	if *maxMissed != "" && *minCaught != "" {
		return usagef("recommend: give --max-missed or --min-caught, not both")
	}
	if *format != "text" && *format != "markdown" && *format != "json" {
		return usagef("recommend: --format must be text, markdown or json, got %s", yamlx.Excerpt(*format))
	}
	if !(*cliff > 0) || math.IsInf(*cliff, 0) {
		return usagef("recommend: --cliff must be a positive number of percentage points, got %v", *cliff)
	}
	o := recommend.Options{CliffPP: *cliff, AllowIncomplete: *allowIncomplete}
	for _, b := range []struct {
		flag, v string
		dst     **recommend.Bound
	}{{"max-false-cut", *maxFalseCut, &o.MaxFalseCut}, {"max-missed", *maxMissed, &o.MaxMissed},
		{"min-caught", *minCaught, &o.MinCaught}, {"max-client-cut", *maxClient, &o.MaxClientCut},
		{"max-false-cut-cost", *maxCost, &o.MaxFalseCutCost}} {
		if b.v == "" {
			continue
		}
		v, err := recommend.ParseBound(b.v)
		if err != nil {
			return usagef("recommend: --%s: %v", b.flag, err)
		}
		*b.dst = &v
	}
	if *maxBlocked != "" {
		v, err := recommend.ParseSeconds(*maxBlocked)
		if err != nil {
			return usagef("recommend: --max-legit-blocked-s: %v", err)
		}
		o.MaxLegitBlockedS = &v
	}
	if *maxAmp != 0 {
		if !(*maxAmp >= 1) || math.IsInf(*maxAmp, 0) {
			return usagef("recommend: --max-amplification must be a number >= 1 (attempts per intended request), got %v", *maxAmp)
		}
		o.MaxAmplification = maxAmp
	}
	if *maxDelay != "" {
		v, err := strconv.ParseFloat(strings.TrimSuffix(*maxDelay, "s"), 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) {
			return usagef("recommend: --max-legit-delay-p99 must be a number of seconds >= 0, got %s", yamlx.Excerpt(*maxDelay))
		}
		o.MaxLegitDelayP99S = &v
	}
	if o.MaxFalseCut == nil && o.MaxClientCut == nil && o.MaxFalseCutCost == nil {
		return usagef("recommend: --max-false-cut (or --max-client-cut, --max-false-cut-cost) is required")
	}
	res, err := recommend.RecommendDirs(e.ctx, rest, o)
	if err != nil {
		var ie *sweep.InputError
		var de *sweep.DamagedError
		switch {
		case e.ctx.Err() != nil, errors.As(err, &de):
			return err
		case errors.As(err, &ie):
			return &badInput{err}
		}
		return &badInput{fmt.Errorf("recommend: %w", err)}
	}
	if err := recommend.Write(e.stdout, res, *format); err != nil {
		return err
	}
	if res.Overall == nil {
		return &exitError{exitFailure, fmt.Errorf("recommend: no policy of %s meets %s; nearest miss: %s",
			strings.Join(rest, ", "), strings.Join(res.Constraints, " and "), res.NearestMiss.Label)}
	}
	return nil
}
