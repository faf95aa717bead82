package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// maxFrontierRows bounds the frontier table in report.md and index.html;
// frontier.csv always has every frontier point.
const maxFrontierRows = 40

// paramsCell prints a policy's parameters, e.g. "window_s=60 limit=600".
func paramsCell(p model.Policy) string {
	var parts []string
	for _, n := range p.Algorithm.Params() {
		parts = append(parts, fmt.Sprintf("%s=%g", n, p.Get(n)))
	}
	return strings.Join(parts, " ")
}

func pct2(x float64) string { return fmt.Sprintf("%.2f", x) }

// SummaryTable describes the run directory.
func (r *Run) SummaryTable() *Table {
	t := &Table{Title: "The run", Headers: []string{"what", "value"}, Right: []bool{false, false}}
	t.AddRow("run directory", r.Dir)
	t.AddRow("spec name", r.Spec.Name)
	if sc := r.Spec.Scenario; sc != nil {
		t.AddRow("scenario", fmt.Sprintf("%s (%d clients, %d s)", sc.Name, len(sc.Clients), sc.DurationS))
	} else {
		t.AddRow("traffic", "replayed access log "+r.Spec.Traffic.Log)
	}
	t.AddRow("points files", fmt.Sprint(r.Files))
	t.AddRow("points rows read", groupDigits(r.Rows))
	t.AddRow("grid points", fmt.Sprintf("%s of %s in the spec (replicates %d)", groupDigits(r.Points), groupDigits(r.Spec.Points()), r.Spec.Replicates))
	for _, a := range r.Algos {
		t.AddRow(algoLabel(a.Algorithm), fmt.Sprintf("%s points, %d on its own frontier", groupDigits(a.Points), a.Frontier.Len()))
	}
	t.AddRow("Pareto frontier", fmt.Sprintf("%d points", r.Frontier.Len()))
	return t
}

// FrontierTable lists the overall Pareto frontier (thinned evenly when long).
func (r *Run) FrontierTable() *Table {
	t := &Table{
		Title:   "Pareto frontier: the settings no other setting beats on both legitimate cut and missed abuse",
		Headers: []string{"algorithm", "parameters", "caught", "missed", "false cut", "legit cut %", "missed %", "same outcome"},
		Right:   []bool{false, false, true, true, true, true, true, true},
	}
	pts := r.Frontier.Points()
	rows := thin(len(pts), maxFrontierRows)
	for _, i := range rows {
		q := pts[i]
		t.AddRow(q.Policy.Algorithm.String(), paramsCell(q.Policy), q.Caught, q.Missed, q.FalseCut,
			pct2(q.X()), pct2(q.Y()), sameCell(q.Ties))
	}
	t.Note = "Sorted by legitimate cut. \"same outcome\": further settings with exactly these numbers (the first by point_id is shown)."
	if len(rows) < len(pts) {
		t.Note += fmt.Sprintf(" %d of %d frontier points shown, evenly spaced; frontier.csv has all.", len(rows), len(pts))
	}
	return t
}

func sameCell(n int64) string {
	if n == 0 {
		return ""
	}
	return "+" + groupDigits(n)
}

// thin returns up to k indices of n, evenly spread, first and last included.
func thin(n, k int) []int {
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, 0, k)
	for i := range k {
		out = append(out, i*(n-1)/(k-1))
	}
	return out
}

// TargetsTable gives, for each missed-% target, the setting with the least
// legitimate cut overall and per algorithm.
func (r *Run) TargetsTable() *Table {
	t := &Table{
		Title:   "Best setting for a target miss rate: the least legitimate cut that misses at most the target",
		Headers: []string{"missed at most", "algorithm", "parameters", "false cut", "legit cut %", "missed %"},
		Right:   []bool{true, false, false, true, true, true},
	}
	for _, target := range r.opts.Targets {
		tl := fmt.Sprintf("%g%%", target)
		row := func(who string, f *Frontier) {
			if b, ok := f.Best(target); ok {
				t.AddRow(tl, who, paramsCell(b.Policy), b.FalseCut, pct2(b.X()), pct2(b.Y()))
				return
			}
			low := "–"
			if n := f.Len(); n > 0 {
				low = pct2(f.Points()[n-1].Y())
			}
			t.AddRow(tl, who, "none reaches the target", "–", "–", "lowest "+low)
		}
		row("any", &r.Frontier)
		for _, a := range r.Algos {
			row(a.Algorithm.String(), &a.Frontier)
		}
	}
	t.Note = "\"any\" is the best over all algorithms (a point of the frontier); the other rows are each algorithm's own best."
	return t
}

// SelectedTable lists the selected points with their three numbers.
func (r *Run) SelectedTable() *Table {
	t := &Table{
		Title:   "Selected settings: the lesson's reference points and the frontier's knees",
		Headers: []string{"#", "why", "algorithm", "parameters", "caught", "missed", "false cut", "legit cut %", "missed %"},
		Right:   []bool{true, false, false, false, true, true, true, true, true},
	}
	for i, s := range r.Selected {
		t.AddRow(i+1, s.Why, s.Policy.Algorithm.String(), paramsCell(s.Policy), s.Caught, s.Missed, s.FalseCut, pct2(s.X()), pct2(s.Y()))
	}
	t.Note = "A knee is a frontier point where the frontier bends most (farthest below the straight line between its neighbouring picks)."
	return t
}

// StageTable attributes the selected points' caught requests to the stage
// that could have closed them earlier.
func (r *Run) StageTable() *Table {
	t := &Table{
		Title:   "Stage attribution: abusive requests cut, by the stage that could have closed them earlier",
		Headers: []string{"#", "algorithm", "parameters", "caught", "design", "code", "none", "only here %"},
		Right:   []bool{true, false, false, true, true, true, true, true},
	}
	for i, s := range r.Selected {
		t.AddRow(i+1, s.Policy.Algorithm.String(), paramsCell(s.Policy), s.Caught, s.CutDesign, s.CutCode, s.CutNone, fmt.Sprintf("%.1f", s.OnlyHerePct))
	}
	t.Note = "only here % = share of the caught requests that only the rate limiter can close (stage none)."
	return t
}

// Tables returns the report's tables in page order.
func (r *Run) Tables() []*Table {
	return []*Table{r.SummaryTable(), r.TargetsTable(), r.SelectedTable(), r.StageTable(), r.FrontierTable()}
}

// WriteFrontierCSV writes every frontier point as CSV.
func (r *Run) WriteFrontierCSV(w io.Writer) error {
	var b strings.Builder
	b.WriteString("point_id,algorithm")
	for _, p := range model.Params {
		b.WriteString("," + p.Name)
	}
	b.WriteString(",caught,missed,false_cut,legit_cut_pct,missed_pct,same_outcome\n")
	for _, q := range r.Frontier.Points() {
		fmt.Fprintf(&b, "%d,%s", q.ID, q.Policy.Algorithm)
		for _, p := range model.Params {
			b.WriteString(",")
			for _, n := range q.Policy.Algorithm.Params() {
				if n == p.Name {
					fmt.Fprintf(&b, "%g", q.Policy.Get(n))
				}
			}
		}
		fmt.Fprintf(&b, ",%d,%d,%d,%.6f,%.6f,%d\n", q.Caught, q.Missed, q.FalseCut, q.X(), q.Y(), q.Ties)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
