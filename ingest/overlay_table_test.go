package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// TestOverlayTable measures, on each real example log (every request taken
// as legitimate), what each attack of the overlay examples would get
// through under a few limits, one attack at a time: docs/overlay.md.
//
//	go test ./ingest -run TestOverlayTable -v
func TestOverlayTable(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the three example logs")
	}
	logs := []struct{ name, file string }{
		{"antlr.org 2003 (11.5 h)", "antlr_org_20030902/access.log.gz"},
		{"NASA KSC 1995 (12.9 h)", "nasa_ksc_19950801/nasa_19950801.tsv.gz"},
		{"elastic apache 2015 (83 h)", "elastic_apache_logs/apache_logs.gz"},
	}
	policies := []model.Policy{
		{Algorithm: model.FixedWindow, WindowS: 60, Limit: 30},
		{Algorithm: model.SlidingWindow, WindowS: 60, Limit: 30},
		{Algorithm: model.FixedWindow, WindowS: 60, Limit: 60},
		{Algorithm: model.SlidingWindow, WindowS: 60, Limit: 60},
		{Algorithm: model.TokenBucket, Rate: 1, Capacity: 20},
	}
	attacks := []struct{ name, client, keys, aim string }{
		{"low and slow: 0.2 req/s over 40 addresses", "{name: a, class: abusive, stage: code, segments: [[0, D, 0.2]], addresses: 40}", "", ""},
		{"spread scraper: 5 req/s over 1,000 addresses", "{name: a, class: abusive, stage: none, segments: [[0, D, 5]], addresses: 1000}", "", ""},
		{"window edges: 1 req/s in bursts at minute boundaries", "{name: a, class: abusive, stage: code, segments: [[0, D, 1]]}", "", "  aim: {a: {window_s: 60, spread_s: 0.5}}\n"},
		{"one address: 1 req/s, steady", "{name: a, class: abusive, stage: code, segments: [[0, D, 1]]}", "", ""},
		{"behind NAT: 0.5 req/s from the 3 busiest addresses", "{name: a, class: abusive, stage: code, segments: [[0, D, 0.5]]}", "  keys: {a: top:3}\n", ""},
	}
	var b strings.Builder
	head := "| attack (poisson arrivals, seed 1) |"
	sep := "|---|"
	for _, p := range policies {
		head += " " + policyLabel(p) + " |"
		sep += "---:|"
	}
	for _, l := range logs {
		tr, err := Load(context.Background(), filepath.Join("..", "configs", "examples", "logs", l.file), Options{})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n**%s**: %d requests, %d addresses; each cell: abusive requests missed %% (legitimate requests cut %%)\n\n%s\n%s\n", l.name, tr.Requests(), len(tr.Keys), head, sep)
		row := "| the log alone: legitimate cut |"
		alone := tr.Realise(SpreadEven, 1, 0, nil)
		for _, p := range policies {
			m := replay(t, tr, alone, p)
			row += fmt.Sprintf(" %.2f %% |", m.LegitCutPct)
		}
		b.WriteString(row + "\n")
		for _, a := range attacks {
			yml := fmt.Sprintf("overlay:\n  name: x\n  duration_s: %d\n  arrivals: poisson\n  clients:\n    - %s\n%s%s",
				tr.DurationS, strings.ReplaceAll(a.client, "D", fmt.Sprint(tr.DurationS)), a.keys, a.aim)
			ov, err := decodeOverlayText(t, yml)
			if err != nil {
				t.Fatal(err)
			}
			with, err := tr.WithOverlay(ov, SpreadEven, 1)
			if err != nil {
				t.Fatal(err)
			}
			times := with.Realise(SpreadEven, 1, 0, nil)
			row := "| " + a.name + " |"
			for _, p := range policies {
				m := replay(t, with, times, p)
				if m.OfferedAbusive != with.OverlayRequests {
					t.Fatalf("%s: %d abusive offered, overlay %d", a.name, m.OfferedAbusive, with.OverlayRequests)
				}
				row += fmt.Sprintf(" %.1f %% (%.2f %%) |", m.MissedPct, m.LegitCutPct)
			}
			b.WriteString(row + "\n")
		}
	}
	t.Log("\n" + b.String())
}

func policyLabel(p model.Policy) string {
	switch p.Algorithm {
	case model.TokenBucket:
		return fmt.Sprintf("token bucket %g/s, capacity %d", p.Rate, p.Capacity)
	}
	return fmt.Sprintf("%s %d / %d s", strings.ReplaceAll(p.Algorithm.String(), "_", " "), p.Limit, p.WindowS)
}

func replay(t *testing.T, tr *Traffic, times [][]int64, p model.Policy) model.Metrics {
	t.Helper()
	d, err := model.NewDecider(p)
	if err != nil {
		t.Fatal(err)
	}
	var out Replay
	tr.Replay(times, d, &out)
	return out.Metrics
}
