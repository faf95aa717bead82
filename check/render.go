package check

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/report"
)

// Formats lists the formats Write renders.
var Formats = []string{"text", "markdown", "json"}

// Write renders a check result as "text", "markdown" or "json".
// maxRows caps every listing (changes worst first, added and removed points)
// and counts the rest; 0 means no cap.
func Write(w io.Writer, r *Result, format string, maxRows int) error {
	switch format {
	case "text", "":
		return writeCheckText(w, r, maxRows)
	case "markdown":
		return writeCheckMarkdown(w, r, maxRows)
	case "json":
		return writeCheckJSON(w, r, maxRows)
	}
	return fmt.Errorf("unknown format %q (text, markdown or json)", format)
}

// Summary is the one-line verdict, e.g. "FAIL: 1680 points compared: 1677
// identical, 3 changed; 0 removed, 2 added (allowed; …)".
func (r *Result) Summary() string {
	verdict := "ok"
	if r.Failed() {
		verdict = "FAIL"
	}
	return verdict + ": " + r.Counts()
}

// Counts is Summary without the verdict.
func (r *Result) Counts() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d points compared: %d identical", r.Compared, r.Identical)
	if r.Tolerated > 0 {
		fmt.Fprintf(&b, ", %d within tolerance", r.Tolerated)
		if r.Replicated {
			b.WriteString(" or not significant")
		}
	}
	fmt.Fprintf(&b, ", %d changed", r.Points)
	removed := fmt.Sprintf("%d removed", r.Removed)
	if r.Removed > 0 && r.Options.AllowRemoved {
		removed += " (allowed)"
	}
	added := fmt.Sprintf("%d added", r.Added)
	if r.Added > 0 && !r.Options.FailOnAdded {
		added += " (allowed; --fail-on-added to fail)"
	}
	fmt.Fprintf(&b, "; %s, %s", removed, added)
	return b.String()
}

func (ri *RunInfo) describe() string {
	var parts []string
	if ri.Spec != "" {
		parts = append(parts, "spec "+ri.Spec)
	}
	parts = append(parts, fmt.Sprintf("%d points, %d rows", ri.Points, ri.Rows))
	if ri.ScenarioSHA256 != "" {
		parts = append(parts, fmt.Sprintf("scenario %.12s", ri.ScenarioSHA256))
	}
	return fmt.Sprintf("%s (%s)", ri.Dir, strings.Join(parts, ", "))
}

// checkTables lays out the changes, added and removed points as tables.
func checkTables(r *Result, maxRows int) []*report.Table {
	var out []*report.Table
	if len(r.Changes) > 0 {
		t := &report.Table{
			Title:   fmt.Sprintf("Changed beyond tolerance: %d points (%d metric values), worst first", r.Points, r.ChangedValues),
			Headers: []string{"point", "metric", "baseline", "run", "Δ", "Δ%"},
			Right:   []bool{false, false, true, true, true, true},
		}
		if r.Replicated {
			t.Headers = append(t.Headers, "p", "n")
			t.Right = append(t.Right, true, true)
			t.Title += fmt.Sprintf("; medians [%.0f%% interval], Mann–Whitney p (Benjamini–Hochberg at alpha %g)", 100*CIConfidence, r.Options.alpha())
		}
		shown := capRows(len(r.Changes), maxRows)
		for _, c := range r.Changes[:shown] {
			row := []string{c.Point, c.Metric, fmtWithCI(c.Baseline, c.BaselineLo, c.BaselineHi), fmtWithCI(c.Run, c.RunLo, c.RunHi),
				fmtSigned(c.Delta()), fmtRel(c.RelDelta())}
			if r.Replicated {
				p := ""
				if !math.IsNaN(c.P) {
					p = strconv.FormatFloat(c.P, 'g', 3, 64)
				}
				row = append(row, p, fmt.Sprintf("%d/%d", c.NBaseline, c.NRun))
			}
			t.Rows = append(t.Rows, row)
		}
		if rest := r.ChangedValues - shown; rest > 0 {
			t.Note = fmt.Sprintf("… and %d more rows (--max-rows %d)", rest, maxRows)
		}
		out = append(out, t)
	}
	list := func(title string, keys []string, total int64) {
		if total == 0 {
			return
		}
		t := &report.Table{Title: title, Headers: []string{"point"}}
		shown := capRows(len(keys), maxRows)
		for _, k := range keys[:shown] {
			t.Rows = append(t.Rows, []string{k})
		}
		if rest := total - int64(shown); rest > 0 {
			t.Note = fmt.Sprintf("… and %d more", rest)
		}
		out = append(out, t)
	}
	list(fmt.Sprintf("Added: %d points not in the baseline", r.Added), r.AddedPoints, r.Added)
	list(fmt.Sprintf("Removed: %d baseline points missing from the run", r.Removed), r.RemovedPoints, int64(r.Removed))
	return out
}

func capRows(n, maxRows int) int {
	if maxRows > 0 && n > maxRows {
		return maxRows
	}
	return n
}

func writeCheckText(w io.Writer, r *Result, maxRows int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "baseline  %s\nrun       %s\n", r.Baseline.describe(), r.Run.describe())
	for _, t := range checkTables(r, maxRows) {
		b.WriteString("\n")
		if err := t.WriteText(&b); err != nil {
			return err
		}
	}
	b.WriteString("\n")
	for _, msg := range r.Warnings {
		b.WriteString("warning: " + msg + "\n")
	}
	b.WriteString("check " + r.Summary() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCheckMarkdown(w io.Writer, r *Result, maxRows int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### ratesweep check: %s\n\n", report.EscapeMarkdown(r.Summary()))
	fmt.Fprintf(&b, "- baseline: %s\n- run: %s\n", report.CodeSpan(r.Baseline.describe()), report.CodeSpan(r.Run.describe()))
	for _, msg := range r.Warnings {
		b.WriteString("- **warning:** " + report.EscapeMarkdown(msg) + "\n")
	}
	for _, t := range checkTables(r, maxRows) {
		b.WriteString("\n")
		if err := t.WriteMarkdown(&b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// checkJSON is the JSON form of a Result; NaN and infinite numbers
// become null.
type checkJSON struct {
	Failed          bool                 `json:"failed"`
	Summary         string               `json:"summary"`
	Baseline        RunInfo              `json:"baseline"`
	Run             RunInfo              `json:"run"`
	ScenarioChanged bool                 `json:"scenario_changed"`
	Metrics         []string             `json:"metrics"`
	Alpha           float64              `json:"alpha"`
	Tolerance       Tolerance            `json:"tolerance"`
	Tolerances      map[string]Tolerance `json:"tolerances,omitempty"`
	Replicated      bool                 `json:"replicated"`
	Compared        int                  `json:"compared"`
	Identical       int                  `json:"identical"`
	Tolerated       int                  `json:"tolerated"`
	ChangedPoints   int                  `json:"changed_points"`
	Changes         []changeJSON         `json:"changes"`
	ChangesOmitted  int                  `json:"changes_omitted"`
	Added           int64                `json:"added"`
	AddedPoints     []string             `json:"added_points"`
	Removed         int                  `json:"removed"`
	RemovedPoints   []string             `json:"removed_points"`
	Warnings        []string             `json:"warnings"`
}

type changeJSON struct {
	Point      string     `json:"point"`
	BaselineID int64      `json:"baseline_point_id"`
	RunID      int64      `json:"run_point_id"`
	Metric     string     `json:"metric"`
	Baseline   *float64   `json:"baseline"`
	Run        *float64   `json:"run"`
	Delta      *float64   `json:"delta"`
	RelDelta   *float64   `json:"rel_delta"`
	NBaseline  int        `json:"n_baseline"`
	NRun       int        `json:"n_run"`
	BaselineCI []*float64 `json:"baseline_ci,omitempty"`
	RunCI      []*float64 `json:"run_ci,omitempty"`
	P          *float64   `json:"p,omitempty"`
}

func jsonNum(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func writeCheckJSON(w io.Writer, r *Result, maxRows int) error {
	j := checkJSON{
		Failed: r.Failed(), Summary: r.Summary(), Baseline: r.Baseline, Run: r.Run,
		ScenarioChanged: r.ScenarioChanged, Metrics: r.Metrics, Alpha: r.Options.alpha(),
		Tolerance: r.Options.Default, Tolerances: r.Options.Tolerances, Replicated: r.Replicated,
		Compared: r.Compared, Identical: r.Identical, Tolerated: r.Tolerated, ChangedPoints: r.Points,
		Changes: []changeJSON{}, Added: r.Added, Removed: r.Removed, Warnings: r.Warnings,
	}
	shown := capRows(len(r.Changes), maxRows)
	j.ChangesOmitted = r.ChangedValues - shown
	for _, c := range r.Changes[:shown] {
		cj := changeJSON{Point: c.Point, BaselineID: c.BaselineID, RunID: c.RunID, Metric: c.Metric,
			Baseline: jsonNum(c.Baseline), Run: jsonNum(c.Run), Delta: jsonNum(c.Delta()), RelDelta: jsonNum(c.RelDelta()),
			NBaseline: c.NBaseline, NRun: c.NRun, P: jsonNum(c.P)}
		if c.Replicated() {
			cj.BaselineCI = []*float64{jsonNum(c.BaselineLo), jsonNum(c.BaselineHi)}
			cj.RunCI = []*float64{jsonNum(c.RunLo), jsonNum(c.RunHi)}
		}
		j.Changes = append(j.Changes, cj)
	}
	j.AddedPoints = r.AddedPoints[:capRows(len(r.AddedPoints), maxRows)]
	j.RemovedPoints = r.RemovedPoints[:capRows(len(r.RemovedPoints), maxRows)]
	if j.AddedPoints == nil {
		j.AddedPoints = []string{}
	}
	if j.RemovedPoints == nil {
		j.RemovedPoints = []string{}
	}
	if j.Warnings == nil {
		j.Warnings = []string{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

// checkNum prints whole numbers exactly and others with 6 significant digits.
func checkNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func fmtSigned(v float64) string {
	s := checkNum(v)
	if v > 0 {
		s = "+" + s
	}
	return s
}

func fmtRel(r float64) string {
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*r)
}

func fmtWithCI(v, lo, hi float64) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return checkNum(v)
	}
	return fmt.Sprintf("%s [%s, %s]", checkNum(v), checkNum(lo), checkNum(hi))
}
