package report

import (
	"context"
	"strings"
	"testing"
)

// The explorer lists clients by name with their control characters and
// bidirectional overrides shown as text, as index.html does: a name with
// U+202E cannot reorder the table around it.
func TestExploreClientNamesVisible(t *testing.T) {
	const spec = `name: names
scenario:
  name: hostile names
  duration_s: 30
  clients:
    - {name: "admin\u202egnp.exe", class: legit, segments: [[0, 30, 5]]}
    - {name: "bell\u0007 and \u2066isolate\u2069", class: abusive, stage: none, segments: [[0, 30, 9]]}
sweep:
  - {algorithm: fixed_window, window_s: 10, limit: [20, 60]}
`
	r, err := Load(context.Background(), runSpec(t, spec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.exploreData(context.Background(), exploreMaxSettings)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{`admin\u202egnp.exe`: true, `bell\x07 and \u2066isolate\u2069`: true}
	for _, n := range d.Clients {
		if strings.ContainsAny(n, "\u202e\u2066\u2069\u0007") {
			t.Errorf("client %q is embedded raw", n)
		}
		delete(want, n)
	}
	if len(want) != 0 {
		t.Errorf("clients %q, want the visible forms %v", d.Clients, want)
	}
}

// A very long client name is cut to maxFigureName characters on the clients
// figure's axis (it pushed the other labels off), whole nowhere there.
func TestClientsFigureLongName(t *testing.T) {
	long := strings.Repeat("very long client name ", 15) // 330 characters
	svg, err := clientsFigure(long, "other").Render("svg")
	if err != nil {
		t.Fatal(err)
	}
	texts, _ := svgContent(t, long, svg)
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, ellipsis(long, maxFigureName)+" (legit)") {
		t.Errorf("figure text does not cut the long name to %d characters:\n%.600s", maxFigureName, all)
	}
	for _, l := range texts {
		if strings.HasSuffix(l, "(legit)") && strings.Contains(l, long) {
			t.Errorf("an axis label holds the whole name: %.80q", l)
		}
	}
}
