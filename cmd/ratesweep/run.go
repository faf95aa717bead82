package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/sweep"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// runArgs are run's flags and arguments, checked.
type runArgs struct {
	out, shardFlag, shardBy string
	workers, shards         int
	resume, force, dry      bool
	quiet, noOutput         bool
	maxPoints               int64
	memLimit, outLimit      int64 // bytes; memLimit -1: no limit
	sets                    []string
	malformedLimit          ingest.MalformedLimit
	specPath                string // "" for the embedded default
}

// runPlan is what a run computes and where it writes.
type runPlan struct {
	spec      *sweep.Spec
	shard     sweep.Shard
	by        sweep.ShardBy
	gridShard sweep.Shard // the parts this run computes
	dir       string
}

func cmdRun(e *env, args []string) error {
	a, err := parseRunArgs(e, args)
	if err != nil {
		return err
	}
	p, err := planRun(e, a)
	if err != nil {
		return err
	}
	if a.dry {
		printDryRun(e, a, p)
		return nil
	}

	opts := sweep.Options{
		OutDir: p.dir, Workers: a.workers, Shard: p.shard, Resume: a.resume, Force: a.force,
		NoOutput: a.noOutput, MaxPoints: a.maxPoints, MaxMemory: a.memLimit, MaxOutput: a.outLimit,
		MaxMalformed: &a.malformedLimit, ShardBy: p.by,
	}
	if a.memLimit > 0 {
		debug.SetMemoryLimit(a.memLimit) // the garbage collector works harder before the budget is spent
	}
	var mine int64
	for _, part := range sweep.ShardParts(sweep.NewGrid(p.spec), p.gridShard) {
		mine += part.Points()
	}
	if e.getenv("RATESWEEP_WRITER_FLOOR") != "" {
		return writerFloor(e, p.spec, opts)
	}
	prog := newProgress(e.progressOut(), mine*int64(p.spec.Replicates), a.quiet)
	opts.Progress = prog.set
	start := time.Now()
	res, err := sweep.Run(e.ctx, p.spec, opts)
	prog.stop(err == nil)
	if res != nil && res.Log != nil && (!a.quiet || res.Log.Malformed > 0) {
		printAccounting(e.stderr, res.Log)
	}
	if err != nil {
		return runError(e, a, p, err)
	}
	if a.quiet {
		return nil
	}
	printRunSummary(e, a, p, res, time.Since(start).Seconds())
	return nil
}

// parseRunArgs reads run's flags and checks their values.
func parseRunArgs(e *env, args []string) (*runArgs, error) {
	fs := newFlags(e, "run", "[SPEC.yaml | -]", "Run a sweep and write Parquet (no argument: the embedded default spec; -: the spec from standard input).")
	out := fs.String("out", "", "run directory (default out/<spec name>)")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "goroutines simulating and writing (default: all cores)")
	fs.Lookup("workers").DefValue = "0" // help says "all cores", the same on every machine
	shardFlag := fs.String("shard", "", "run shard I/N of the grid (default from the batch engine: SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT, JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX, BATCH_TASK_INDEX, CLOUD_RUN_TASK_INDEX or NOMAD_ALLOC_INDEX, see docs/clusters.md; else 0/1)")
	shards := fs.Int("shards", 0, "shard count N where the engine gives none (Kubernetes, AWS Batch, Nomad; or RATESWEEP_SHARDS)")
	shardBy := fs.String("shard-by", "", "what --shard splits: grid (parts of the grid) or key (a log's keys or a scenario's clients, the whole grid each; default: the spec's shard_by, else grid)")
	resume := fs.Bool("resume", false, "keep the verified parts of an interrupted run and compute only what is missing")
	force := fs.Bool("force", false, "replace an existing run in the output directory (a shard replaces only its own parts)")
	dry := fs.Bool("dry-run", false, "print points, rows, estimated output bytes and memory, then exit")
	maxPoints := fs.Int64("max-points", sweep.DefaultMaxPoints, "refuse grids of more points rows (points × replicates) than this")
	maxMemory := fs.String("max-memory", "", "refuse runs whose memory estimate exceeds this; a log replay is split into key passes instead, also when its requests and keys, counted as they are read, come to more (e.g. 4GiB; 0 = no limit; default 3/4 of the least of RAM, cgroup limit and ulimit -v)")
	maxOutput := fs.String("max-output", "", "refuse runs whose Parquet output estimate exceeds this (e.g. 500GB; default no limit)")
	quiet := fs.BoolP("quiet", "q", false, "print nothing but errors")
	noOutput := fs.Bool("no-output", false, "simulate only and write nothing (for benchmarks)")
	sets := fs.StringArray("set", nil, "override a spec field, `PATH=VALUE` with a YAML value (repeatable): seed=2, sweep[0].limit=[100, 200], scenario.duration_s=600")
	maxMalformed := fs.String("max-malformed", ingest.DefaultMalformedLimit.String(), "a log with more malformed lines than N or P% (of its lines) is an error (exit 2)")
	rest, err := parseFlags(fs, args, 1)
	if err != nil {
		return nil, err
	}
	malformedLimit, err := ingest.ParseMalformedLimit(*maxMalformed)
	if err != nil {
		return nil, usagef("run: --max-malformed: %v", err)
	}
	if *resume && *force {
		return nil, usagef("run: --resume and --force exclude each other")
	}
	if *workers < 1 {
		return nil, usagef("run: --workers must be >= 1, got %d", *workers)
	}
	if *maxPoints < 1 {
		return nil, usagef("run: --max-points must be >= 1, got %d", *maxPoints)
	}
	if *shards < 0 || *shards > sweep.MaxShards {
		return nil, usagef("run: --shards must be 1 to %d, got %d", sweep.MaxShards, *shards)
	}
	memLimit, outLimit := sweep.DefaultMaxMemory(), int64(0)
	if *maxMemory != "" {
		if memLimit, err = yamlx.ParseBytes(*maxMemory); err != nil {
			return nil, usagef("run: --max-memory: %v", err)
		}
		if memLimit == 0 {
			memLimit = -1 // no limit
		}
	}
	if *maxOutput != "" {
		if outLimit, err = yamlx.ParseBytes(*maxOutput); err != nil {
			return nil, usagef("run: --max-output: %v", err)
		}
	}
	specPath := ""
	if len(rest) == 1 {
		specPath = rest[0]
	}
	return &runArgs{
		out: *out, shardFlag: *shardFlag, shardBy: *shardBy, workers: *workers, shards: *shards,
		resume: *resume, force: *force, dry: *dry, quiet: *quiet, noOutput: *noOutput,
		maxPoints: *maxPoints, memLimit: memLimit, outLimit: outLimit, sets: *sets,
		malformedLimit: malformedLimit, specPath: specPath,
	}, nil
}

// planRun loads the spec and settles the shard, what it splits and the run
// directory.
func planRun(e *env, a *runArgs) (*runPlan, error) {
	spec, err := loadSpec(e, a.specPath, a.sets)
	if err != nil {
		return nil, err
	}
	if err := sweep.CheckGridSize(spec, a.maxPoints); err != nil {
		return nil, &badInput{err} // counted before the grid is split into parts, --dry-run too
	}
	shard, err := shardFromEnv(a.shardFlag, a.shards, e.getenv)
	if err != nil {
		return nil, err
	}
	if err := sweep.CheckShardCount(shard.Count); err != nil {
		return nil, usagef("run: %v", err)
	}
	by := spec.ShardBy
	if a.shardBy != "" {
		if by, err = sweep.ParseShardBy(a.shardBy); err != nil {
			return nil, usagef("run: --shard-by: %v", err)
		}
	}
	if by == sweep.ShardByKey {
		if err := sweep.CheckKeySharding(spec); err != nil {
			return nil, usagef("run: --shard-by key: %s", strings.TrimPrefix(err.Error(), "shard_by key: "))
		}
	} else if err := sweep.NewGrid(spec).CheckShard(shard); err != nil {
		return nil, usagef("run: %v", err)
	}
	if by == sweep.ShardByKey && shard.Count == 1 {
		by = sweep.ShardByGrid // one key shard holds every key: an ordinary run, nothing to merge
	}
	gridShard := shard // the parts this run computes
	if by == sweep.ShardByKey {
		gridShard = sweep.Shard{Index: 0, Count: 1}
	}
	dir := a.out
	if dir == "" {
		dir = filepath.Join("out", spec.Name)
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, usagef("run: --out %s is a file, not a directory", dir)
	}
	return &runPlan{spec: spec, shard: shard, by: by, gridShard: gridShard, dir: dir}, nil
}

// printDryRun prints what run --dry-run says: points, rows, the shard, and
// the output and memory estimates.
func printDryRun(e *env, a *runArgs, p *runPlan) {
	spec, shard, by, gridShard, dir := p.spec, p.shard, p.by, p.gridShard, p.dir
	points, rows := spec.Points(), spec.Rows()
	// Clients rows per point: one per scenario client, or for a log at most
	// top_keys keys plus four "other keys" rows.
	clients := int64(0)
	workload := ""
	if spec.Traffic != nil {
		clients = int64(spec.Traffic.TopKeys + 4)
		workload = fmt.Sprintf("log %s, at most %d clients rows per point", spec.Traffic.Log, clients)
	} else {
		clients = int64(len(spec.Scenario.Clients))
		workload = fmt.Sprintf("scenario %q, %d clients", spec.Scenario.Name, clients)
	}
	clientRows := rows * clients
	est := sweep.EstimateShard(spec, shard, by, a.workers, a.memLimit)
	parts := sweep.ShardParts(sweep.NewGrid(spec), gridShard)
	fmt.Fprintf(e.stdout, "spec        %s (%s)\n", spec.Name, workload)
	for i, en := range spec.Entries {
		fmt.Fprintf(e.stdout, "entry %-5d %s: %d points\n", i, en.Algorithm, en.Size())
	}
	fmt.Fprintf(e.stdout, "points      %d (× %d replicates = %d points rows, %d clients rows)\n", points, spec.Replicates, rows, clientRows)
	if by == sweep.ShardByKey {
		fmt.Fprintf(e.stdout, "shard       key shard %s: %d parts, %d points over about 1/%d of the log's keys (memory below is per shard)\n", shard, len(parts), est.Points, shard.Count)
	} else {
		fmt.Fprintf(e.stdout, "shard       %s: %d parts, %d points\n", shard, len(parts), est.Points)
	}
	fmt.Fprintf(e.stdout, "estimated   %s of Parquet under %s\n", humanBytes(float64(est.OutputBytes)), dir)
	mode := ""
	if est.Streamed {
		mode = ", the scenario streamed client by client"
	}
	budget := "no --max-memory"
	if a.memLimit > 0 {
		budget = "--max-memory " + yamlx.FormatBytes(a.memLimit)
	}
	fmt.Fprintf(e.stdout, "memory      about %s with %d workers%s (%s):\n%s", yamlx.FormatBytes(est.MemoryBytes), a.workers, mode, budget, est.FormatMemory("            "))
	passes := 1
	if by == sweep.ShardByGrid && !a.noOutput {
		passes = sweep.SpillPasses(spec, gridShard, a.workers, a.memLimit)
	}
	if passes > 1 {
		pass := sweep.EstimateShard(spec, sweep.Shard{Index: 0, Count: passes}, sweep.ShardByKey, a.workers, a.memLimit)
		fmt.Fprintf(e.stdout, "note        the log does not fit: run replays it in %d key passes of about 1/%d of its keys each (about %s a pass), then merges them\n", passes, passes, yamlx.FormatBytes(pass.MemoryBytes))
	} else if err := est.CheckLimits(spec, a.maxPoints, a.outLimit, a.memLimit, a.noOutput); err != nil {
		fmt.Fprintf(e.stdout, "note        run would refuse it: %v\n", err)
	}
}

// runError is the command's error for a failed sweep.Run: the exit code of
// an interruption or bad input, and the command that resumes the run.
func runError(e *env, a *runArgs, p *runPlan, err error) error {
	hint := "ratesweep run"
	if a.specPath != "" {
		hint += " " + shellQuote(a.specPath)
	}
	hint += " --out " + shellQuote(p.dir)
	if p.shard.Count > 1 || p.by == sweep.ShardByKey {
		hint += " --shard " + p.shard.String()
	}
	if p.by == sweep.ShardByKey && p.spec.ShardBy != p.by {
		hint += " --shard-by key"
	}
	for _, set := range a.sets { // the same spec, or resume refuses
		hint += " --set " + shellQuote(set)
	}
	if errors.Is(err, context.Canceled) {
		code, sig := 130, "interrupted"
		if e.signal != nil && e.signal() == "terminated" {
			code, sig = 143, "terminated"
		}
		return &exitError{code, fmt.Errorf("%s: completed parts are kept in %s; resume with: %s --resume", sig, p.dir, hint)}
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w; completed parts are kept: free space, then resume with: %s --resume", err, hint)
	}
	var ie *sweep.InputError
	if errors.As(err, &ie) || errors.Is(err, sweep.ErrOutputExists) {
		return &badInput{err}
	}
	return err
}

// printRunSummary prints a finished run's points, speed (secs: its wall
// time) and where it wrote them.
func printRunSummary(e *env, a *runArgs, p *runPlan, res *sweep.Result, secs float64) {
	fmt.Fprintf(e.stdout, "%d points (%d rows) in %.2f s: %.0f points/s; Σ false cut = %d\n",
		res.Points, res.Rows, secs, float64(res.Computed)/secs, res.FalseCutSum)
	if res.Passes > 1 {
		fmt.Fprintf(e.stdout, "the log did not fit --max-memory: replayed in %d key passes, merged\n", res.Passes)
	}
	if res.PartsSkipped > 0 {
		fmt.Fprintf(e.stdout, "resumed: %d of %d parts were complete already\n", res.PartsSkipped, res.Parts)
	}
	switch {
	case a.noOutput:
	case p.by == sweep.ShardByKey:
		fmt.Fprintf(e.stdout, "wrote key shard %s into %s; once every key shard is done: ratesweep merge %s\n", p.shard, sweep.KeyShardDir(p.dir, p.shard), shellQuote(p.dir))
	default:
		fmt.Fprintf(e.stdout, "wrote %s/points/*.parquet, %s/clients/*.parquet and %s\n", p.dir, p.dir, res.Manifest)
	}
}

// loadSpec loads the spec named on the command line: a file, "" for the
// embedded default, or "-" for standard input (relative file names in it
// are taken from the working directory); sets are --set overrides.
func loadSpec(e *env, path string, sets []string) (*sweep.Spec, error) {
	if path != "-" {
		return sweep.LoadSpec(path, sets...)
	}
	if e.stdin == nil {
		return nil, usagef("no standard input to read the spec from")
	}
	limit := yamlx.MaxFileBytes() // like a spec file (RATESWEEP_MAX_INPUT)
	data, err := io.ReadAll(io.LimitReader(e.stdin, limit+1))
	if err != nil {
		return nil, &badInput{fmt.Errorf("reading the spec from standard input: %w", err)}
	}
	if int64(len(data)) > limit {
		return nil, &badInput{fmt.Errorf("the spec on standard input is larger than %s, the limit for input files; raise it with RATESWEEP_MAX_INPUT (e.g. RATESWEEP_MAX_INPUT=64MiB)", yamlx.FormatBytes(limit))}
	}
	return sweep.ReadSpec(data, "<stdin>", ".", sets...)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.=/:,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func humanBytes(b float64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	i := 0
	for b >= 1000 && i < len(units)-1 {
		b /= 1000
		i++
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}

// progress shows a bar on a terminal, plain lines every 10 s otherwise, and
// nothing when quiet.
type progress struct {
	mu      sync.Mutex
	total   int64
	bar     *mpb.Bar
	p       *mpb.Progress
	w       io.Writer
	start   time.Time
	last    time.Time
	done    int64
	enabled bool
}

func newProgress(w io.Writer, total int64, quiet bool) *progress {
	pr := &progress{total: total, w: w, start: time.Now(), last: time.Now(), enabled: !quiet}
	if quiet {
		return pr
	}
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		pr.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond))
		pr.bar = pr.p.AddBar(total,
			mpb.PrependDecorators(decor.Name("rows "), decor.CountersNoUnit("%d / %d")),
			mpb.AppendDecorators(decor.AverageSpeed(0, " %.0f rows/s"), decor.Name("  ETA "), decor.AverageETA(decor.ET_STYLE_GO)),
		)
	}
	return pr
}

func (pr *progress) set(done int64) {
	if !pr.enabled {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if done <= pr.done {
		return
	}
	pr.done = done
	now := time.Now()
	if pr.bar != nil {
		// The bar redraws every 150 ms; a send per call would cost a
		// goroutine wake-up every 256 points.
		if now.Sub(pr.last) >= 50*time.Millisecond || done == pr.total {
			pr.last = now
			pr.bar.SetCurrent(done)
		}
		return
	}
	if now.Sub(pr.last) >= 10*time.Second {
		pr.last = now
		secs := now.Sub(pr.start).Seconds()
		rate := float64(done) / secs
		eta := time.Duration(float64(pr.total-done) / rate * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(pr.w, "ratesweep: %d / %d rows (%.1f%%), %.0f rows/s, ETA %s\n",
			done, pr.total, 100*float64(done)/float64(pr.total), rate, eta)
	}
}

func (pr *progress) stop(ok bool) {
	if pr.bar == nil {
		return
	}
	if !ok {
		pr.bar.Abort(false)
	} else {
		pr.bar.SetTotal(pr.total, true)
	}
	pr.p.Wait()
}

// isTerminal reports whether f is a terminal (a character device such as
// /dev/null is not).
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// printAccounting writes a log's line accounting: lines read, used,
// malformed by reason, filtered.
func printAccounting(w io.Writer, a *ingest.Accounting) {
	fmt.Fprintf(w, "log %s (%s): %s lines read: %s used, %s malformed, %s filtered (headers, directives), %s blank\n",
		a.Log, a.Format, commas(a.Lines), commas(a.Used), commas(a.Malformed), commas(a.Filtered), commas(a.Blank))
	s := ingest.Stats{Reasons: a.ByReason}
	for _, r := range s.ReasonsSorted() {
		fmt.Fprintf(w, "  malformed: %s × %s\n", commas(a.ByReason[r]), r)
	}
	if a.OutOfOrder > 0 {
		fmt.Fprintf(w, "  %s requests out of time order (sorted)\n", commas(a.OutOfOrder))
	}
	if a.Continued > 0 {
		fmt.Fprintf(w, "  %s lines continue a CSV record (newlines inside quotes)\n", commas(a.Continued))
	}
	if a.OverlayRequests > 0 {
		fmt.Fprintf(w, "  + %s overlay requests on the log's clock\n", commas(a.OverlayRequests))
	}
}
