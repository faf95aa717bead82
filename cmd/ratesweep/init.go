package main

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// starterSpec is init's spec without a log: a small scenario and a grid of
// the three lesson shapes, every field commented.
const starterSpec = `name: %s                  # names the output directory out/<name>
seed: 1                        # seeds stochastic arrivals (with the replicate)
replicates: 1                  # realisations of the workload per grid point
scenario:                      # or a file, relative to this spec: scenario: my-scenario.yaml
  name: my service
  duration_s: 600              # seconds
  arrivals: fluid              # fluid | uniform | poisson | {process: clustered, burst_size: N, spread_s: S}
  clients:
    - name: web users
      class: legit             # legit | abusive
      segments: [[0, 600, 5]]  # [t0, t1, requests per second], t0 <= t < t1
    - name: mobile app, morning peak
      class: legit
      segments: [[0, 300, 2], [300, 420, 12], [420, 600, 2]]
    - name: credential stuffing
      class: abusive
      stage: code              # abusive only: design | code | none (which defence should have caught it)
      segments: [[120, 240, 20]]
    - name: scraper
      class: abusive
      stage: none
      segments: [[0, 600, 15]]
sweep:                         # entries: an algorithm and its parameter axes (grid = their cross product)
  - algorithm: fixed_window
    window_s: [10, 60]         # seconds; an axis is a value, a list, {from, to, step} or {from, to, count[, scale: log]}
    limit: {from: 10, to: 2000, count: 30, scale: log}   # requests per window
  - algorithm: sliding_window
    window_s: [10, 60]
    limit: {from: 10, to: 2000, count: 30, scale: log}
  - algorithm: token_bucket
    rate: [2, 5, 10, 20]       # tokens per second
    capacity: {from: 5, to: 2000, count: 30, scale: log}  # requests at once from idle
%s  # every entry takes key, nodes, lb, state and sync_ms too (docs/keys.md).
`

// otherAlgorithms comments the algorithms beyond the lesson's three, with
// their parameters, from the registry ("  # Also: sliding_log (window_s,
// limit), …"), in lines of at most 80 columns.
func otherAlgorithms() string {
	var items []string
	for _, a := range model.Algorithms {
		if d := a.Describe(); !d.Lesson {
			items = append(items, fmt.Sprintf("%s (%s)", d.Name, strings.Join(append(d.Params[:len(d.Params):len(d.Params)], d.Optional...), ", ")))
		}
	}
	var b strings.Builder
	line := "  # Also:"
	for i, it := range items {
		sep := ","
		if i == len(items)-1 {
			sep = ";"
		}
		if len(line)+1+len(it)+1 > 80 {
			b.WriteString(line + "\n")
			line = "  #"
		}
		line += " " + it + sep
	}
	if len(items) > 0 {
		b.WriteString(line + "\n")
	}
	return b.String()
}

func cmdInit(e *env, args []string) error {
	fs := newFlags(e, "init", "[--from-log LOG]",
		"Write a commented starter spec: a small scenario, or with --from-log a replay of an access log whose grid\n"+
			"ranges come from the log's profile (the keys' observed peak requests per window, as inspect prints them).\n"+
			"With --out, the JSON Schema for editors is written beside it (ratesweep.schema.json) unless one is there.")
	out := fs.String("out", "", "write the spec to this file (default: standard output)")
	fromLog := fs.String("from-log", "", "an access log to replay (any format ratesweep reads, plain or compressed; --format names it where detection cannot); its profile sets the grid")
	name := fs.String("name", "", "the spec's name (default my-sweep, or the log's file name)")
	logFormat := fs.String("format", "auto", "--from-log: the log's format, as inspect's --format (auto detects it; csv and parquet need their columns, so write those specs by hand: docs/formats.md)")
	force := fs.Bool("force", false, "replace an existing --out file")
	quiet := fs.BoolP("quiet", "q", false, "print nothing but errors")
	maxMemory := fs.String("max-memory", "", "--from-log: stop reading a log whose requests and keys, counted as they are read, need more memory than this (e.g. 4GiB; 0 = no limit; default 3/4 of the least of RAM, cgroup limit and ulimit -v)")
	if _, err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	memLimit := sweep.DefaultMaxMemory()
	if *maxMemory != "" {
		var err error
		if memLimit, err = yamlx.ParseBytes(*maxMemory); err != nil {
			return usagef("init: --max-memory: %v", err)
		}
		if *fromLog == "" {
			return usagef("init: --max-memory bounds the reading of --from-log's log; give --from-log too")
		}
	}
	format, err := ingest.ParseFormat(*logFormat)
	switch {
	case err != nil:
		return usagef("init: --format: %v", err)
	case fs.Changed("format") && *fromLog == "":
		return usagef("init: --format is the format of --from-log's log; give --from-log too")
	case format == ingest.FormatCSV || format == ingest.FormatParquet:
		return usagef("init: --format %s needs the log's columns: write the spec's traffic section by hand (docs/formats.md), or check the columns with ratesweep inspect first", format)
	}
	specName := *name
	if specName == "" {
		specName = "my-sweep"
		if *fromLog != "" {
			specName = logName(*fromLog)
		}
	}
	if strings.ContainsAny(specName, "/\\ ") || specName == "." || specName == ".." {
		return usagef("init: --name %q must be one word without path separators (it names the output directory)", specName)
	}
	// The schema modeline names a file only when init writes it beside
	// the spec (--out); on standard output it says how to make one.
	schemaLine := "# yaml-language-server: $schema=ratesweep.schema.json\n"
	if *out == "" {
		schemaLine = "# Editors: `ratesweep schema > ratesweep.schema.json` beside this file, then a first line\n" +
			"# `# yaml-language-server: $schema=ratesweep.schema.json` completes and checks the fields.\n"
	}
	header := schemaLine +
		"# A ratesweep spec: a workload and a grid of rate-limit policies to run over it.\n" +
		"#   ratesweep run THIS.yaml --dry-run    # points and bytes first\n" +
		"#   ratesweep run THIS.yaml && ratesweep report out/" + specName + "\n" +
		"# Fields: docs/formats.md of ratesweep (Sweep specs); `ratesweep schema` prints them.\n"
	body := fmt.Sprintf(starterSpec, specName, otherAlgorithms())
	if *fromLog != "" {
		dir := "."
		if *out != "" {
			dir = filepath.Dir(*out)
		}
		var err error
		if body, err = specFromLog(e, *fromLog, format, dir, specName, memLimit); err != nil {
			return err
		}
	}
	text := header + body
	// What init writes must load: the same decoder as run.
	if _, err := sweep.ReadSpec([]byte(text), "init", filepath.Dir(cmpOr(*out, "x"))); err != nil {
		return fmt.Errorf("init: the generated spec does not load (a bug): %w", err)
	}
	if *out == "" {
		_, err := e.stdout.Write([]byte(text))
		return err
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if *force {
		flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil { // as run --out does
		return &badInput{fmt.Errorf("init: %v", err)}
	}
	f, err := os.OpenFile(*out, flag, 0o644)
	if errors.Is(err, iofs.ErrExist) {
		return &badInput{fmt.Errorf("init: %s exists (--force replaces it)", *out)}
	}
	if err != nil {
		return &badInput{fmt.Errorf("init: %v", err)}
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	schemaPath := filepath.Join(filepath.Dir(*out), "ratesweep.schema.json")
	wroteSchema := false
	if _, err := os.Stat(schemaPath); errors.Is(err, iofs.ErrNotExist) {
		b, err := sweep.Schema("spec")
		if err != nil {
			return err
		}
		if err := os.WriteFile(schemaPath, b, 0o644); err != nil {
			return err
		}
		wroteSchema = true
	}
	if !*quiet {
		fmt.Fprintf(e.stdout, "wrote %s", *out)
		if wroteSchema {
			fmt.Fprintf(e.stdout, " and %s (for editors)", schemaPath)
		}
		fmt.Fprintf(e.stdout, "\nnext: ratesweep run %s --dry-run\n", *out)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// logName makes a spec name from a log's file name (access.log.gz → access).
func logName(p string) string {
	base := filepath.Base(p)
	for _, ext := range []string{".gz", ".log", ".tsv", ".csv", ".parquet", ".txt"} {
		base = strings.TrimSuffix(base, ext)
	}
	base = regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(base, "-")
	if base == "" || base == "." || base == ".." {
		return "my-sweep"
	}
	return base
}

// initWindowS is the window of the profile init reads (inspect's default).
const initWindowS = 60

// specFromLog profiles the log and writes a spec replaying it, with grids
// spanning the keys' observed rates: window limits from the median key's
// peak per window to above the busiest key's, token rates and capacities
// around the same per-second figures. dir is where the spec will live (the
// log path is written relative to it); maxMemory bounds the read, bytes (0:
// no bound).
func specFromLog(e *env, log string, format ingest.Format, dir, name string, maxMemory int64) (string, error) {
	if maxMemory > 0 {
		debug.SetMemoryLimit(maxMemory)
	}
	tr, err := ingest.Load(e.ctx, log, ingest.Options{Reader: ingest.ReaderOptions{Format: format}, ProfileWindowS: initWindowS,
		Budget: sweep.LogBudget(maxMemory)})
	if err != nil {
		if e.ctx.Err() != nil {
			return "", err
		}
		var be *ingest.BudgetError
		if errors.As(err, &be) {
			return "", &badInput{fmt.Errorf("init: %w", err)}
		}
		return "", &badInput{err}
	}
	p := tr.Profile(1, initWindowS)
	q := p.LegitKeysW
	if q.N == 0 {
		q = p.AbusiveKeysW
	}
	lo := max(1, q.P50)
	hi := max(2*lo, int64(math.Ceil(float64(q.Max)*1.25)))
	var peakS int64 = 1
	if len(p.Top) > 0 {
		peakS = max(1, p.Top[0].PeakS)
	}
	rateLo := sig2(max(0.05, float64(q.P50)/initWindowS))
	rateHi := sig2(max(4*rateLo, 2*float64(q.P99)/initWindowS))
	capHi := max(10, 2*peakS, q.P99)
	rel := log
	if abs, err := filepath.Abs(log); err == nil && !filepath.IsAbs(log) {
		if adir, err := filepath.Abs(dir); err == nil {
			if r, err := filepath.Rel(adir, abs); err == nil {
				rel = r
			}
		}
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\n", name)
	fmt.Fprintf(&b, "seed: 1                        # seeds spread: random (with the replicate)\n")
	fmt.Fprintf(&b, "traffic:\n")
	fmt.Fprintf(&b, "  log: %s\n", strconv.Quote(rel))
	for _, l := range [][2]string{
		{"format: " + tr.Format.String(), "auto | clf | combined | nasa-tsv | csv | parquet"},
		{"key: ip", "or a list joined into one key: ip, user, method, path, path_prefix, status, user_agent, ..."},
		{"spread: even", "one-second log times inside their second: even | random | none"},
		{"top_keys: 20", "busiest keys with their own clients row"},
	} {
		fmt.Fprintf(&b, "  %-28s # %s\n", l[0], l[1])
	}
	fmt.Fprintf(&b, "  # Everything is legitimate unless a rule labels it abusive:\n")
	fmt.Fprintf(&b, "  # rules:\n")
	fmt.Fprintf(&b, "  #   - {name: crawler, stage: none, user_agent: '(?i)bot|crawl|spider'}\n")
	fmt.Fprintf(&b, "  #   - {name: missing page, stage: design, scope: request, status: 404}\n")
	fmt.Fprintf(&b, "  #   - {name: burst fetcher, stage: none, rate: {requests: 100, window_s: 60}}\n")
	fmt.Fprintf(&b, "# The log (ratesweep inspect %s): %s requests from %s keys over %s s;\n", log, commas(p.Requests), commas(int64(p.Keys)), commas(int64(p.DurationS)))
	fmt.Fprintf(&b, "# a key's peak requests per %d s: p50 %d, p90 %d, p99 %d, max %d; busiest key's peak per second %d.\n",
		initWindowS, q.P50, q.P90, q.P99, q.Max, peakS)
	fmt.Fprintf(&b, "# The grids span those figures: limits from the median key's peak to above the busiest key's.\n")
	fmt.Fprintf(&b, "sweep:\n")
	for _, a := range model.Algorithms { // the lesson's three, by the bound they put
		switch d := a.Describe(); {
		case !d.Lesson:
		case d.Family == model.WindowFamily:
			fmt.Fprintf(&b, "  - algorithm: %s\n    window_s: %d\n    limit: {from: %d, to: %d, count: 30, scale: log}\n", d.Name, initWindowS, lo, hi)
		case d.Family == model.BucketFamily:
			fmt.Fprintf(&b, "  - algorithm: %s\n    rate: {from: %s, to: %s, count: 6, scale: log}   # tokens per second\n", d.Name, f(rateLo), f(rateHi))
			fmt.Fprintf(&b, "    capacity: {from: 1, to: %d, count: 20, scale: log}\n", capHi)
		}
	}
	return b.String(), nil
}

// sig2 rounds v to two significant digits.
func sig2(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 2, 64), 64)
	return r
}
