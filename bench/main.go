// Command bench compares ratesweep with the peer baselines in ../shared/peers
// (the lesson's Node model and a numpy vectorisation) on the same grids and
// prints one table; `make bench` runs it from the repository root.
//
//	go run ./bench [-grids bench,large] [-repeat 3] [-big bench/10m.yaml]
//	go run ./bench writer [-workers N] SPEC.yaml OUT_DIR   (the writer alone)
//
// Every figure is wall-clock seconds as each tool reports it (process start-up
// excluded), peak RSS from /usr/bin/time -v. ratesweep's figures are the
// median of -repeat runs; the peers run -peer-repeat times (median).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/sweep"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "writer" {
		if err := writerMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench writer:", err)
			os.Exit(1)
		}
		return
	}
	if err := benchMain(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// writerMain times the Parquet writer alone over a spec's rows and prints
// one JSON line like the peers do.
func writerMain(args []string) error {
	fs := flag.NewFlagSet("writer", flag.ContinueOnError)
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "writer goroutines")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New("usage: bench writer [-workers N] SPEC.yaml OUT_DIR")
	}
	spec, err := sweep.LoadSpec(fs.Arg(0))
	if err != nil {
		return err
	}
	res, elapsed, err := sweep.WriterOnly(context.Background(), spec, sweep.Options{OutDir: fs.Arg(1), Workers: *workers})
	if err != nil {
		return err
	}
	s := elapsed.Seconds()
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"peer": "writer", "points": res.Points, "seconds": s, "points_per_s": float64(res.Points) / s,
		"rows": res.Rows * int64(1+len(spec.Scenario.Clients)), "checksum": res.FalseCutSum,
	})
}

// measure is one tool's figures on one grid.
type measure struct {
	tool     string
	points   int64
	seconds  float64 // median
	cpu      float64 // median user+system CPU seconds of the process (start-up included)
	rssMB    float64 // largest peak RSS over the repeats
	checksum int64
	note     string
}

type grid struct {
	name, spec string // peers' grid name, ratesweep spec
}

func benchMain(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	grids := fs.String("grids", "bench,large", "peer grids to run (bench, large)")
	repeat := fs.Int("repeat", 3, "runs of each ratesweep measurement (median reported)")
	peerRepeat := fs.Int("peer-repeat", 1, "runs of each peer (median reported; node on large takes about a minute)")
	big := fs.String("big", "bench/10m.yaml", "spec of the peak-RSS run (writing Parquet); empty to skip")
	peers := fs.String("peers", "../shared/peers", "directory of the peer scripts")
	bin := fs.String("bin", "bin/ratesweep", "ratesweep binary")
	python := fs.String("python", "", "Python with numpy (default: python3, else /usr/bin/python3)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *python == "" {
		*python = "/usr/bin/python3"
		if exec.Command("python3", "-c", "import numpy").Run() == nil {
			*python = "python3"
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "ratesweep-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	specs := map[string]string{"bench": "configs/bench.yaml", "large": "configs/bench-large.yaml"}
	load0 := loadAvg()
	var all [][]measure
	ok := true
	for _, g := range strings.Split(*grids, ",") {
		spec, found := specs[g]
		if !found {
			return fmt.Errorf("unknown grid %q (bench, large)", g)
		}
		out := filepath.Join(tmp, g)
		steps := []struct {
			tool string
			n    int
			cmd  []string
			env  []string
			note string
		}{
			{"node (lesson model)", *peerRepeat, []string{"node", filepath.Join(*peers, "seed_grid.mjs"), g}, nil, "1 core"},
			{"numpy", *peerRepeat, []string{*python, filepath.Join(*peers, "numpy_grid.py"), g}, []string{"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}, "1 core"},
			{"ratesweep sim", *repeat, []string{*bin, "run", spec, "--no-output"}, nil, "--no-output, 2 workers"},
			{"ratesweep sim 1w", *repeat, []string{*bin, "run", spec, "--no-output", "--workers", "1"}, nil, "--no-output --workers 1"},
			{"ratesweep e2e", *repeat, []string{*bin, "run", spec, "--out", out, "--force", "--workers", "2"}, nil, "Parquet, 2 workers"},
			{"ratesweep e2e 1w", *repeat, []string{*bin, "run", spec, "--out", out, "--force", "--workers", "1"}, nil, "Parquet, --workers 1"},
			{"writer alone", *repeat, []string{self, "writer", "-workers", "2", spec, out + "-w"}, nil, "same rows, 2 writers"},
		}
		var ms []measure
		for _, s := range steps {
			fmt.Fprintf(os.Stderr, "bench: %s on %s (%d×): %s\n", s.tool, g, s.n, strings.Join(s.cmd, " "))
			m, err := runTool(s.tool, s.n, s.cmd, s.env)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", s.tool, g, err)
			}
			m.note = s.note
			ms = append(ms, m)
		}
		for _, m := range ms[1:] {
			if m.checksum != ms[0].checksum || m.points != ms[0].points {
				fmt.Fprintf(os.Stderr, "bench: %s on %s: %d points, checksum %d; node: %d points, checksum %d\n",
					m.tool, g, m.points, m.checksum, ms[0].points, ms[0].checksum)
				ok = false
			}
		}
		all = append(all, ms)
	}
	var bigM *measure
	if *big != "" {
		fmt.Fprintf(os.Stderr, "bench: peak RSS run %s\n", *big)
		m, err := runTool("ratesweep e2e", 1, []string{*bin, "run", *big, "--out", filepath.Join(tmp, "big"), "--force", "--workers", "2"}, nil)
		if err != nil {
			return fmt.Errorf("peak RSS run: %w", err)
		}
		bigM = &m
	}
	printTable(os.Stdout, strings.Split(*grids, ","), all, bigM, *big)
	fmt.Printf("load average (1 min) at the start: %s, at the end: %s (other processes share the cores)\n", load0, loadAvg())
	if !ok {
		return errors.New("checksums differ")
	}
	return nil
}

// runTool runs cmd n times under /usr/bin/time -v (with the variables in
// unset removed from its environment) and parses its one-line report.
func runTool(tool string, n int, cmd, unset []string) (measure, error) {
	m := measure{tool: tool}
	var secs, cpus []float64
	for range n {
		rssFile, err := os.CreateTemp("", "bench-rss-")
		if err != nil {
			return m, err
		}
		rssFile.Close()
		defer os.Remove(rssFile.Name())
		c := exec.Command("/usr/bin/time", append([]string{"-v", "-o", rssFile.Name()}, cmd...)...)
		for _, kv := range os.Environ() {
			if !slices.Contains(unset, strings.SplitN(kv, "=", 2)[0]) {
				c.Env = append(c.Env, kv)
			}
		}
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		if err := c.Run(); err != nil {
			return m, fmt.Errorf("%v: %s%s", err, stdout.String(), stderr.String())
		}
		points, s, sum, err := parseReport(stdout.String())
		if err != nil {
			return m, err
		}
		rss, cpu, err := parseTime(rssFile.Name())
		if err != nil {
			return m, err
		}
		m.points, m.checksum = points, sum
		m.rssMB = max(m.rssMB, rss)
		secs, cpus = append(secs, s), append(cpus, cpu)
	}
	m.seconds, m.cpu = median(secs), median(cpus)
	return m, nil
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

var runLine = regexp.MustCompile(`(\d+) points \(\d+ rows\) in [0-9.]+ s: ([0-9.]+) points/s; Σ false cut = (-?\d+)`)

// parseReport reads a peer's JSON line or ratesweep run's summary line.
func parseReport(out string) (points int64, seconds float64, checksum int64, err error) {
	for _, line := range strings.Split(out, "\n") {
		var j struct {
			Points   int64   `json:"points"`
			Seconds  float64 `json:"seconds"`
			Checksum float64 `json:"checksum"`
		}
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &j) == nil {
			return j.Points, j.Seconds, int64(j.Checksum), nil
		}
		if m := runLine.FindStringSubmatch(line); m != nil {
			points, _ = strconv.ParseInt(m[1], 10, 64)
			pps, _ := strconv.ParseFloat(m[2], 64)
			checksum, _ = strconv.ParseInt(m[3], 10, 64)
			return points, float64(points) / pps, checksum, nil
		}
	}
	return 0, 0, 0, fmt.Errorf("no report line in %q", out)
}

// parseTime reads /usr/bin/time -v's report: peak RSS (MB) and user+system
// CPU seconds.
func parseTime(path string) (rssMB, cpu float64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		for _, key := range []string{"Maximum resident set size (kbytes):", "User time (seconds):", "System time (seconds):"} {
			if v, ok := strings.CutPrefix(line, key); ok {
				x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return 0, 0, fmt.Errorf("%s: %s: %w", path, key, err)
				}
				if strings.HasPrefix(key, "Maximum") {
					rssMB = x / 1024
				} else {
					cpu += x
				}
				found++
			}
		}
	}
	if found != 3 {
		return 0, 0, fmt.Errorf("no peak RSS or CPU times in %s", path)
	}
	return rssMB, cpu, nil
}

// loadAvg is the 1-minute load average, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

func find(ms []measure, tool string) measure {
	for _, m := range ms {
		if m.tool == tool {
			return m
		}
	}
	return measure{}
}

func printTable(w io.Writer, grids []string, all [][]measure, big *measure, bigSpec string) {
	fmt.Fprintf(w, "\n%d cores; ratesweep figures are medians; seconds are wall clock as each tool reports it "+
		"(process start-up excluded); CPU s = user+system of the whole process (/usr/bin/time -v).\n\n", runtime.NumCPU())
	fmt.Fprintln(w, "| grid | tool | points | seconds | points/s | × numpy | × node | CPU s | peak RSS MB | checksum | note |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for gi, ms := range all {
		node, np := find(ms, "node (lesson model)"), find(ms, "numpy")
		for _, m := range ms {
			pps := float64(m.points) / m.seconds
			fmt.Fprintf(w, "| %s | %s | %d | %.3f | %.0f | %.1f | %.1f | %.2f | %.0f | %d | %s |\n",
				grids[gi], m.tool, m.points, m.seconds, pps, np.seconds/m.seconds, node.seconds/m.seconds, m.cpu, m.rssMB, m.checksum, m.note)
		}
	}
	fmt.Fprintln(w)
	for gi, ms := range all {
		np := find(ms, "numpy")
		sim, sim1 := find(ms, "ratesweep sim"), find(ms, "ratesweep sim 1w")
		e2e, e2e1, wr := find(ms, "ratesweep e2e"), find(ms, "ratesweep e2e 1w"), find(ms, "writer alone")
		fmt.Fprintf(w, "%s: sim %.1f× numpy (goal ≥ 30 on large); e2e / writer alone = %.2f (goal ≤ 1.5); "+
			"workers 2 vs 1: e2e %.2f×, sim %.2f× (goal ≥ 1.8)\n",
			grids[gi], np.seconds/sim.seconds, e2e.seconds/wr.seconds, e2e1.seconds/e2e.seconds, sim1.seconds/sim.seconds)
	}
	if big != nil {
		fmt.Fprintf(w, "peak RSS of %s (%d points, writing Parquet, 2 workers): %.0f MB in %.1f s (goal ≤ 300 MB)\n",
			bigSpec, big.points, big.rssMB, big.seconds)
	}
}
