package report

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// A run whose requests carry costs shows the cost totals beside the
// requests in the trade-off and pick tables: each frontier row's equal the
// clients rows' requests cut times each client's cost; other runs' tables
// have no cost column.
func TestTablesShowCost(t *testing.T) {
	spec, err := sweep.ParseSpec([]byte(`name: cost
replicates: 2
scenario:
  name: s
  duration_s: 300
  arrivals: poisson
  clients:
    - {name: app, class: legit, segments: [[0, 300, 2]]}
    - {name: reports, class: legit, segments: [[0, 300, 1]], cost: 6}
    - {name: scraper, class: abusive, stage: none, segments: [[0, 300, 8]], cost: 3}
sweep:
  - {algorithm: token_bucket, rate: [4, 8, 16], capacity: {from: 6, to: 40, step: 2}}
  - {algorithm: fixed_window, window_s: 10, limit: {from: 20, to: 200, step: 20}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	clients, err := sweep.ReadClients(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	cost := map[string]int64{"app": 1, "reports": 6, "scraper": 3}
	want := map[int64][3]int64{} // by point: caught, missed, false cut cost over both replicates
	for _, c := range clients {
		w := want[c.PointID]
		if c.Class == "legit" {
			w[2] += c.Cut * cost[c.Client]
		} else {
			w[0] += c.Cut * cost[c.Client]
			w[1] += c.Admitted * cost[c.Client]
		}
		want[c.PointID] = w
	}
	ft := r.FrontierTable()
	at := slices.Index(ft.Headers, "caught cost")
	if at < 0 || len(r.Frontier.Points()) == 0 {
		t.Fatalf("frontier table headers %v: no cost", ft.Headers)
	}
	for i, q := range r.Frontier.Points() {
		got := ft.Rows[i][at : at+3]
		w := want[q.ID]
		if got[0] != strconv.FormatInt(w[0], 10) || got[1] != strconv.FormatInt(w[1], 10) || got[2] != strconv.FormatInt(w[2], 10) {
			t.Errorf("%v: cost cells %v, clients rows %v", q.Policy, got, w)
		}
	}
	for _, tb := range []*Table{r.TargetsTable(), r.SelectedTable()} {
		if !slices.Contains(tb.Headers, "false cut cost") {
			t.Errorf("%s: headers %v", tb.Title, tb.Headers)
		}
		for _, row := range tb.Rows {
			if len(row) != len(tb.Headers) {
				t.Errorf("%s: row %v under %d headers", tb.Title, row, len(tb.Headers))
			}
		}
	}
	for _, line := range r.PickSummary() {
		if strings.Contains(line, "which cuts") && !strings.Contains(line, "of the legitimate cost cut") {
			t.Errorf("pick without its cost: %s", line)
		}
	}
	plain, err := Load(context.Background(), runSpec(t, tinySpec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range plain.PickSummary() {
		if strings.Contains(line, "cost") {
			t.Errorf("a run without costs: pick %s", line)
		}
	}
	for _, tb := range plain.Tables() {
		if slices.Contains(tb.Headers, "false cut cost") {
			t.Errorf("a run without costs: %s has cost columns", tb.Title)
		}
	}
}
