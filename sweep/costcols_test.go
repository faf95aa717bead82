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

// costTotals are the points cost columns of one row, or an oracle's.
type costTotals struct{ offeredLegit, offeredAbusive, caught, missed, falseCut int64 }

// add counts a request costing n, legitimate or not, admitted or not.
func (c *costTotals) add(legit bool, n int64, ok bool) {
	switch {
	case legit:
		c.offeredLegit += n
		if !ok {
			c.falseCut += n
		}
	case ok:
		c.offeredAbusive += n
		c.missed += n
	default:
		c.offeredAbusive += n
		c.caught += n
	}
}

// costRows reads a run's points cost columns by (point_id, replicate) and
// its clients cost columns by "point_id/replicate/client".
func costRows(t *testing.T, dir string) (map[[2]int64]costTotals, map[string][2]int64) {
	t.Helper()
	points := map[[2]int64]costTotals{}
	files, err := PartFiles(dir, "points")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !HasCosts(f) {
			t.Fatalf("%s has no cost columns", f)
		}
		err := ScanFile(context.Background(), f, append([]string{"point_id", "replicate"}, CostColumns()...), func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				v := make([]int64, len(c))
				for k := range c {
					v[k], _ = Int(c[k], i)
				}
				points[[2]int64{v[0], v[1]}] = costTotals{v[2], v[3], v[4], v[5], v[6]}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	clients := map[string][2]int64{}
	files, err = PartFiles(dir, "clients")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		err := ScanFile(context.Background(), f, []string{"point_id", "replicate", "client", "offered_cost", "cut_cost"}, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				id, _ := Int(c[0], i)
				rep, _ := Int(c[1], i)
				name, _ := String(c[2], i)
				off, _ := Int(c[3], i)
				cut, _ := Int(c[4], i)
				clients[fmt.Sprintf("%d/%d/%s", id, rep, name)] = [2]int64{off, cut}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return points, clients
}

// A costed scenario writes the cost totals: token_bucket's equal an
// independent loop over the scenario's requests deciding each with
// x/time/rate's AllowN(t, cost) on one limiter per client; every
// algorithm's clients cost columns are its requests times the client's
// cost, and the points totals their sums by class.
func TestCostColumnsScenario(t *testing.T) {
	spec := `name: costed
seed: 5
replicates: 2
scenario:
  name: costed
  duration_s: 120
  arrivals: uniform
  clients:
    - {name: app, class: legit, segments: [[0, 120, 2]]}
    - {name: reports, class: legit, segments: [[0, 60, 2]], cost: 3}
    - {name: scraper, class: abusive, stage: none, segments: [[10, 120, 4]], cost: 2}
    - {name: exporter, class: abusive, stage: code, segments: [[30, 50, 8]], cost: 5}
sweep:
  - {algorithm: token_bucket, rate: 4, capacity: [6, 12]}
  - {algorithm: fixed_window, window_s: 10, limit: [20, 40]}
  - {algorithm: gcra, rate: 4, capacity: 8}
`
	s, err := ParseSpec([]byte(spec), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	mustRun(t, s, Options{OutDir: out, Workers: 2})
	points, clients := costRows(t, out)
	g := NewGrid(s)
	if int64(len(points)) != g.Points()*2 {
		t.Fatalf("%d points rows with costs, want %d", len(points), g.Points()*2)
	}
	cl, err := ReadClients(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	cost := map[string]int64{"app": 1, "reports": 3, "scraper": 2, "exporter": 5}
	sums := map[[2]int64]*costTotals{}
	for _, c := range cl {
		k := [2]int64{c.PointID, int64(c.Replicate)}
		got := clients[fmt.Sprintf("%d/%d/%s", c.PointID, c.Replicate, c.Client)]
		if want := [2]int64{c.Offered * cost[c.Client], c.Cut * cost[c.Client]}; got != want {
			t.Errorf("point %d rep %d %s: offered_cost, cut_cost %v, want %v", c.PointID, c.Replicate, c.Client, got, want)
		}
		if sums[k] == nil {
			sums[k] = &costTotals{}
		}
		if c.Class == "legit" {
			sums[k].offeredLegit += got[0]
			sums[k].falseCut += got[1]
		} else {
			sums[k].offeredAbusive += got[0]
			sums[k].caught += got[1]
			sums[k].missed += got[0] - got[1]
		}
	}
	for k, p := range points {
		if sums[k] == nil || *sums[k] != p {
			t.Errorf("point %v: points cost columns %+v, clients sum %+v", k, p, sums[k])
		}
	}
	// The oracle: the same requests, decided by x/time/rate.
	w, err := model.NewWorkload(s.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for id := range int64(2) {
		capacity := []int{6, 12}[id]
		for rep := range 2 {
			var want costTotals
			for i, times := range w.Realise(s.Seed, rep, nil) {
				c := &s.Scenario.Clients[i]
				lim := rate.NewLimiter(4, capacity)
				for _, tn := range times {
					n := c.RequestCost()
					want.add(c.Class == model.Legit, n, lim.AllowN(t0.Add(time.Duration(tn)), int(n)))
				}
			}
			if got := points[[2]int64{id, int64(rep)}]; got != want || want.falseCut == 0 || want.caught == 0 {
				t.Errorf("token_bucket capacity %d rep %d: cost columns %+v, x/time/rate %+v", capacity, rep, got, want)
			}
		}
	}
}

// A costed log writes the cost totals, the costs from response bytes or
// from path rules: they equal an independent loop over the log's requests
// deciding each key's with x/time/rate's AllowN(t, cost).
func TestCostColumnsLog(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type req struct {
		ip    string
		s     int
		path  string
		bytes int64
	}
	var rs []req
	var b strings.Builder
	for s := range 600 {
		for _, ip := range []string{"1.1.1.1", "2.2.2.2", "6.6.6.6"} {
			if ip == "2.2.2.2" && s%4 != 0 || ip == "6.6.6.6" && s < 200 {
				continue
			}
			path, bytes := "/rest/items", int64(300+(s*37)%900)
			if s%3 == 0 {
				path = "/graphql?q=1"
			}
			if ip == "6.6.6.6" {
				path = "/graphql/bulk"
			}
			rs = append(rs, req{ip, s, path, bytes})
			fmt.Fprintf(&b, "%s - - [%s] \"POST %s HTTP/1.1\" 200 %d \"-\" \"app\"\n", ip, day.Add(time.Duration(s)*time.Second).Format("02/Jan/2006:15:04:05 -0700"), path, bytes)
		}
	}
	log := filepath.Join(dir, "access.log")
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cost string
		of         func(r req) int64
	}{
		{"bytes", "{field: bytes, unit_bytes: 256}", func(r req) int64 { return (r.bytes + 255) / 256 }},
		{"rules", "{rules: [{path_prefix: /graphql/bulk, cost: 8}, {path_prefix: /graphql, cost: 5}], default: 1}", func(r req) int64 {
			switch {
			case strings.HasPrefix(r.path, "/graphql/bulk"):
				return 8
			case strings.HasPrefix(r.path, "/graphql"):
				return 5
			}
			return 1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := fmt.Sprintf(`name: cost
traffic:
  log: %q
  format: combined
  spread: none
  rules: [{name: bulk, stage: none, keys: [6.6.6.6]}]
  cost: %s
sweep:
  - {algorithm: token_bucket, rate: 2, capacity: [10, 30]}
`, log, tc.cost)
			s, err := ParseSpec([]byte(spec), nil)
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			mustRun(t, s, Options{OutDir: out, Workers: 2})
			points, clients := costRows(t, out)
			for id, capacity := range []int{10, 30} {
				var want costTotals
				perKey := map[string][2]int64{}
				lims := map[string]*rate.Limiter{}
				for _, r := range rs {
					if lims[r.ip] == nil {
						lims[r.ip] = rate.NewLimiter(2, capacity)
					}
					n := tc.of(r)
					ok := lims[r.ip].AllowN(day.Add(time.Duration(r.s)*time.Second), int(n))
					k := perKey[r.ip]
					k[0] += n
					if !ok {
						k[1] += n
					}
					perKey[r.ip] = k
					want.add(r.ip != "6.6.6.6", n, ok)
				}
				if got := points[[2]int64{int64(id), 0}]; got != want || want.falseCut == 0 || want.caught == 0 {
					t.Errorf("capacity %d: cost columns %+v, x/time/rate %+v", capacity, got, want)
				}
				for ip, w := range perKey {
					if got := clients[fmt.Sprintf("%d/0/%s", id, ip)]; got != w {
						t.Errorf("capacity %d key %s: offered_cost, cut_cost %v, x/time/rate %v", capacity, ip, got, w)
					}
				}
			}
			rows, err := ReadPoints(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if !r.Cost.Measured || r.Cost != (model.CostMetrics{Measured: true, OfferedLegit: points[[2]int64{r.PointID, 0}].offeredLegit,
					OfferedAbusive: points[[2]int64{r.PointID, 0}].offeredAbusive, Caught: points[[2]int64{r.PointID, 0}].caught,
					Missed: points[[2]int64{r.PointID, 0}].missed, FalseCut: points[[2]int64{r.PointID, 0}].falseCut}) {
					t.Errorf("ReadPoints point %d: cost %+v", r.PointID, r.Cost)
				}
			}
		})
	}
}

// A run whose requests carry no costs has no cost columns.
func TestNoCostColumns(t *testing.T) {
	s, err := ParseSpec([]byte(`name: plain
scenario:
  name: plain
  duration_s: 60
  clients:
    - {name: app, class: legit, segments: [[0, 60, 2]], fail_share: 0.5}
sweep:
  - {algorithm: token_bucket, rate: 1, capacity: [2, 4], count_if: "401"}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	mustRun(t, s, Options{OutDir: out})
	for _, sub := range []string{"points", "clients"} {
		files, err := PartFiles(out, sub)
		if err != nil || len(files) == 0 {
			t.Fatal(err, files)
		}
		schema, err := fileSchema(files[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range schema.Fields() {
			if strings.HasSuffix(f.Name, "_cost") {
				t.Errorf("%s: column %s in a run without costs", sub, f.Name)
			}
		}
	}
}

// Key shards of a log whose requests carry costs merged equal the run over
// the whole log, byte for byte, cost columns included.
func TestKeyShardsMergeCosts(t *testing.T) {
	dir := t.TempDir()
	writeZipfLog(t, filepath.Join(dir, "zipf.log"), 20000, 2000, 1)
	p := filepath.Join(dir, "cost.yaml")
	os.WriteFile(p, []byte("name: cost\ntraffic:\n  log: zipf.log\n  format: combined\n  top_keys: 12\n  cost: {rules: [{path: /p3, cost: 5}, {path_prefix: /p4, cost: 2}]}\n  rules:\n"+
		"    - {name: crawler, stage: none, user_agent: bot}\n"+
		"sweep:\n  - {algorithm: token_bucket, rate: [1, 4], capacity: [10, 40]}\n  - {algorithm: fixed_window, window_s: 60, limit: [20, 80]}\n"), 0o644)
	spec, err := LoadSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	mustRun(t, spec, Options{OutDir: whole})
	if points, _ := costRows(t, whole); len(points) != 6 {
		t.Fatalf("%d points rows with costs, want 6", len(points))
	}
	for _, n := range []int{2, 3} {
		out := filepath.Join(t.TempDir(), fmt.Sprint(n))
		runKeySharded(t, spec, out, n)
		sameRunFiles(t, whole, out)
	}
}
