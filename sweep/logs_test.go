package sweep

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Several logs (days) are a sweep's replicates: replicate r replays log r,
// the clients rows are one per label in every replicate, and the workload
// hash covers every log's bytes.
func TestSeveralLogsAsReplicates(t *testing.T) {
	dir := t.TempDir()
	line := func(ip string, s int, status int) string {
		return fmt.Sprintf("%s - - [01/Jan/2026:00:%02d:%02d +0000] \"GET / HTTP/1.1\" %d 1\n", ip, s/60, s%60, status)
	}
	var d1, d2 strings.Builder
	for s := range 120 {
		d1.WriteString(line("1.1.1.1", s, 200))
		if s%2 == 0 {
			d2.WriteString(line("2.2.2.2", s, 404))
		}
	}
	d2.WriteString(line("3.3.3.3", 7, 200))
	os.WriteFile(filepath.Join(dir, "day1.log"), []byte(d1.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "day2.log"), []byte(d2.String()), 0o644)
	spec := func(extra string) string {
		return "name: days\n" + extra + "traffic:\n  log: [day1.log, day2.log]\n  format: clf\n  rules:\n    - {name: missing, stage: design, status: 404}\n" +
			"sweep:\n  - algorithm: fixed_window\n    window_s: 60\n    limit: [10, 100]\n"
	}
	path := filepath.Join(dir, "spec.yaml")
	os.WriteFile(path, []byte(spec("")), 0o644)
	s, err := LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Replicates != 2 || len(s.Traffic.Logs) != 2 {
		t.Fatalf("replicates %d, logs %v", s.Replicates, s.Traffic.Logs)
	}
	out := t.TempDir()
	res := mustRun(t, s, Options{OutDir: out})
	if res.Log == nil || len(res.Log.Logs) != 2 || res.Log.Used != 181 || res.Log.Logs[1].Used != 61 {
		t.Errorf("accounting %+v", res.Log)
	}
	rows, err := ReadPoints(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		want := map[int32]int64{0: 120, 1: 61}[r.Replicate]
		if r.OfferedLegit+r.OfferedAbusive != want {
			t.Errorf("%s replicate %d: %d offered, want %d", r.Key(), r.Replicate, r.OfferedLegit+r.OfferedAbusive, want)
		}
	}
	clients, err := ReadClients(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range clients {
		names[c.Client] = true
	}
	var ns []string
	for n := range names {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	if strings.Join(ns, "|") != "keys (abusive, design)|keys (legit)" {
		t.Errorf("clients rows %v", ns)
	}
	// The hash covers the second log's bytes.
	h1, _ := s.WorkloadSHA256()
	os.WriteFile(filepath.Join(dir, "day2.log"), []byte(d2.String()+line("4.4.4.4", 9, 200)), 0o644)
	if h2, _ := s.WorkloadSHA256(); h1 == h2 {
		t.Error("the workload hash ignores the second log")
	}
	os.WriteFile(path, []byte(spec("replicates: 3\n")), 0o644)
	if _, err := LoadSpec(path); err == nil || !strings.Contains(err.Error(), "replicates must be 2") {
		t.Errorf("replicates 3 over 2 logs: %v", err)
	}
}

// splitByDay writes a gzip log's lines into one file per UTC day (Combined
// Log Format), returning the files in day order.
func splitByDay(t *testing.T, src, dir string) []string {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	days := map[string]*strings.Builder{}
	for _, l := range strings.Split(string(data), "\n") {
		i := strings.IndexByte(l, '[')
		if i < 0 || len(l) < i+12 {
			continue
		}
		d := l[i+1 : i+12]
		if days[d] == nil {
			days[d] = &strings.Builder{}
		}
		days[d].WriteString(l + "\n")
	}
	var keys []string
	for d := range days {
		keys = append(keys, d)
	}
	sort.Strings(keys)
	var files []string
	for _, d := range keys {
		p := filepath.Join(dir, strings.ReplaceAll(d, "/", "-")+".log")
		os.WriteFile(p, []byte(days[d].String()), 0o644)
		files = append(files, p)
	}
	return files
}

// Pick on one day, measure on the next: the elastic log's four days as
// replicates. For each day, the fixed window limit with the fewest misses
// whose false cut is at most 1 % that day, and that limit's false cut on
// the next day (the out-of-sample false cut). go test ./sweep -run
// TestOutOfSampleFalseCut -v prints the table of docs/logs.md.
func TestOutOfSampleFalseCut(t *testing.T) {
	dir := t.TempDir()
	files := splitByDay(t, filepath.Join("..", "configs", "examples", "logs", "elastic_apache_logs", "apache_logs.gz"), dir)
	if len(files) < 3 {
		t.Fatalf("%d days", len(files))
	}
	var list []string
	for _, f := range files {
		list = append(list, fmt.Sprintf("%q", filepath.Base(f)))
	}
	spec := "name: elastic-days\ntraffic:\n  log: [" + strings.Join(list, ", ") + "]\n  format: combined\n  spread: even\n" +
		"  rules:\n    - {name: crawler, stage: none, user_agent: '(?i)bot|crawl|spider'}\n" +
		"sweep:\n  - algorithm: fixed_window\n    window_s: [60]\n    limit: {from: 1, to: 300, step: 1}\n"
	path := filepath.Join(dir, "spec.yaml")
	os.WriteFile(path, []byte(spec), 0o644)
	s, err := LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	mustRun(t, s, Options{OutDir: out})
	rows, err := ReadPoints(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	type cell struct{ cut, missed float64 }
	byDay := map[int32]map[float64]cell{}
	for _, r := range rows {
		if byDay[r.Replicate] == nil {
			byDay[r.Replicate] = map[float64]cell{}
		}
		byDay[r.Replicate][r.Params["limit"]] = cell{r.LegitCutPct, r.MissedPct}
	}
	var b strings.Builder
	b.WriteString("| picked on | limit / 60 s (false cut ≤ 1 %, fewest missed) | false cut that day | measured on | false cut there | missed there |\n|---|---:|---:|---|---:|---:|\n")
	worse := 0
	for d := 0; d+1 < len(files); d++ {
		best := -1.0
		for l := 1.0; l <= 300; l++ {
			if c := byDay[int32(d)][l]; c.cut <= 1 {
				best = l
				break
			}
		}
		if best < 0 {
			t.Fatalf("day %d: no limit cuts at most 1 %%", d)
		}
		in, next := byDay[int32(d)][best], byDay[int32(d+1)][best]
		if next.cut > in.cut {
			worse++
		}
		fmt.Fprintf(&b, "| %s | %g | %.2f %% | %s | %.2f %% | %.1f %% |\n", strings.TrimSuffix(filepath.Base(files[d]), ".log"), best, in.cut,
			strings.TrimSuffix(filepath.Base(files[d+1]), ".log"), next.cut, next.missed)
	}
	t.Logf("\n%s\n%d of %d next days cut more than the day the limit was picked on", b.String(), worse, len(files)-1)
}

// A rotated set (log: {files: ..., as: one}) is one log: one replicate with
// every file's requests, and a workload hash that changes with any file.
func TestRotatedSetIsOneLog(t *testing.T) {
	dir := t.TempDir()
	var old, cur strings.Builder
	for s := range 60 {
		fmt.Fprintf(&old, "1.1.1.1 - - [01/Jan/2026:00:00:%02d +0000] \"GET / HTTP/1.1\" 200 1\n", s)
		fmt.Fprintf(&cur, "2.2.2.2 - - [01/Jan/2026:00:01:%02d +0000] \"GET / HTTP/1.1\" 200 1\n", s)
	}
	os.WriteFile(filepath.Join(dir, "access.log.1"), []byte(old.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "access.log"), []byte(cur.String()), 0o644)
	path := filepath.Join(dir, "spec.yaml")
	os.WriteFile(path, []byte("name: set\ntraffic:\n  log: {files: 'access.log*', as: one}\n  format: clf\n"+
		"sweep:\n  - algorithm: fixed_window\n    window_s: 60\n    limit: [10]\n"), 0o644)
	s, err := LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Replicates != 1 {
		t.Fatalf("replicates %d", s.Replicates)
	}
	h1, err := s.WorkloadSHA256()
	if err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, s, Options{OutDir: t.TempDir()})
	if res.Log == nil || res.Log.Used != 120 {
		t.Errorf("accounting %+v", res.Log)
	}
	os.WriteFile(filepath.Join(dir, "access.log"), []byte(cur.String()+cur.String()[:60]+"\n"), 0o644)
	if h2, err := s.WorkloadSHA256(); err != nil || h2 == h1 {
		t.Errorf("hash unchanged after the second file changed: %v", err)
	}
}
