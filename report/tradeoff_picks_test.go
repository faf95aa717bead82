package report

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"
)

var hoverCircle = regexp.MustCompile(`<circle cx="([0-9.]+)" cy="([0-9.]+)" r="\d+" data-kind="([a-z-]+)" data-algorithm="([a-z_]+)"><title>([^<]*)</title>`)

// Each best setting is marked on the trade-off plots, with a hover title
// naming its targets and setting; marks that overlap name every setting
// under the pointer.
func TestPicksOnTheTradeoffPlot(t *testing.T) {
	r, err := Load(context.Background(), runSpec(t, tinySpec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	svg, err := r.TradeoffFigure().Render("svg")
	if err != nil {
		t.Fatal(err)
	}
	type mark struct{ x, y, kind, alg, title string }
	var marks []mark
	for _, m := range hoverCircle.FindAllStringSubmatch(string(svg), -1) {
		marks = append(marks, mark{m[1], m[2], m[3], m[4], html.UnescapeString(m[5])})
	}
	picked := map[int64]bool{}
	for _, tg := range r.Targets() {
		b, ok := r.Frontier.Best(tg.MissedPct)
		if !ok {
			continue
		}
		picked[b.ID] = true
		found := false
		for _, m := range marks {
			if m.kind == "pick" && strings.Contains(m.title, paramsCell(b.Policy)) && strings.Contains(m.title, tg.label()) && m.alg == b.Policy.Algorithm.String() {
				found = true
			}
		}
		if !found {
			t.Errorf("target %s: no pick mark for %s", tg.label(), paramsCell(b.Policy))
		}
	}
	n := 0
	for _, m := range marks {
		if m.kind != "pick" {
			continue
		}
		n++
		// A pick is a frontier point: the corner under it names itself in
		// the pick's tooltip, and the pick in the corner's.
		for _, o := range marks {
			if o.kind == "frontier" && o.x == m.x && o.y == m.y {
				first := strings.SplitN(o.title, "\n", 2)[0]
				if !strings.Contains(m.title, first) || !strings.Contains(o.title, strings.SplitN(m.title, "\n", 2)[0]) {
					t.Errorf("overlapping pick and frontier corner do not name each other:\n%s\n--\n%s", m.title, o.title)
				}
			}
		}
	}
	if n == 0 || n != len(picked) {
		t.Errorf("%d pick marks for %d picked settings", n, len(picked))
	}
}
