package ingest

import (
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// windowDecider admits at most limit requests per fixed window of win ns
// (a stand-in for the event simulation's deciders).
type windowDecider struct {
	limit, win, start, n int64
	fresh                bool
}

func (d *windowDecider) Reset() { d.fresh = true }
func (d *windowDecider) Allow(t int64) bool {
	if w := t / d.win * d.win; d.fresh || w != d.start {
		d.start, d.n, d.fresh = w, 0, false
	}
	if d.n < d.limit {
		d.n++
		return true
	}
	return false
}

func TestReplayCountsPerRequestLabel(t *testing.T) {
	// Key b: 5 POSTs at 60..64 s (code, by the rate rule) and a GET at 300 s.
	// Key c: a 500 at 0 s (request rule: none), GETs at 2 and 3 s.
	rules := []Rule{
		{Name: "login burst", Stage: model.StageCode, Methods: []string{"POST"}, Rate: &Rate{Requests: 5, WindowS: 10}},
		{Name: "errors", Stage: model.StageNone, Scope: ScopeRequest, Statuses: []StatusRange{{500, 599}}},
	}
	tr, err := build(t, labelLog(), Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	times := tr.Realise(SpreadEven, 0, 0, nil)
	var out Replay
	// 2 requests per 10 s window and key.
	tr.Replay(times, &windowDecider{limit: 2, win: 10 * secondNs}, &out)
	m := out.Metrics
	// Abusive: b's 6 requests (key rule) and c's 500. b sends 5 in 60..69 s
	// (3 cut) and 1 at 300 s; c sends 3 in 0..9 s, so its legitimate GET at
	// 3 s is cut while its abusive 500 at 0 s is admitted.
	if m.OfferedLegit != 6 || m.OfferedAbusive != 7 || m.FalseCut != 1 || m.Caught != 3 || m.Missed != 4 ||
		m.CutCode != 3 || m.CutNone != 0 || m.OnlyHerePct != 0 {
		t.Errorf("metrics %+v", m)
	}
	var offered int64
	for _, c := range tr.Rows(1).Aggregate(out.Totals(nil), nil) {
		offered += c.Offered
	}
	if offered != tr.Requests() {
		t.Errorf("offered %d of %d", offered, tr.Requests())
	}
	// Storage is reused.
	keys := &out.Keys[0]
	tr.Replay(times, &windowDecider{limit: 100, win: secondNs}, &out)
	if &out.Keys[0] != keys || out.FalseCut != 0 || out.Caught != 0 {
		t.Errorf("generous policy: %+v", out.Metrics)
	}
}

func TestFileSHA256(t *testing.T) {
	got, err := FileSHA256("../configs/examples/logs/antlr_org_20030902/access.log.gz")
	if err != nil || len(got) != 64 {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := FileSHA256("nope"); err == nil {
		t.Error("missing file hashed")
	}
}
