package main

// Reading what a run printed and writing the bench's table and figures.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

var runLine = regexp.MustCompile(`(\d+) points \(\d+ rows\) in [0-9.]+ s: ([0-9.]+) points/s; Σ false cut = (-?\d+)`)

// parseReport reads a peer's JSON line (with cpu_s when the tool timed its
// own CPU) or ratesweep run's summary line.
func parseReport(out string) (points int64, seconds float64, checksum int64, cpu float64, err error) {
	for _, line := range strings.Split(out, "\n") {
		var j struct {
			Points   int64   `json:"points"`
			Seconds  float64 `json:"seconds"`
			Checksum float64 `json:"checksum"`
			CPU      float64 `json:"cpu_s"`
		}
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &j) == nil {
			return j.Points, j.Seconds, int64(j.Checksum), j.CPU, nil
		}
		if m := runLine.FindStringSubmatch(line); m != nil {
			points, _ = strconv.ParseInt(m[1], 10, 64)
			pps, _ := strconv.ParseFloat(m[2], 64)
			checksum, _ = strconv.ParseInt(m[3], 10, 64)
			return points, float64(points) / pps, checksum, 0, nil
		}
	}
	return 0, 0, 0, 0, fmt.Errorf("no report line in %q", out)
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

// loadAvg is the 1, 5 and 15-minute load averages, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

func find(ms []*measure, row, tool string) *measure {
	for _, m := range ms {
		if m.row == row && m.tool == tool {
			return m
		}
	}
	return nil
}

func printTable(w io.Writer, rounds, ratioRuns int, all []*measure) {
	fmt.Fprintf(w, "\n%d cores; %d interleaved rounds (end to end and floor: %d runs each per round, interleaved); wall = seconds as each tool reports them (process start-up excluded), "+
		"CPU = user+system of the whole process (/usr/bin/time -v; the floor: CPU of its writing only); med = median.\n\n", runtime.NumCPU(), rounds, ratioRuns)
	fmt.Fprintln(w, "| row | tool | points | wall med | wall min | CPU med | CPU min | points/s | × numpy (wall) | peak RSS MB | checksum | note |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, m := range all {
		ratio := "–"
		if np := find(all, m.row, "numpy"); np != nil {
			ratio = fmt.Sprintf("%.1f", np.wall()/m.wall())
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.3f | %.3f | %.2f | %.2f | %.0f | %s | %.0f | %d | %s |\n",
			m.row, m.tool, m.points, m.wall(), m.minWall(), m.cpu(), m.minCPU(), float64(m.points)/m.wall(), ratio, m.rssMB, m.checksum, m.note)
	}
	fmt.Fprintln(w)
}

// printFigures prints the figures derived from this run's measures:
// speed ratios, decisions and lines per CPU-second, bytes per request.
func printFigures(w io.Writer, grids []string, all []*measure, small *measure, requests int64, big *measure, bigSpec string) {
	for _, g := range grids {
		np, sim, e2e, floor := find(all, g, "numpy"), find(all, g, "ratesweep sim"), find(all, g, "ratesweep e2e"), find(all, g, "pqarrow floor")
		e2e1, floor1 := find(all, g, "ratesweep e2e 1w"), find(all, g, "pqarrow floor 1w")
		var parts []string
		if np != nil && sim != nil {
			parts = append(parts, fmt.Sprintf("sim %.1f× numpy", np.wall()/sim.wall()))
		}
		if np != nil && e2e != nil {
			parts = append(parts, fmt.Sprintf("e2e %.1f× numpy", np.wall()/e2e.wall()))
		}
		if e2e != nil && floor != nil {
			parts = append(parts, fmt.Sprintf("e2e CPU per point / pqarrow floor = %.2f (floor %.2f CPU-s, %.3f µs per point)",
				e2e.cpu()/floor.cpu(), floor.cpu(), floor.cpu()/float64(floor.points)*1e6))
		}
		if e2e1 != nil && floor1 != nil {
			parts = append(parts, fmt.Sprintf("1 worker: %.2f (floor %.2f CPU-s)", e2e1.cpu()/floor1.cpu(), floor1.cpu()))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "%s: %s\n", g, strings.Join(parts, "; "))
		}
	}
	for _, m := range all {
		if m.row == "replay" && m.work > 0 {
			fmt.Fprintf(w, "replay: %.3g decisions per CPU-second, %.3g per wall second; peak RSS %.0f MB",
				m.work/m.cpu(), m.work/m.wall(), m.rssMB)
			if small != nil && small.rssMB > 0 {
				fmt.Fprintf(w, ", %.1f bytes per request beyond the fixed overhead (vs a log a tenth as long: %.0f MB)",
					(m.rssMB-small.rssMB)*(1<<20)/(float64(requests)-float64(requests/10)), small.rssMB)
			}
			fmt.Fprintln(w)
		}
	}
	for _, row := range [][2]string{{"ratesweep 86,400 s", "stretched"}, {"ratesweep 86,400 s tiled", "tiled"}} {
		if day, lesson := find(all, "day", row[0]), find(all, "day", "ratesweep 300 s"); day != nil && lesson != nil {
			fmt.Fprintf(w, "day (the lesson %s): per point %.2f µs at 86,400 s, %.3f µs at 300 s: %.0f× for 288× the length\n",
				row[1], day.wall()/float64(day.points)*1e6, lesson.wall()/float64(lesson.points)*1e6, day.wall()/lesson.wall())
		}
	}
	if wc, rs, zc, rz := find(all, "ingest", "wc -l"), find(all, "ingest", "ratesweep inspect"), find(all, "ingest", "zcat"), find(all, "ingest", "ratesweep inspect gz"); rs != nil {
		fmt.Fprintf(w, "ingest: inspect reads %.3g Combined lines per CPU-second", float64(rs.points)/rs.cpu())
		if up := find(all, "ingest", "ratesweep inspect, 1 line"); up != nil && rs.cpu() > up.cpu() {
			fmt.Fprintf(w, ", %.3g beyond its start-up (%.3f CPU-s, the first line alone)", float64(rs.points)/(rs.cpu()-up.cpu()), up.cpu())
		}
		if wc != nil {
			fmt.Fprintf(w, ", %.1f× the CPU of wc -l", rs.cpu()/wc.cpu())
		}
		fmt.Fprintf(w, ", peak RSS %.0f MB: %.1f bytes per request, the runtime's fixed ~30 MB included (the log's own memory: go test ./ingest -bench LoadMemory)", rs.rssMB, rs.rssMB*(1<<20)/float64(rs.points))
		if zc != nil && rz != nil {
			fmt.Fprintf(w, "; from gzip: %.3g lines per CPU-second, decompression %.2f CPU-s (gz minus plain) against zcat's %.2f: %.2f×",
				float64(rz.points)/rz.cpu(), rz.cpu()-rs.cpu(), zc.cpu(), (rz.cpu()-rs.cpu())/zc.cpu())
		}
		fmt.Fprintln(w)
	}
	if big != nil {
		fmt.Fprintf(w, "peak RSS of %s (%d points, writing Parquet, 2 workers): %.0f MB in %.1f s\n",
			bigSpec, big.points, big.rssMB, big.wall())
	}
}
