package report

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
)

// lenientSpec sweeps only limits far above the abusive client's rate: no
// setting misses less than half the abuse, so no default target is reached.
const lenientSpec = `name: lenient
scenario:
  name: s
  duration_s: 120
  clients:
    - {name: user, class: legit, segments: [[0, 30, 3], [30, 40, 20], [40, 120, 3]]}
    - {name: scraper, class: abusive, stage: none, segments: [[0, 120, 5]]}
sweep:
  - algorithm: fixed_window
    window_s: [30, 60]
    limit: {from: 200, to: 600, step: 20}
  - algorithm: sliding_window
    window_s: [30, 60]
    limit: {from: 200, to: 600, step: 20}
`

// Without --target, a run that reaches none of 50, 25 and 10 % gets targets
// it reaches, each picking its own setting, and the tightest is its least
// miss (rounded up), whose pick says which way to extend the grid.
func TestTargetsFromWhatTheRunReaches(t *testing.T) {
	r, err := Load(context.Background(), runSpec(t, lenientSpec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	pts := r.Frontier.Points()
	low := pts[len(pts)-1].Y()
	if low <= 50 {
		t.Fatalf("the least miss is %.2f%%: the spec no longer tests unreachable defaults", low)
	}
	tg := r.Targets()
	if len(tg) < 2 {
		t.Fatalf("targets %v, want at least two", tg)
	}
	seen := map[int64]bool{}
	least := false
	for _, x := range tg {
		b, ok := r.Frontier.Best(x.MissedPct)
		if !ok {
			t.Errorf("target %s is not reached", x.label())
			continue
		}
		if seen[b.ID] {
			t.Errorf("target %s picks %s, as another target does", x.label(), paramsCell(b.Policy))
		}
		seen[b.ID] = true
		if x.MissedPct == math.Ceil(low) {
			least = true
		}
		// The pick is the least legitimate cut among every point that
		// misses at most the target (brute force over the frontier's
		// definition: no frontier point within the target cuts less).
		for _, q := range pts {
			if q.Y() <= x.MissedPct && q.X() < b.X() {
				t.Errorf("target %s: %s cuts less than the pick", x.label(), paramsCell(q.Policy))
			}
		}
	}
	if !least {
		t.Errorf("targets %v: none at the least miss %.2f%% rounded up", tg, low)
	}
	sum := strings.Join(r.PickSummary(), "\n")
	if strings.Contains(sum, "no setting of the run gets there") || !strings.Contains(sum, "try smaller limit") {
		t.Errorf("summary:\n%s", sum)
	}
	// A target given that no setting reaches says the least miss and which
	// way to extend.
	r.opts.Targets, r.targets = []float64{5}, nil
	sum = strings.Join(r.PickSummary(), "\n")
	if !strings.Contains(sum, "no setting of the run gets there") || !strings.Contains(sum, pct2(low)) || !strings.Contains(sum, "extend the grid: ") || !strings.Contains(sum, "limit=200 smallest swept: try smaller limit") {
		t.Errorf("--target 5%%: %s", sum)
	}
}

// A run with no abusive traffic says so first, and picks by legitimate cut.
func TestNoAbusiveTraffic(t *testing.T) {
	spec := strings.Replace(lenientSpec, "{name: scraper, class: abusive, stage: none, segments: [[0, 120, 5]]}", "{name: reader, class: legit, segments: [[0, 120, 5]]}", 1)
	r, err := Load(context.Background(), runSpec(t, spec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.NoAbuse() {
		t.Fatal("NoAbuse is false for a run without abusive clients")
	}
	sum := r.PickSummary()
	if len(sum) != 1 || !strings.HasPrefix(sum[0], "no request of the run is labelled abusive") || !strings.Contains(sum[0], ", 0.00%") {
		t.Errorf("summary %q", sum)
	}
	if card := r.Card(context.Background()); len(card) != 1 || card[0].None != sum[0] || card[0].Target != "" {
		t.Errorf("the card of a run without abuse: %+v", card)
	}
	var page, md bytes.Buffer
	if err := r.writeHTML(&page, nil, nil, r.Card(context.Background())); err != nil {
		t.Fatal(err)
	}
	if err := r.writeMarkdown(&md, nil, nil, r.Card(context.Background())); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `<section id="pick"`) || !strings.Contains(md.String(), "## What to pick") {
		t.Error("a run without abuse has no card")
	}
}
