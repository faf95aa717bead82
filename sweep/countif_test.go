package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/time/rate"

	"github.com/ratesweep/ratesweep/model"
)

// loginLog is a login endpoint's traffic over two minutes: a credential
// stuffer (6.6.6.6) trying once a second, every attempt but each 20th
// failing (401); a user (1.1.1.1) who mistypes twice then logs in; a busy
// user (2.2.2.2) whose 30 logins a minute all succeed.
type loginReq struct {
	ip     string
	s      int
	status int
}

func loginLog() []loginReq {
	var rs []loginReq
	for s := range 120 {
		st := 401
		if s%20 == 19 {
			st = 200
		}
		rs = append(rs, loginReq{"6.6.6.6", s, st})
		if s%2 == 0 {
			rs = append(rs, loginReq{"2.2.2.2", s, 200})
		}
		if s >= 30 && s < 33 {
			rs = append(rs, loginReq{"1.1.1.1", s, map[int]int{30: 401, 31: 401, 32: 200}[s]})
		}
	}
	return rs
}

// countIfAdmitted is count_if's rule for fixed_window written out: per key
// and 60 s window, a request is admitted iff fewer than limit matching
// requests were admitted in its window; only admitted matches count.
func countIfAdmitted(rs []loginReq, limit int, match func(int) bool) map[string]int64 {
	type kw struct {
		ip string
		w  int
	}
	counted := map[kw]int{}
	adm := map[string]int64{}
	for _, r := range rs {
		k := kw{r.ip, r.s / 60}
		if counted[k] < limit {
			adm[r.ip]++
			if match(r.status) {
				counted[k]++
			}
		}
	}
	return adm
}

// replayFirst replays the first policy of spec (a traffic section and its
// sweep), replicate 0, and returns the keys, each key's result and the
// metrics.
func replayFirst(t *testing.T, spec string) ([]string, []model.ClientResult, model.Metrics) {
	t.Helper()
	s, err := ParseSpec([]byte(spec), nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := newSource(context.Background(), s, false)
	if err != nil {
		t.Fatal(err)
	}
	names, _, _ := src.rows()
	sim := src.newSim()
	sim.setReplicate(0, 0)
	clients := make([]model.ClientResult, len(names))
	m := sim.run(NewGrid(s).Policy(0), clients)
	return names, clients, m
}

// runLog replays spec (a traffic section and one entry) and returns each
// key's admitted requests.
func runLog(t *testing.T, spec string) map[string]int64 {
	t.Helper()
	names, clients, _ := replayFirst(t, spec)
	out := map[string]int64{}
	for i, n := range names {
		out[n] = clients[i].Admitted
	}
	return out
}

// count_if from a log's status column, in CSV and Combined: the stuffer
// is held to 3 counted failures a minute, the user with two typos and the
// busy user are never cut, as the rule written out says.
func TestCountIfFromLog(t *testing.T) {
	rs := loginLog()
	dir := t.TempDir()
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var csv, combined strings.Builder
	csv.WriteString("ts,client,path,code\n")
	for _, r := range rs {
		at := day.Add(time.Duration(r.s) * time.Second)
		fmt.Fprintf(&csv, "%s,%s,/login,%d\n", at.Format(time.RFC3339), r.ip, r.status)
		fmt.Fprintf(&combined, "%s - - [%s] \"POST /login HTTP/1.1\" %d 12 \"-\" \"curl\"\n", r.ip, at.Format("02/Jan/2006:15:04:05 -0700"), r.status)
	}
	os.WriteFile(filepath.Join(dir, "log.csv"), []byte(csv.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "access.log"), []byte(combined.String()), 0o644)
	want := countIfAdmitted(rs, 3, func(s int) bool { return s == 401 || s == 403 })
	if want["6.6.6.6"] > 8 || want["1.1.1.1"] != 3 || want["2.2.2.2"] != 60 {
		t.Fatalf("the written-out rule gives %v", want)
	}
	for _, traffic := range []string{
		fmt.Sprintf("  log: %q\n  format: csv\n  csv: {time_format: rfc3339, columns: {time: ts, ip: client, path: path, status: code}}\n", filepath.Join(dir, "log.csv")),
		fmt.Sprintf("  log: %q\n  format: combined\n", filepath.Join(dir, "access.log")),
	} {
		spec := "name: login\ntraffic:\n" + traffic + "  top_keys: 10\nsweep:\n  - {algorithm: fixed_window, window_s: 60, limit: 3, count_if: {status: [401, 403]}}\n"
		got := runLog(t, spec)
		for ip, n := range want {
			if got[ip] != n {
				t.Errorf("%s: %s admitted %d, rule %d (all: %v)", traffic[:30], ip, got[ip], n, got)
			}
		}
		// Without count_if the same limit cuts the busy user.
		plain := runLog(t, strings.Replace(spec, ", count_if: {status: [401, 403]}", "", 1))
		if plain["2.2.2.2"] >= 60 {
			t.Errorf("without count_if the busy user got %d of 60", plain["2.2.2.2"])
		}
	}
}

// Costs from a traffic section's rules: each key's decisions over its
// requests equal x/time/rate's AllowN(t, cost) with the same costs.
func TestCostRulesFromLog(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type req struct {
		s    int
		path string
	}
	var rs []req
	var b strings.Builder
	for s := range 300 {
		path := "/rest/items"
		if s%3 == 0 {
			path = "/graphql?q=1"
		}
		rs = append(rs, req{s, path})
		fmt.Fprintf(&b, "9.9.9.9 - - [%s] \"POST %s HTTP/1.1\" 200 12 \"-\" \"app\"\n", day.Add(time.Duration(s)*time.Second).Format("02/Jan/2006:15:04:05 -0700"), path)
	}
	log := filepath.Join(dir, "access.log")
	os.WriteFile(log, []byte(b.String()), 0o644)
	lim := rate.NewLimiter(2, 25)
	var want int64
	for _, r := range rs {
		c := 1
		if strings.HasPrefix(r.path, "/graphql") {
			c = 10
		}
		if lim.AllowN(day.Add(time.Duration(r.s)*time.Second), c) {
			want++
		}
	}
	spec := fmt.Sprintf("name: cost\ntraffic:\n  log: %q\n  format: combined\n  cost: {rules: [{path_prefix: /graphql, cost: 10}], default: 1}\nsweep:\n  - {algorithm: token_bucket, rate: 2, capacity: 25}\n", log)
	got := runLog(t, spec)
	if got["9.9.9.9"] != want || want == 0 || want == 300 {
		t.Errorf("admitted %d, x/time/rate AllowN %d of 300", got["9.9.9.9"], want)
	}
	s, err := ParseSpec([]byte(spec), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Costed() || !NewGrid(s).Policy(0).Costed {
		t.Error("a traffic section with cost: does not make the policies Costed")
	}
	back, err := ParseSpec(s.YAML(), nil)
	if err != nil || string(back.YAML()) != string(s.YAML()) {
		t.Errorf("canonical spec does not read back: %v\n%s", err, s.YAML())
	}
}

// A scenario sweep with count_if and costs runs end to end: the policy
// column names the count_if, the canonical spec reads back, and a spec
// refuses count_if on what it cannot be.
func TestCountIfScenarioSweep(t *testing.T) {
	spec := `name: login
seed: 3
replicates: 2
scenario:
  name: login
  duration_s: 600
  arrivals: uniform
  clients:
    - {name: stuffer, class: abusive, stage: none, segments: [[0, 600, 1]], fail_share: 0.95, cost: 2}
    - {name: typos, class: legit, segments: [[100, 103, 1]], fail_share: 0.67, cost: 2}
sweep:
  - {algorithm: fixed_window, window_s: 300, limit: [10, 20], count_if: {status: [401]}}
  - {algorithm: token_bucket, rate: 0.1, capacity: 20, count_if: "401"}
`
	s, err := ParseSpec([]byte(spec), nil)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := ParseSpec(s.YAML(), nil); err != nil || string(back.YAML()) != string(s.YAML()) {
		t.Fatalf("canonical spec does not read back: %v\n%s", err, s.YAML())
	}
	out := t.TempDir()
	mustRun(t, s, Options{OutDir: out})
	rows, err := ReadPoints(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d points rows, want 6", len(rows))
	}
	for _, r := range rows {
		if r.FalseCut != 0 || r.MissedPct > 10 {
			t.Errorf("point %d rep %d: false cut %d, missed %.1f%%", r.PointID, r.Replicate, r.FalseCut, r.MissedPct)
		}
	}
	for _, bad := range []struct{ entry, msg string }{
		{`{algorithm: fixed_window, window_s: 60, limit: 5, count_if: {status: [99]}}`, "not an HTTP status"},
		{`{algorithm: fixed_window, window_s: 60, limit: 5, count_if: {}}`, "names no status"},
		{`{algorithm: nginx, rate: 1, burst: 5}`, "cannot spend"},
	} {
		_, err := ParseSpec([]byte(strings.Replace(spec, spec[strings.Index(spec, "sweep:"):], "sweep:\n  - "+bad.entry+"\n", 1)), nil)
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: error %v, want %q", bad.entry, err, bad.msg)
		}
	}
}

// The points column policy names an entry's count_if, reads back, and is
// what ReadPoints' rows say (PointRow.Key).
func TestCountIfPolicyColumn(t *testing.T) {
	spec := `name: label
scenario:
  name: s
  duration_s: 60
  clients:
    - {name: a, class: legit, segments: [[0, 60, 1]], fail_share: 0.5}
sweep:
  - {algorithm: fixed_window, window_s: 10, limit: [1, 2]}
  - {algorithm: fixed_window, window_s: 10, limit: [1, 2], count_if: {status_min: 400}}
`
	s, err := ParseSpec([]byte(spec), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	mustRun(t, s, Options{OutDir: out})
	labels, err := readPolicyColumn(t, out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fixed_window window_s=10 limit=1", "fixed_window window_s=10 limit=2",
		"fixed_window window_s=10 limit=1 count_if=400-599", "fixed_window window_s=10 limit=2 count_if=400-599"}
	if strings.Join(labels, "|") != strings.Join(want, "|") {
		t.Errorf("policy column %q, want %q", labels, want)
	}
	if n := checkPolicyColumn(t, out); n != 4 { // PointRow.Key names the count_if too
		t.Errorf("%d distinct labels, want 4", n)
	}
	for i, l := range labels {
		p, err := model.ParseLabel(l)
		if err != nil || p != NewGrid(s).Policy(int64(i)) || p.Canonical() != l {
			t.Errorf("%q reads back as %v, %v", l, p, err)
		}
	}
}

// readPolicyColumn returns the points column policy of a run, in row order.
func readPolicyColumn(t *testing.T, dir string) ([]string, error) {
	files, err := PartFiles(dir, "points")
	if err != nil {
		return nil, err
	}
	var labels []string
	for _, f := range files {
		err := ScanFile(context.Background(), f, []string{PolicyColumn}, func(rec arrow.RecordBatch) error {
			for i := range int(rec.NumRows()) {
				s, _ := String(rec.Column(0), i)
				labels = append(labels, s)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return labels, nil
}

// A count_if entry after a plain one in sweep: honours its condition on a
// replayed log whatever the order (the batch replays of the plain entry
// see times alone and must not take the count_if point along). One key,
// 8 requests 100 ms apart, every one a 401: capacity (limit) 5 of 8
// counted failures admits 5, catches 3; the plain entry's 4 catches 4.
func TestCountIfAfterPlainEntry(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString("ts,client,path,code\n")
	for i := range 8 {
		fmt.Fprintf(&b, "%s,1.1.1.1,/login,401\n", day.Add(time.Duration(i)*100*time.Millisecond).Format(time.RFC3339Nano))
	}
	log := filepath.Join(dir, "log.csv")
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{"token_bucket, rate: 1, capacity", "sliding_window, window_s: 10, limit",
		"fixed_window, window_s: 10, limit", "sliding_log, window_s: 10, limit", "gcra, rate: 1, capacity", "sliding_counter, window_s: 10, limit"} {
		plain := fmt.Sprintf("  - {algorithm: %s: 4}\n", alg)
		counted := fmt.Sprintf("  - {algorithm: %s: 5, count_if: {status: [401]}}\n", alg)
		for _, entries := range []string{plain + counted, counted + plain} {
			spec := fmt.Sprintf("name: x\ntraffic:\n  log: %q\n  format: csv\n  csv: {time_format: rfc3339, columns: {time: ts, ip: client, path: path, status: code}}\n  rules: [{name: stuffer, stage: none, status: 401}]\nsweep:\n%s", log, entries)
			_, rows, _ := runSpecText(t, spec, "x.yaml")
			if len(rows) != 2 {
				t.Fatalf("%d rows", len(rows))
			}
			for _, r := range rows {
				want := int64(4)
				if r.CountIf != "" {
					want = 3
				}
				if r.Caught != want || r.Missed != 8-want || r.FalseCut != 0 {
					t.Errorf("%s (entries %q): caught %d missed %d false cut %d, want caught %d", r.Key(), entries, r.Caught, r.Missed, r.FalseCut, want)
				}
			}
		}
	}
}
