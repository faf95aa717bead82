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
)

// overlayReactSpec overlays two identical attackers on a small log; the
// first retries at once.
const overlayReactSpec = `name: overlay-reactions
seed: 3
traffic:
  log: access.log
  format: combined
  key: ip
overlay:
  name: attacks
  duration_s: 60
  arrivals: poisson
  clients:
    - {name: stuffer, class: abusive, stage: code, segments: [[0, 60, 6]], on_reject: {retry: immediate, max_retries: 3}}
    - {name: quiet twin, class: abusive, stage: code, segments: [[0, 60, 6]]}
sweep:
  - algorithm: token_bucket
    rate: [1, 4]
    capacity: [1, 5]
  - algorithm: fixed_window
    window_s: 10
    limit: [5, 40]
`

// An overlay attacker that reacts: against a token bucket its immediate
// retries meet the same empty bucket, so it makes 1 + 3 attempts per
// request the limit rejects and gets no more through; the attacker that
// does not react and the log's keys are replayed exactly as in the same
// run without the reaction.
func TestOverlayAttackerReacts(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for s := range 60 {
		for k := range 1 + s%3 {
			fmt.Fprintf(&b, "10.0.0.%d - - [01/Jan/2026:00:00:%02d +0000] \"GET / HTTP/1.1\" 200 2 \"-\" \"curl/8\"\n", 1+k, s)
		}
	}
	os.WriteFile(filepath.Join(dir, "access.log"), []byte(b.String()), 0o644)
	runSpec := func(name, text string) string {
		f := filepath.Join(dir, name+".yaml")
		os.WriteFile(f, []byte(text), 0o644)
		s, err := LoadSpec(f)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name)
		mustRun(t, s, Options{OutDir: out, Workers: 2})
		return out
	}
	react := runSpec("react", overlayReactSpec)
	plain := runSpec("plain", strings.Replace(overlayReactSpec, ", on_reject: {retry: immediate, max_retries: 3}", "", 1))
	rc, err := ReadClients(context.Background(), react)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := ReadClients(context.Background(), plain)
	if err != nil || len(rc) != len(pc) {
		t.Fatalf("%v: %d and %d clients rows", err, len(rc), len(pc))
	}
	attempts := clientInts(t, react, "attempts")
	rejectedSomewhere := false
	for i, r := range rc {
		p := pc[i]
		key := fmt.Sprint(r.PointID, r.Client)
		switch {
		case r.Client == "stuffer" && strings.HasPrefix(algorithmOf(t, react, r.PointID), "token_bucket"):
			if r.Admitted != p.Admitted || attempts[key] != r.Offered+3*(r.Offered-r.Admitted) {
				t.Errorf("point %d stuffer: admitted %d (without the reaction %d), attempts %d of %d offered: want 1 + 3 per rejected request",
					r.PointID, r.Admitted, p.Admitted, attempts[key], r.Offered)
			}
			rejectedSomewhere = rejectedSomewhere || r.Admitted < r.Offered
		case r.Client == "stuffer":
			if attempts[key] < r.Offered || r.Admitted < p.Admitted {
				t.Errorf("point %d stuffer: attempts %d, admitted %d of %d (without the reaction %d)", r.PointID, attempts[key], r.Admitted, r.Offered, p.Admitted)
			}
		default:
			if r != p || attempts[key] != r.Offered {
				t.Errorf("point %d %s: %+v, attempts %d; without the reaction %+v", r.PointID, r.Client, r, attempts[key], p)
			}
		}
	}
	if !rejectedSomewhere {
		t.Error("no token bucket point rejects the stuffer")
	}
}

// clientInts reads an int64 clients column by "point_id client".
func clientInts(t *testing.T, dir, col string) map[string]int64 {
	files, err := PartFiles(dir, "clients")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, f := range files {
		err := ScanFile(context.Background(), f, []string{"point_id", "client", col}, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				id, _ := Int(c[0], i)
				name, _ := String(c[1], i)
				out[fmt.Sprint(id, name)], _ = Int(c[2], i)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// algorithmOf is the algorithm of a point of a run.
func algorithmOf(t *testing.T, dir string, id int64) string {
	rows, err := ReadPoints(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.PointID == id {
			return r.Algorithm
		}
	}
	return ""
}

// A log whose clients react is not split into key shards: the refusal says
// why and what to do.
func TestLogReactionsRefuseKeyShards(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "access.log"), []byte("10.0.0.1 - - [01/Jan/2026:00:00:00 +0000] \"GET / HTTP/1.1\" 200 2 \"-\" \"curl/8\"\n"), 0o644)
	f := filepath.Join(dir, "spec.yaml")
	os.WriteFile(f, []byte(strings.Replace(overlayReactSpec, "overlay:", "  reactions: [{match: all, on_reject: {retry: immediate, max_retries: 2}}]\noverlay:", 1)), 0o644)
	s, err := LoadSpec(f)
	if err != nil {
		t.Fatal(err)
	}
	s.Traffic.Overlay = nil
	if err := CheckKeySharding(s); err == nil || !strings.Contains(err.Error(), "react") || !strings.Contains(err.Error(), "without --shard-by key") {
		t.Errorf("error %v: want one refusing key shards of a log whose clients react", err)
	}
}

// A log with costs whose clients react: a retry repeats its request and
// costs what it cost. One key, a 4-unit request a second, token_bucket
// rate 1 capacity 10, an immediate retry (which the bucket refuses again
// at the same instant): the units served are x/time/rate's AllowN(t, 4),
// the attempts one more per refused request.
func TestReactionsWithCostsOnLog(t *testing.T) {
	var statuses []int
	var paths []string
	for range 60 {
		statuses, paths = append(statuses, 200), append(paths, "/graphql")
	}
	log := writeStatusLog(t, statuses, paths)
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lim := rate.NewLimiter(1, 10)
	var served, refused int64
	for i := range 60 {
		if lim.AllowN(day.Add(time.Duration(i)*time.Second), 4) {
			served++
		} else {
			refused++
		}
	}
	spec := fmt.Sprintf(`name: x
traffic:
  log: %q
  format: csv
  csv: {time_format: rfc3339, columns: {time: ts, ip: client, path: path, status: code}}
  cost: {rules: [{path_prefix: /graphql, cost: 4}], default: 1}
  reactions: [{match: all, on_reject: {retry: immediate, max_retries: 1}}]
sweep:
  - {algorithm: token_bucket, rate: 1, capacity: 10}
`, log)
	_, rows, _ := runSpecText(t, spec, "x.yaml")
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	r := rows[0]
	if r.FalseCut != refused || r.Cost.FalseCut != 4*refused || r.Reactions.AttemptsLegit != 60+refused || served == 0 || refused == 0 {
		t.Errorf("false cut %d (%d units), attempts %d; x/time/rate serves %d of 60, refuses %d", r.FalseCut, r.Cost.FalseCut, r.Reactions.AttemptsLegit, served, refused)
	}
}
