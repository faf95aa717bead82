package report

import (
	"context"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// whyCut re-simulates the picks' legitimate clients: token_bucket rate=1
// capacity=5 against 8 requests at t=0 cuts 3, all of them the burst
// (capacity 10 admits the 8); the client that is never cut is not named;
// an all_of, which explain refuses, has no entry.
func TestWhyCut(t *testing.T) {
	dir := runSpec(t, `
name: why
seed: 1
scenario:
  name: why
  duration_s: 10
  arrivals: fluid
  clients:
    - {name: eager, class: legit, segments: [[0, 1, 8]]}
    - {name: calm, class: legit, segments: [[0, 10, 1]]}
    - {name: bot, class: abusive, stage: none, segments: [[0, 10, 3]]}
sweep:
  - algorithm: token_bucket
    rate: [1]
    capacity: [5]
`)
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := model.ParseLabel("token_bucket rate=1 capacity=5")
	stack, _ := model.ParseLabel("all_of(token_bucket rate=1 capacity=5, fixed_window window_s=10 limit=100)")
	why := r.whyCut([]model.Policy{p, stack})
	got := why[p.Canonical()]
	if len(got) != 1 || got["eager"] != "3 burst" {
		t.Errorf("why %v, want eager: 3 burst", got)
	}
	if _, ok := why[stack.Canonical()]; ok || len(why) != 1 {
		t.Errorf("an all_of explained: %v", why)
	}
	// The card names the cause beside the client it cuts.
	named := false
	for _, c := range r.Card(context.Background()) {
		for _, l := range c.Clients {
			named = named || strings.HasPrefix(l, "eager (3 of 8 cut, 37.5%; why: 3 burst)")
		}
	}
	if !named {
		t.Errorf("card %+v: no line for eager with its cause", r.Card(context.Background()))
	}
	// explore.html offers the explain command for a scenario run.
	if _, d := explorePage(t, dir); !d.Explain {
		t.Errorf("explore.html of a scenario run: explain not offered")
	}
	if c := causeList([4]int64{0, 40, 80, 0}); c != "80 burst, 40 window shape" {
		t.Errorf("causeList %q", c)
	}
}
