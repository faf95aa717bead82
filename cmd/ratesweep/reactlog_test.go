package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/sweep"
	"golang.org/x/time/rate"
)

// reactLogSpec is a log spec whose abusive key retries at once and one
// legitimate key retries after the limiter's Retry-After.
const reactLogSpec = `name: log-reactions
traffic:
  log: access.log
  format: combined
  key: ip
  spread: none
  rules:
    - {name: crawler, stage: none, user_agent: bot}
  reactions:
    - match: {label: abusive}
      on_reject: {retry: immediate, max_retries: 3}
    - match: {keys: ["10.0.0.2"]}
      on_reject: {retry: immediate, max_retries: 5, honour_retry_after: true}
sweep:
  - algorithm: token_bucket
    rate: [0.5, 1]
    capacity: [1, 3]
`

// writeReactLog writes a 60-second combined log: 10.0.0.1 (a crawler)
// sends 1 to 5 requests a second, 10.0.0.2 two every other second,
// 10.0.0.3 one every third; it returns each key's request seconds.
func writeReactLog(t *testing.T, dir string) map[string][]int64 {
	var b strings.Builder
	keys := map[string][]int64{}
	line := func(host, ua string, s int) {
		fmt.Fprintf(&b, "%s - - [01/Jan/2026:00:00:%02d +0000] \"GET /api HTTP/1.1\" 200 2 \"-\" \"%s\"\n", host, s, ua)
		keys[host] = append(keys[host], int64(s))
	}
	for s := range 60 {
		for range 1 + s%5 {
			line("10.0.0.1", "bot/1", s)
		}
		if s%2 == 0 {
			line("10.0.0.2", "curl/8", s)
			line("10.0.0.2", "curl/8", s)
		}
		if s%3 == 0 {
			line("10.0.0.3", "curl/8", s)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "access.log"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return keys
}

// oracleKey replays one key's requests (whole seconds) through
// golang.org/x/time/rate with its client's retries: immediate, up to
// maxRetries, after Reservation.Delay when honour; intended requests go
// before retries at one instant, retries in the order made, none at or
// after endS. It returns attempts, served intended requests and gave up.
func oracleKey(secs []int64, r rate.Limit, burst, maxRetries int, honour bool, endS int64) (attempts, served, gaveUp int64) {
	t0 := time.Unix(1767225600, 0)
	lim := rate.NewLimiter(r, burst)
	type retry struct {
		at  time.Time
		try int
	}
	var queue []retry // in the order made; times never decrease along it
	end := t0.Add(time.Duration(endS) * time.Second)
	next := 0
	for next < len(secs) || len(queue) > 0 {
		var at time.Time
		try := 0
		if next < len(secs) && (len(queue) == 0 || !t0.Add(time.Duration(secs[next])*time.Second).After(queue[0].at)) {
			at = t0.Add(time.Duration(secs[next]) * time.Second)
			next++
		} else {
			at, try = queue[0].at, queue[0].try
			queue = queue[1:]
		}
		attempts++
		if lim.AllowN(at, 1) {
			served++
			continue
		}
		if try >= maxRetries {
			gaveUp++
			continue
		}
		when := at
		if honour {
			res := lim.ReserveN(at, 1)
			when = at.Add(res.DelayFrom(at))
			res.CancelAt(at)
		}
		if !when.Before(end) {
			gaveUp++
			continue
		}
		queue = append(queue, retry{when, try + 1})
		slices.SortStableFunc(queue, func(a, b retry) int { return a.at.Compare(b.at) })
	}
	return attempts, served, gaveUp
}

// ratesweep run on a log with reaction rules: the abusive key's immediate
// retries and a legitimate key's retries after the Retry-After give the
// attempts, served requests and give-ups golang.org/x/time/rate gives for
// the same requests and retries; a key without a rule is replayed as
// logged; one worker or three write the same files.
func TestRunLogWithReactionRules(t *testing.T) {
	dir := t.TempDir()
	keys := writeReactLog(t, dir)
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(reactLogSpec), 0o644)
	var runs []string
	for _, w := range []string{"1", "3"} {
		out := filepath.Join(dir, "out"+w)
		if code, _, stderr := runCLI(t, "run", spec, "--out", out, "-q", "--workers", w); code != 0 {
			t.Fatalf("run --workers %s: exit %d: %s", w, code, stderr)
		}
		runs = append(runs, out)
	}
	for _, part := range []string{"points", "clients"} {
		a, _ := filepath.Glob(filepath.Join(runs[0], part, "*.parquet"))
		b, _ := filepath.Glob(filepath.Join(runs[1], part, "*.parquet"))
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("%s: %d and %d files", part, len(a), len(b))
		}
		for i := range a {
			x, _ := os.ReadFile(a[i])
			y, _ := os.ReadFile(b[i])
			if string(x) != string(y) {
				t.Errorf("%s: --workers 1 and 3 differ", filepath.Base(a[i]))
			}
		}
	}
	rows, err := sweep.ReadPoints(context.Background(), runs[0])
	if err != nil || len(rows) != 4 {
		t.Fatalf("%v, %d rows", err, len(rows))
	}
	clientAttempts := readClientAttempts(t, runs[0])
	for _, r := range rows {
		lim, burst := rate.Limit(r.Params["rate"]), int(r.Params["capacity"])
		a1, s1, g1 := oracleKey(keys["10.0.0.1"], lim, burst, 3, false, 60)
		a2, s2, g2 := oracleKey(keys["10.0.0.2"], lim, burst, 5, true, 60)
		a3, s3, g3 := oracleKey(keys["10.0.0.3"], lim, burst, 0, false, 60)
		offered1, offeredLegit := int64(len(keys["10.0.0.1"])), int64(len(keys["10.0.0.2"])+len(keys["10.0.0.3"]))
		x := r.Reactions
		got := []int64{x.AttemptsAbusive, r.Missed, x.AttemptsLegit, offeredLegit - r.FalseCut, x.GaveUp, r.OfferedAbusive, r.OfferedLegit}
		want := []int64{a1, s1, a2 + a3, s2 + s3, g1 + g2 + g3, offered1, offeredLegit}
		if !slices.Equal(got, want) {
			t.Errorf("%s: attempts abusive, missed, attempts legit, legit served, gave up, offered abusive, legit %v; x/time/rate %v", r.Key(), got, want)
		}
		if a3 != int64(len(keys["10.0.0.3"])) || a1 <= offered1 && s1 < offered1 {
			t.Errorf("%s: the oracle's attempts %d, %d do not show the retries", r.Key(), a1, a3)
		}
		ca := clientAttempts[r.PointID]
		if ca["10.0.0.1"] != a1 || ca["10.0.0.2"] != a2 || ca["10.0.0.3"] != a3 {
			t.Errorf("%s: clients attempts %v; x/time/rate %d %d %d", r.Key(), ca, a1, a2, a3)
		}
	}
}

// readClientAttempts reads the clients files' attempts by point and client.
func readClientAttempts(t *testing.T, dir string) map[int64]map[string]int64 {
	files, err := sweep.PartFiles(dir, "clients")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]map[string]int64{}
	for _, f := range files {
		err := sweep.ScanFile(context.Background(), f, []string{"point_id", "client", "attempts"}, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				id, _ := sweep.Int(c[0], i)
				name, _ := sweep.String(c[1], i)
				n, _ := sweep.Int(c[2], i)
				if out[id] == nil {
					out[id] = map[string]int64{}
				}
				out[id][name] = n
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// A bad reaction rule is refused with exit 2 and the field's path and line.
func TestRunLogBadReactionRule(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"max_retries: 3}", "max_retries: 0}", "traffic.reactions[0].on_reject.max_retries"},
		{"match: {label: abusive}", "match: {label: abusiv}", "traffic.reactions[0].match.label"},
		{"match: {label: abusive}", "match: {rule: crawlr}", "traffic.reactions[0].match.rule"},
		{"match: {label: abusive}", "match: {}", "traffic.reactions[0].match"},
		{"on_reject: {retry: immediate, max_retries: 3}", "on_reject: none", "traffic.reactions[0]"},
		{"retry: immediate, max_retries: 5", "retry: later, max_retries: 5", "traffic.reactions[1].on_reject.retry"},
		{"capacity: [1, 3]", "capacity: [1, 3]\n  - algorithm: token_bucket\n    rate: 1\n    capacity: 1\n    nodes: 2", "sweep[1].nodes"},
	} {
		dir := t.TempDir()
		writeReactLog(t, dir)
		spec := filepath.Join(dir, "spec.yaml")
		os.WriteFile(spec, []byte(strings.Replace(reactLogSpec, c.from, c.to, 1)), 0o644)
		code, _, stderr := runCLI(t, "run", spec, "--out", filepath.Join(dir, "out"), "-q")
		if code != 2 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "spec.yaml:") || strings.Contains(stderr, "goroutine") {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 naming spec.yaml:LINE and %s", c.to, code, stderr, c.want)
		}
	}
}
