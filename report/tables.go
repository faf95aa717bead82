package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// maxFrontierRows bounds the frontier table in report.md and index.html;
// frontier.csv always has every frontier point.
const maxFrontierRows = 40

// paramsCell prints a policy's parameters, e.g. "window_s=60 limit=600":
// the required ones, and optional ones that differ from their default
// (nginx's delay at or beyond its burst is "nodelay"), each to 3
// significant digits unless whole.
func paramsCell(p model.Policy) string {
	if p.Stack != nil { // every component, in brackets: the label less its algorithm
		return strings.TrimPrefix(p.Canonical(), p.Algorithm.String()+" ")
	}
	var parts []string
	for _, n := range p.Algorithm.Params() {
		parts = append(parts, n+"="+paramText(n, p.Get(n)))
	}
	for _, n := range p.Algorithm.OptionalParams() {
		prm, _ := model.LookupParam(n)
		v := p.Get(n)
		switch {
		case v == prm.Default || v == 0: // a zero value means the default (nodes 0 is 1)
		case valueName(p, n, v) != "":
			parts = append(parts, valueName(p, n, v))
		case prm.ParamName(v) != "":
			parts = append(parts, n+"="+prm.ParamName(v))
		default:
			parts = append(parts, n+"="+paramValue(v))
		}
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
		if logs := r.Spec.Traffic.Logs; len(logs) > 1 {
			t.AddRow("traffic", fmt.Sprintf("%d replayed access logs, one per replicate: %s", len(logs), strings.Join(logs, ", ")))
		} else {
			t.AddRow("traffic", "replayed access log "+r.Spec.Traffic.Log)
		}
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
	delays := r.shapes()
	if delays {
		t.addDelayColumn()
	}
	pts := r.Frontier.Points()
	rows := thin(len(pts), maxFrontierRows)
	react := len(pts) > 0 && pts[0].Reactions.Measured
	if react {
		t.Headers = append(t.Headers, reactionHeaders...)
		t.Right = append(t.Right, true, true, true)
	}
	costed := r.costed()
	if costed {
		t.addCostColumns()
	}
	for _, i := range rows {
		q := pts[i].Shown()
		cells := []any{q.Policy.Algorithm.String(), paramsCell(q.Policy), q.Caught, q.Missed, q.FalseCut,
			pct2(q.X()), pct2(q.Y()), sameCell(q.Ties)}
		if delays {
			cells = append(cells, delayCell(&q.Point))
		}
		if react {
			cells = append(cells, reactionCells(&q.Point)...)
		}
		t.AddRow(cells...)
		if costed {
			t.appendCostCells(&q.Point)
		}
	}
	t.Note = "Sorted by legitimate cut. \"same outcome\": further settings with exactly these numbers (the one shown adds the least delay, then is the simplest, then lies inside its swept ranges, then comes first by point_id; frontier.csv keeps the first by point_id)."
	if delays {
		t.Note += " " + delayNoteText
	}
	if costed {
		t.Note += " " + costNote
	}
	if react {
		t.Note += " The clients react to rejections: a cut is a request never served; amplification is the requests sent, retries included, per request intended; legit added p99 is the 99th percentile of the latency retries added to legitimate requests eventually served, s."
	}
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
// legitimate cut overall and per algorithm, flagging settings on an end of
// their swept range.
func (r *Run) TargetsTable() *Table {
	t := &Table{
		Title:   "Best setting for a target miss rate: the least legitimate cut that misses at most the target",
		Headers: []string{"missed at most", "algorithm", "parameters", "false cut", "legit cut %", "missed %", "edge of the swept range"},
		Right:   []bool{true, false, false, true, true, true, false},
	}
	delays := r.shapes()
	if delays {
		t.addDelayColumn()
	}
	costed := r.costed()
	if costed {
		t.addCostColumns()
	}
	edges := false
	for _, tg := range r.Targets() {
		target, tl := tg.MissedPct, tg.label()
		row := func(overall bool, a string, f *Frontier) {
			if b, ok := f.Best(target); ok {
				who := b.Policy.Algorithm.String()
				if overall {
					who = "best of all: " + who
				}
				var flags []string
				for _, e := range EdgesOfRange(r.Spec, b.ID) {
					flags = append(flags, "⚠ "+e.String())
				}
				edges = edges || len(flags) > 0
				t.AddRow(tl, who, paramsCell(b.Policy), b.FalseCut, pct2(b.X()), pct2(b.Y()), strings.Join(flags, "; "))
				if delays {
					t.appendCell(delayCell(&b.Point))
				}
				if costed {
					t.appendCostCells(&b.Point)
				}
				return
			}
			low := "–"
			hint := ""
			if n := f.Len(); n > 0 {
				low = pct2(f.Points()[n-1].Y())
				for _, e := range EdgesOfRange(r.Spec, f.Points()[n-1].ID) {
					hint += "; to miss less: " + e.String()
				}
			}
			who := a
			if overall {
				who = "best of all"
			}
			t.AddRow(tl, who, "none reaches the target", "–", "–", "lowest "+low, strings.TrimPrefix(hint, "; "))
			if delays {
				t.appendCell("")
			}
			if costed {
				t.appendCostCells(nil)
			}
		}
		row(true, "", &r.Frontier)
		for _, a := range r.Algos {
			row(false, a.Algorithm.String(), &a.Frontier)
		}
	}
	t.Note = "\"best of all\" is the best over every algorithm (a point of the frontier); the rows below it are each algorithm's own best. " +
		"Targets: --target missed<=N% (repeatable); without it, 50%, 25% and 10% where the run reaches them, else targets chosen from what it reaches (its frontier's knee, its least miss and 5 and 10 points above)."
	if r.NoAbuse() {
		t.Note = "No request of the run is labelled abusive: no target tells settings apart."
	}
	if delays {
		t.Note += " " + delayNoteText
	}
	if costed {
		t.Note += " " + costNote
	}
	if edges {
		t.Note += " ⚠ marks a parameter at the smallest or largest value its sweep tried: the optimum may lie beyond, so extend the sweep that way before trusting it."
	}
	return t
}

// PickSummary says which setting to pick, one line per target: the best
// of all algorithms, and whether it sits on the edge of its sweep.
func (r *Run) PickSummary() []string {
	if r.NoAbuse() {
		return []string{r.noAbuseLine()}
	}
	var out []string
	for _, tg := range r.Targets() {
		target := tg.MissedPct
		b, ok := r.Frontier.Best(target)
		if !ok {
			out = append(out, fmt.Sprintf("missing at most %s of the abusive requests: no setting of the run gets there; %s", tg.label(), r.unreachable(&r.Frontier)))
			continue
		}
		s := fmt.Sprintf("missing at most %s of the abusive requests: %s %s, which cuts %.2f%% of the legitimate requests and misses %.2f%%",
			tg.label(), b.Policy.Algorithm, paramsCell(b.Policy), b.X(), b.Y()) + costPick(&b.Point) + delayNote(&b.Point)
		if e := EdgesOfRange(r.Spec, b.ID); len(e) > 0 {
			var es []string
			for _, x := range e {
				es = append(es, x.String())
			}
			s += fmt.Sprintf(" (⚠ %s: extend the sweep before trusting it)", strings.Join(es, "; "))
		}
		out = append(out, s)
	}
	return out
}

// pickIntro opens the best-settings section.
const pickIntro = "What to pick, for each target (--target missed<=N%); the table adds each algorithm's own best."

// SelectedTable lists the selected points with their three numbers.
func (r *Run) SelectedTable() *Table {
	t := &Table{
		Title:   "Selected settings: the lesson's reference points and the frontier's knees",
		Headers: []string{"#", "why", "algorithm", "parameters", "caught", "missed", "false cut", "legit cut %", "missed %"},
		Right:   []bool{true, false, false, false, true, true, true, true, true},
	}
	delays := r.shapes()
	if delays {
		t.addDelayColumn()
	}
	costed := r.costed()
	if costed {
		t.addCostColumns()
	}
	for i, s := range r.Selected {
		t.AddRow(i+1, s.Why, s.Policy.Algorithm.String(), paramsCell(s.Policy), s.Caught, s.Missed, s.FalseCut, pct2(s.X()), pct2(s.Y()))
		if delays {
			t.appendCell(delayCell(&s.Point))
		}
		if costed {
			t.appendCostCells(&s.Point)
		}
	}
	t.Note = "A knee is a frontier point where the frontier bends most (farthest below the straight line between its neighbouring picks)."
	if costed {
		t.Note += " " + costNote
	}
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
	delays := r.shapes()
	if delays {
		t.addDelayColumn()
	}
	for i, s := range r.Selected {
		t.AddRow(i+1, s.Policy.Algorithm.String(), paramsCell(s.Policy), s.Caught, s.CutDesign, s.CutCode, s.CutNone, fmt.Sprintf("%.1f", s.OnlyHerePct))
		if delays {
			t.appendCell(delayCell(&s.Point))
		}
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

// ParseTarget reads a best-settings target such as "missed<=5%" (or
// "missed<=5") as a missed-% bound in [0, 100].
func ParseTarget(s string) (float64, error) {
	rest, ok := strings.CutPrefix(strings.ReplaceAll(s, " ", ""), "missed<=")
	if !ok {
		return 0, fmt.Errorf("%q: want missed<=N%% (abusive requests missed, at most N %%)", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(rest, "%"), 64)
	if err != nil || v < 0 || v > 100 || math.IsNaN(v) {
		return 0, fmt.Errorf("%q: N must be a number from 0 to 100", s)
	}
	return v, nil
}

// valueName is the word policy p's algorithm says value v of parameter n
// with (nginx's delay at or above burst is "nodelay"), or "".
func valueName(p model.Policy, n string, v float64) string {
	d := p.Algorithm.Describe()
	if d == nil || d.ValueName == nil {
		return ""
	}
	return d.ValueName(n, v, p.Get)
}

// delayNoteText explains the delay column.
const delayNoteText = "delay: what a setting that queues requests (nginx below nodelay) adds to the requests it admits, mean / p99 (the largest replicate's), \"none\" when it queues none; empty for algorithms that never delay."

// shapes reports whether the run has an algorithm that can delay the
// requests it admits (nginx): its tables then show a delay column.
func (r *Run) shapes() bool {
	for _, a := range r.Algos {
		if shaping(a.Algorithm) {
			return true
		}
	}
	return false
}

// addDelayColumn adds the delay column (mean / p99) to t.
func (t *Table) addDelayColumn() {
	t.Headers = append(t.Headers, "delay mean / p99")
	for len(t.Right) < len(t.Headers)-1 {
		t.Right = append(t.Right, false)
	}
	t.Right = append(t.Right, true)
}

// appendCell adds a cell to the last row.
func (t *Table) appendCell(c string) {
	t.Rows[len(t.Rows)-1] = append(t.Rows[len(t.Rows)-1], c)
}
