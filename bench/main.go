// Command bench compares ratesweep with the peer baselines in bench/peers
// (the lesson's Node model and a numpy vectorisation) on the same grids, and
// measures the writer's floor, log replay and a day-long scenario; it prints
// one table. `make bench` runs it from the repository root.
//
//	go run ./bench [-rounds 5] [-grids bench,large] [-quick] ...
//	go run ./bench genlog [-requests N] [-keys K] [-span S] OUT.csv   (- streams to stdout)
//
// Honest by construction: every tool runs once per round, interleaved
// (A B C A B C …) for -rounds rounds, so a load that comes and goes hits all
// alike; the table gives the median and the minimum of wall and CPU seconds
// (wall as each tool reports it, process start-up excluded; CPU = user+system
// of the whole process from /usr/bin/time -v, which also gives peak RSS), and
// the load average at the start and the end. Figures from a loaded machine
// are not results: run it on a quiet one.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "genlog":
		err = genlogMain(os.Args[2:])
	default:
		err = benchMain(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// measure is one tool's figures on one row, over the rounds.
type measure struct {
	row, tool string
	points    int64
	secs      []float64 // wall per round, as the tool reports it
	cpus      []float64 // user+system CPU seconds per round
	rssMB     float64   // largest peak RSS over the rounds
	checksum  int64
	note      string
	work      float64 // decisions per round (replay rows), 0 otherwise
}

func (m *measure) wall() float64    { return median(m.secs) }
func (m *measure) cpu() float64     { return median(m.cpus) }
func (m *measure) minWall() float64 { return slices.Min(m.secs) }
func (m *measure) minCPU() float64  { return slices.Min(m.cpus) }

// step is one command of a row, run once per round.
type step struct {
	row, tool string
	cmd       []string
	unset     []string
	env       []string // added to the environment
	note      string
	work      float64
	repeat    int // runs per round, interleaved with the steps beside it of the same repeat
	// lines > 0 marks a command that prints no report (wc, zcat, inspect):
	// its wall time is the process's, and it handles lines log lines.
	lines int64
	m     *measure
}

// benchOpts are the bench's flags.
type benchOpts struct {
	rounds, ratioRuns, replayPoints int
	grids                           string
	replayN, ingestLines            int64
	replayKeys                      uint64
	cache, big, peers, bin, python  string
	skipped                         map[string]bool
}

// parseBenchFlags reads the flags; -quick sets the defaults of those not
// given to a smoke test's.
func parseBenchFlags(args []string) (*benchOpts, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	quick := fs.Bool("quick", os.Getenv("RATESWEEP_BENCH_QUICK") != "", "smoke test: 2 rounds, the bench grid only, a 1M-request log over 100 points, no 10M run (also RATESWEEP_BENCH_QUICK=1)")
	rounds := fs.Int("rounds", 5, "interleaved rounds (each tool runs once per round)")
	ratioRuns := fs.Int("ratio-runs", 3, "runs per round of the Parquet rows (end to end and floor, interleaved): their ratio wants more samples than the peers")
	grids := fs.String("grids", "bench,large", "peer grids (bench, large; empty for none)")
	skip := fs.String("skip", "", "tools to leave out, comma-separated (node, numpy, sim, e2e, e2e-1w, floor, floor-1w, replay, events, day, ingest)")
	replayN := fs.Int64("replay-requests", 10_000_000, "requests of the synthetic replay log")
	replayKeys := fs.Uint64("replay-keys", 20_000, "keys of the synthetic replay log")
	replayPoints := fs.Int("replay-points", 1000, "grid points of the replay row (a multiple of 4)")
	ingestLines := fs.Int64("ingest-lines", 2_000_000, "Combined log lines of the ingest row (the repository's real logs repeated)")
	cache := fs.String("cache", filepath.Join(os.TempDir(), "ratesweep-bench"), "directory for the generated logs (kept between runs)")
	big := fs.String("big", "bench/10m.yaml", "spec of the peak-RSS run (writing Parquet); empty to skip")
	peers := fs.String("peers", "bench/peers", "directory of the peer scripts")
	bin := fs.String("bin", "bin/ratesweep", "ratesweep binary")
	python := fs.String("python", "", "Python with numpy (default: python3, else /usr/bin/python3)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("rounds", func() { *rounds = 2 })
		def("grids", func() { *grids = "bench" })
		def("replay-requests", func() { *replayN = 1_000_000 })
		def("replay-keys", func() { *replayKeys = 2000 })
		def("replay-points", func() { *replayPoints = 100 })
		def("big", func() { *big = "" })
		def("ingest-lines", func() { *ingestLines = 200_000 })
	}
	if *rounds < 1 || *ratioRuns < 1 || *replayPoints < 4 || *replayPoints%4 != 0 {
		return nil, errors.New("-rounds and -ratio-runs must be >= 1 and -replay-points a positive multiple of 4")
	}
	skipped := map[string]bool{}
	for _, t := range strings.Split(*skip, ",") {
		skipped[strings.TrimSpace(t)] = true
	}
	if *python == "" {
		*python = "/usr/bin/python3"
		if exec.Command("python3", "-c", "import numpy").Run() == nil {
			*python = "python3"
		}
	}
	return &benchOpts{
		rounds: *rounds, ratioRuns: *ratioRuns, replayPoints: *replayPoints, grids: *grids,
		replayN: *replayN, ingestLines: *ingestLines, replayKeys: *replayKeys,
		cache: *cache, big: *big, peers: *peers, bin: *bin, python: *python, skipped: skipped,
	}, nil
}

// benchPlan is the steps of a bench run, in the order they run each round.
type benchPlan struct {
	o           *benchOpts
	tmp         string // the run's scratch directory
	steps       []*step
	gridNames   []string
	replaySpecs [2]string // the replay row's spec and that of a log a tenth as long
}

// add appends a step unless its key is skipped (then nil).
func (p *benchPlan) add(row, tool, key, note string, cmd []string, unset ...string) *step {
	if p.o.skipped[key] {
		return nil
	}
	s := &step{row: row, tool: tool, cmd: cmd, unset: unset, note: note}
	p.steps = append(p.steps, s)
	return s
}

// addGrids adds the peer grids' rows: the peers, ratesweep with and without
// Parquet, and the pqarrow floor.
func (p *benchPlan) addGrids() error {
	o := p.o
	specs := map[string]string{"bench": "configs/bench.yaml", "large": "configs/bench-large.yaml"}
	if o.grids != "" {
		p.gridNames = strings.Split(o.grids, ",")
	}
	for _, g := range p.gridNames {
		spec, ok := specs[g]
		if !ok {
			return fmt.Errorf("unknown grid %q (bench, large)", g)
		}
		// Every writing run gets a directory of its own, and none is
		// removed before the end: on ext4 without a journal, inodes deleted
		// in the last minute are skipped one by one when a file is created,
		// so removing the previous round's files would make file creation
		// cost what the deletions before it happened to be.
		out := func(tool string) string { return filepath.Join(p.tmp, g, "round-{round}", tool) }
		p.add(g, "node (lesson model)", "node", "1 core", []string{"node", filepath.Join(o.peers, "lesson_grid.mjs"), g})
		p.add(g, "numpy", "numpy", "1 core", []string{o.python, filepath.Join(o.peers, "numpy_grid.py"), g}, "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
		p.add(g, "ratesweep sim", "sim", "--no-output, 2 workers", []string{o.bin, "run", spec, "--no-output"})
		p.add(g, "ratesweep e2e", "e2e", "Parquet, 2 workers", []string{o.bin, "run", spec, "--out", out("e2e"), "--workers", "2"})
		p.add(g, "ratesweep e2e 1w", "e2e-1w", "Parquet, --workers 1", []string{o.bin, "run", spec, "--out", out("e2e-1w"), "--workers", "1"})
		// The floor runs in the ratesweep binary itself: the same build of
		// pqarrow at the same addresses (a build of the same code elsewhere
		// differed by 5% in its encoders alone).
		floor := p.add(g, "pqarrow floor", "floor", "pre-built records, same settings, 2 workers; CPU = writing only", []string{o.bin, "run", spec, "--out", out("floor"), "--workers", "2"})
		floor1 := p.add(g, "pqarrow floor 1w", "floor-1w", "as the floor, 1 worker", []string{o.bin, "run", spec, "--out", out("floor-1w"), "--workers", "1"})
		for _, f := range []*step{floor, floor1} {
			if f != nil {
				f.env = []string{"RATESWEEP_WRITER_FLOOR=1"}
			}
		}
		for _, s := range p.steps {
			if s.row == g && slices.Contains([]string{"ratesweep e2e", "ratesweep e2e 1w", "pqarrow floor", "pqarrow floor 1w"}, s.tool) {
				s.repeat = o.ratioRuns
			}
		}
	}
	return nil
}

// addReplay adds the log replay row: a synthetic log over a grid of
// count-based and state-based algorithms; decisions = points × requests.
func (p *benchPlan) addReplay() error {
	o := p.o
	if o.skipped["replay"] {
		return nil
	}
	for i, n := range []int64{o.replayN, o.replayN / 10} {
		path := filepath.Join(o.cache, fmt.Sprintf("log-%d-%d.csv", n, o.replayKeys))
		if _, err := os.Stat(path); err != nil {
			if err := os.MkdirAll(o.cache, 0o755); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "bench: generating %s\n", path)
			if err := genlog(path, n, o.replayKeys, 3600, 1); err != nil {
				return err
			}
		}
		p.replaySpecs[i] = filepath.Join(p.tmp, fmt.Sprintf("replay-%d.yaml", i))
		if err := os.WriteFile(p.replaySpecs[i], []byte(replaySpec(path, o.replayPoints/4)), 0o644); err != nil {
			return err
		}
	}
	s := p.add("replay", fmt.Sprintf("ratesweep replay %dM", o.replayN/1_000_000), "replay",
		fmt.Sprintf("%d requests, %d keys, --no-output", o.replayN, o.replayKeys), []string{o.bin, "run", p.replaySpecs[0], "--no-output"})
	s.work = float64(o.replayPoints) * float64(o.replayN)
	return nil
}

// addScenarios adds the event simulation and day-long scenario rows.
func (p *benchPlan) addScenarios() {
	if !p.o.skipped["events"] {
		p.add("events", "ratesweep Poisson 3,600 s", "events", "bench/events.yaml, --no-output", []string{p.o.bin, "run", "bench/events.yaml", "--no-output"})
	}
	if !p.o.skipped["day"] {
		p.add("day", "ratesweep 86,400 s", "day", "bench/day.yaml, --no-output", []string{p.o.bin, "run", "bench/day.yaml", "--no-output"})
		p.add("day", "ratesweep 86,400 s tiled", "day", "bench/day-tiled.yaml, --no-output", []string{p.o.bin, "run", "bench/day-tiled.yaml", "--no-output"})
		p.add("day", "ratesweep 300 s", "day", "bench/day-lesson.yaml, --no-output", []string{p.o.bin, "run", "bench/day-lesson.yaml", "--no-output"})
	}
}

// addIngest adds the ingest row: inspect against wc -l and zcat on the
// repository's real Combined logs repeated.
func (p *benchPlan) addIngest() error {
	o := p.o
	if o.skipped["ingest"] {
		return nil
	}
	plain, gz, n, err := ingestLogs(o.cache, o.ingestLines)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("%d Combined lines", n)
	// The start-up: inspect of the log's first line alone (the
	// runtime, the packages' initialisation), what every run pays once.
	one := filepath.Join(o.cache, "combined-one-line.log")
	if err := firstLine(plain, one); err != nil {
		return err
	}
	p.add("ingest", "ratesweep inspect, 1 line", "ingest", "start-up: the first line alone", []string{o.bin, "inspect", one, "--format", "combined", "--quiet"}).lines = 1
	for _, st := range []*step{
		p.add("ingest", "wc -l", "ingest", note, []string{"wc", "-l", plain}),
		p.add("ingest", "ratesweep inspect", "ingest", note+", profile only", []string{o.bin, "inspect", plain, "--format", "combined", "--quiet"}),
		p.add("ingest", "zcat", "ingest", note+", gzip", []string{"sh", "-c", `exec zcat "$0" >/dev/null`, gz}),
		p.add("ingest", "ratesweep inspect gz", "ingest", note+", gzip, profile only", []string{o.bin, "inspect", gz, "--format", "combined", "--quiet"}),
	} {
		st.lines = n
	}
	return nil
}

// runRounds runs every step once per round (steps of one row that run
// several times a round as a group, interleaved: A B C A B C …).
func runRounds(steps []*step, rounds int) error {
	for r := range rounds {
		for i := 0; i < len(steps); {
			j, reps := i+1, max(steps[i].repeat, 1)
			for reps > 1 && j < len(steps) && steps[j].row == steps[i].row && steps[j].repeat == reps {
				j++
			}
			for k := range reps {
				for _, s := range steps[i:j] {
					run := strconv.Itoa(r*reps + k + 1)
					cmd := make([]string, len(s.cmd))
					for i, a := range s.cmd {
						cmd[i] = strings.ReplaceAll(a, "{round}", run)
					}
					fmt.Fprintf(os.Stderr, "bench: round %d/%d: %s on %s: %s\n", r+1, rounds, s.tool, s.row, strings.Join(cmd, " "))
					once := runOnce
					if s.lines > 0 {
						once = runRaw(s.lines)
					}
					if err := once(s.m, cmd, s.unset, s.env...); err != nil {
						return fmt.Errorf("%s on %s: %w", s.tool, s.row, err)
					}
					fmt.Fprintf(os.Stderr, "bench:   %.3f s, %.2f CPU-s\n", s.m.secs[len(s.m.secs)-1], s.m.cpus[len(s.m.cpus)-1])
				}
			}
			i = j
		}
	}
	return nil
}

// sameChecksums reports, on stderr, the tools of a grid whose points or
// checksum differ from the grid's first tool, and says whether none did.
func sameChecksums(gridNames []string, all []*measure) bool {
	ok := true
	for _, g := range gridNames {
		var ref *measure
		for _, m := range all {
			if m.row != g {
				continue
			}
			if ref == nil {
				ref = m
			} else if m.checksum != ref.checksum || m.points != ref.points {
				fmt.Fprintf(os.Stderr, "bench: %s on %s: %d points, checksum %d; %s: %d points, checksum %d\n",
					m.tool, g, m.points, m.checksum, ref.tool, ref.points, ref.checksum)
				ok = false
			}
		}
	}
	return ok
}

// extraRuns runs, once each, the replay of a log a tenth as long (for the
// marginal memory per request) and the peak-RSS run; either is nil when
// left out.
func extraRuns(p *benchPlan) (small, big *measure, err error) {
	o := p.o
	if !o.skipped["replay"] {
		small = &measure{}
		if err := runOnce(small, []string{o.bin, "run", p.replaySpecs[1], "--no-output"}, nil); err != nil {
			return nil, nil, fmt.Errorf("replay of the short log: %w", err)
		}
	}
	if o.big != "" {
		fmt.Fprintf(os.Stderr, "bench: peak RSS run %s\n", o.big)
		big = &measure{}
		if err := runOnce(big, []string{o.bin, "run", o.big, "--out", filepath.Join(p.tmp, "big"), "--force", "--workers", "2"}, nil); err != nil {
			return nil, nil, fmt.Errorf("peak RSS run: %w", err)
		}
	}
	return small, big, nil
}

func benchMain(args []string) error {
	o, err := parseBenchFlags(args)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "ratesweep-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	load0 := loadAvg()

	p := &benchPlan{o: o, tmp: tmp}
	if err := p.addGrids(); err != nil {
		return err
	}
	if err := p.addReplay(); err != nil {
		return err
	}
	p.addScenarios()
	if err := p.addIngest(); err != nil {
		return err
	}
	for _, s := range p.steps {
		s.m = &measure{row: s.row, tool: s.tool, note: s.note, work: s.work}
	}
	if err := runRounds(p.steps, o.rounds); err != nil {
		return err
	}
	var all []*measure
	for _, s := range p.steps {
		all = append(all, s.m)
	}
	ok := sameChecksums(p.gridNames, all)
	small, bigM, err := extraRuns(p)
	if err != nil {
		return err
	}
	printTable(os.Stdout, o.rounds, o.ratioRuns, all)
	printFigures(os.Stdout, p.gridNames, all, small, o.replayN, bigM, o.big)
	fmt.Printf("load average (1, 5, 15 min) at the start: %s; at the end: %s (other processes share the cores)\n", load0, loadAvg())
	if !ok {
		return errors.New("checksums differ")
	}
	return nil
}

// replaySpec is the replay row's spec over the log at path: perAlg points
// of each of fixed_window, sliding_log, sliding_window (window 60 s, limits
// 1…) and token_bucket (rate 1/s, capacities 1…).
func replaySpec(path string, perAlg int) string {
	return fmt.Sprintf(`name: bench-replay
traffic:
  log: %q
  format: csv
  csv: {time_format: unix_ms, columns: {time: t, ip: key}}
  key: ip
  spread: none
sweep:
  - algorithm: fixed_window
    window_s: [60]
    limit: {from: 1, to: %[2]d, step: 1}
  - algorithm: sliding_log
    window_s: [60]
    limit: {from: 1, to: %[2]d, step: 1}
  - algorithm: sliding_window
    window_s: [60]
    limit: {from: 1, to: %[2]d, step: 1}
  - algorithm: token_bucket
    rate: [1]
    capacity: {from: 1, to: %[2]d, step: 1}
`, path, perAlg)
}

// runOnce runs cmd once under /usr/bin/time -v (with the variables in
// unset removed from its environment) and adds its figures to m.
func runOnce(m *measure, cmd, unset []string, env ...string) error {
	rssFile, err := os.CreateTemp("", "bench-rss-")
	if err != nil {
		return err
	}
	rssFile.Close()
	defer os.Remove(rssFile.Name())
	c := exec.Command("/usr/bin/time", append([]string{"-v", "-o", rssFile.Name()}, cmd...)...)
	for _, kv := range os.Environ() {
		if !slices.Contains(unset, strings.SplitN(kv, "=", 2)[0]) {
			c.Env = append(c.Env, kv)
		}
	}
	c.Env = append(c.Env, env...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("%v: %s%s", err, stdout.String(), stderr.String())
	}
	points, s, sum, ownCPU, err := parseReport(stdout.String())
	if err != nil {
		return err
	}
	rss, cpu, err := parseTime(rssFile.Name())
	if err != nil {
		return err
	}
	if ownCPU > 0 { // the tool measured the CPU of the timed part itself
		cpu = ownCPU
	}
	m.points, m.checksum = points, sum
	m.rssMB = max(m.rssMB, rss)
	m.secs, m.cpus = append(m.secs, s), append(m.cpus, cpu)
	return nil
}

// runRaw returns a runOnce for a command that prints no report: it times
// the process itself and counts lines log lines as its points.
func runRaw(lines int64) func(m *measure, cmd, unset []string, env ...string) error {
	return func(m *measure, cmd, unset []string, env ...string) error {
		rssFile, err := os.CreateTemp("", "bench-rss-")
		if err != nil {
			return err
		}
		rssFile.Close()
		defer os.Remove(rssFile.Name())
		c := exec.Command("/usr/bin/time", append([]string{"-v", "-o", rssFile.Name()}, cmd...)...)
		c.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		start := time.Now()
		if err := c.Run(); err != nil {
			return fmt.Errorf("%v: %s", err, stderr.String())
		}
		wall := time.Since(start).Seconds()
		rss, cpu, err := parseTime(rssFile.Name())
		if err != nil {
			return err
		}
		m.points = lines
		m.rssMB = max(m.rssMB, rss)
		m.secs, m.cpus = append(m.secs, wall), append(m.cpus, cpu)
		return nil
	}
}
