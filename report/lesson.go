package report

import (
	"fmt"
	"io"

	"github.com/ratesweep/ratesweep/model"
)

// LessonTables lays out the lesson's Tables 1–3 (five sub-tables) for l.
func LessonTables(l *model.Lesson) []*Table {
	sc := l.Workload.Scenario
	var out []*Table

	// Table 1a: cut per client.
	t := &Table{
		Title:   fmt.Sprintf("Table 1 — requests cut per client (cut = offered − admitted), %s, %d s", sc.Name, sc.DurationS),
		Headers: []string{"client", "class", "requests"},
		Right:   []bool{false, false, true},
	}
	for _, s := range l.Shapes {
		t.Headers = append(t.Headers, shortShape(s.Policy))
		t.Right = append(t.Right, true)
	}
	t.Headers = append(t.Headers, "stage")
	for i, c := range sc.Clients {
		row := []any{c.Name, c.Class.String(), l.Shapes[0].Clients[i].Offered}
		for _, s := range l.Shapes {
			row = append(row, s.Clients[i].Cut())
		}
		row = append(row, stageCell(c.Stage))
		t.AddRow(row...)
	}
	t.Note = "fixed = " + l.Shapes[0].Policy.String() + "; sliding = " + l.Shapes[1].Policy.String() +
		"; bucket = " + l.Shapes[2].Policy.String()
	out = append(out, t)

	// Table 1b: the three numbers per shape.
	t = &Table{
		Title:   "Table 1 — the three numbers per window shape",
		Headers: []string{"window shape", "caught", "missed", "false cut", "legit cut %"},
		Right:   []bool{false, true, true, true, true},
	}
	for _, s := range l.Shapes {
		t.AddRow(s.Policy.Label(), s.Caught, s.Missed, s.FalseCut, pct1(s.LegitCutPct))
	}
	out = append(out, t)

	// Table 2: the price of raising the limit / the capacity.
	focus := focusName(sc, l.CodeClients, "code-stage")
	for _, half := range []struct {
		title, col string
		rows       []model.SweepRow
	}{
		{"Table 2 — the price of raising the limit (" + model.LessonSliding.Label() + ", only the limit changes)", "limit", l.LimitSweep},
		{"Table 2 — the price of raising the capacity (" + model.LessonBucket.Label() + ", only the capacity changes)", "capacity", l.CapacitySweep},
	} {
		t = &Table{
			Title:   half.title,
			Headers: []string{half.col, "false cut", "caught", "missed", focus + " admitted"},
			Right:   []bool{true, true, true, true, true},
		}
		for _, r := range half.rows {
			t.AddRow(r.Value, r.Outcome.FalseCut, r.Outcome.Caught, r.Outcome.Missed, focusCell(l.CodeClients, r.FocusAdmit))
		}
		out = append(out, t)
	}

	// Table 3a: where the cut requests belong.
	t = &Table{
		Title:   "Table 3 — where the cut requests belong (abusive requests cut, by the stage that could close them earlier)",
		Headers: []string{"window shape", "design", "code", "none", "only here %"},
		Right:   []bool{false, true, true, true, true},
		Note:    "only here % = share of the caught requests that only this layer can close (stage none)",
	}
	for _, s := range l.Shapes {
		t.AddRow(s.Policy.Label(), s.CutDesign, s.CutCode, s.CutNone, pct1(s.OnlyHerePct))
	}
	out = append(out, t)

	// Table 3b: the limit needed to see design-stage abuse.
	dfocus := focusName(sc, l.DesignClients, "design-stage")
	t = &Table{
		Title:   "Table 3 — " + model.LessonSliding.Label() + ": the limit needed to see the " + dfocus,
		Headers: []string{"limit", "cut from " + dfocus, "legit cut", "legit cut %"},
		Right:   []bool{true, true, true, true},
	}
	for _, r := range l.DesignSweep {
		t.AddRow(r.Value, focusCell(l.DesignClients, r.FocusCut), r.Outcome.FalseCut, pct1(r.Outcome.LegitCutPct))
	}
	out = append(out, t)
	return out
}

// WriteLessonText prints the lesson's tables for a terminal.
func WriteLessonText(w io.Writer, l *model.Lesson) error {
	for i, t := range LessonTables(l) {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := t.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}

func shortShape(p model.Policy) string {
	switch p.Algorithm {
	case model.FixedWindow:
		return "fixed"
	case model.SlidingWindow:
		return "sliding"
	case model.TokenBucket:
		return "bucket"
	}
	return p.Algorithm.String()
}

func stageCell(s model.Stage) string {
	if s == model.NoStage {
		return "–"
	}
	return s.String()
}

// focusName names the focus clients of a table: the single client's name, or
// a description of the group.
func focusName(sc *model.Scenario, idx []int, what string) string {
	switch len(idx) {
	case 0:
		return what + " clients (none)"
	case 1:
		return sc.Clients[idx[0]].Name
	}
	return what + " clients"
}

func focusCell(idx []int, v int64) string {
	if len(idx) == 0 {
		return "–"
	}
	return fmt.Sprint(v)
}

func pct1(x float64) string { return fmt.Sprintf("%.1f", x) }
