package report

// The decision card: for each target, the setting to pick, what it does,
// whom it hurts, what to watch and its configuration, first on the page.

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/export"
	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/recommend"
	"github.com/ratesweep/ratesweep/sweep"
)

// cardClients is how many legitimate clients a pick names: the ones it
// cuts most.
const cardClients = 3

// cardCliffPP is the move of legit cut % or missed %, percentage points,
// at one grid step that marks a pick as on a cliff (recommend's default).
const cardCliffPP = 5

// cardDefaultExport is the export target report.md shows when it can
// express the pick; else the first target that can.
const cardDefaultExport = "nginx"

// CardPick is one target's line of the decision card.
type CardPick struct {
	Target  string // e.g. "25%"; "" when the run has no abusive request (None says so)
	Setting string // algorithm and parameters; "" when no setting reaches the target
	None    string // when no setting reaches the target: the least the run misses
	// Caught, Missed and FalseCut are percentages (of abusive, abusive and
	// legitimate requests), pooled over replicates, with the 95% interval
	// over replicates when the run has at least 3: "81.20% (79.9–82.5)".
	Caught, Missed, FalseCut string
	Clients                  []string // the legitimate clients cut most: "name (120 of 3,000 cut, 4.0%)"
	Warnings                 []string
	Exports                  []CardExport // one per export target
	Default                  int          // the export shown first (defaultExport)
	id                       int64
	policy                   model.Policy
}

// CardExport is a pick's configuration for one export target.
type CardExport struct {
	Target string
	Fit    string // exact, equivalent or nearest
	Text   string // what 'ratesweep export --to TARGET --run RUN' prints
}

// readCache holds the run as recommend and export read it, once per
// report: the card and explore.html share it.
type readCache struct {
	recOnce sync.Once
	rec     *recommend.Run
	recErr  error
	expOnce sync.Once
	exp     []*export.Point
	expErr  error
}

// recommendRun is the run read as recommend reads it (replicate means and
// intervals, the worst client per replicate).
func (r *Run) recommendRun(ctx context.Context) (*recommend.Run, error) {
	r.reads.recOnce.Do(func() { r.reads.rec, r.reads.recErr = recommend.ReadRunWorst(ctx, r.Dir) })
	return r.reads.rec, r.reads.recErr
}

// exportRun is the run's points as export reads them.
func (r *Run) exportRun(ctx context.Context) ([]*export.Point, error) {
	r.reads.expOnce.Do(func() {
		r.reads.exp, r.reads.expErr = export.ReadRun(ctx, r.Dir, sweep.OpenOptions{AllowIncomplete: r.Incomplete != ""})
	})
	return r.reads.exp, r.reads.expErr
}

// Card is the decision card: one CardPick per target (Targets), each the
// pick of the best-settings section (PickSummary); for a run without
// abusive requests, one that says so. Parts the run's files cannot give
// (an incomplete run) are left out.
func (r *Run) Card(ctx context.Context) []CardPick {
	if r.NoAbuse() { // no target tells settings apart: the card says so
		return []CardPick{{None: r.noAbuseLine()}}
	}
	var byID map[int64]*recommend.Measure
	if rec, err := r.recommendRun(ctx); err == nil {
		byID = make(map[int64]*recommend.Measure, len(rec.Labels))
		for _, l := range rec.Labels {
			m := rec.Measures[l]
			byID[m.PointID] = m
		}
	}
	var out []CardPick
	var ids []int64
	for _, tg := range r.Targets() {
		b, ok := r.Frontier.Best(tg.MissedPct)
		if !ok {
			out = append(out, CardPick{Target: tg.label(), None: r.unreachable(&r.Frontier)})
			continue
		}
		c := CardPick{Target: tg.label(), Setting: b.Policy.Algorithm.String() + " " + paramsCell(b.Policy), id: b.ID, policy: b.Policy}
		m := byID[b.ID]
		caught := 100 - b.Y()
		if b.OfferedAbusive > 0 {
			caught = pct(b.Caught, b.OfferedAbusive)
		}
		c.Caught, c.Missed, c.FalseCut = pctCI(caught, nil), pctCI(b.Y(), nil), pctCI(b.X(), nil)
		if m != nil {
			c.Caught, c.Missed, c.FalseCut = pctCI(caught, &m.CaughtPct), pctCI(b.Y(), &m.MissedPct), pctCI(b.X(), &m.LegitCutPct)
		}
		c.Warnings = r.cardWarnings(&b.Point, byID)
		out = append(out, c)
		ids = append(ids, b.ID)
	}
	var pols []model.Policy
	for _, c := range out {
		if c.Setting != "" {
			pols = append(pols, c.policy)
		}
	}
	why := r.whyCut(pols)
	whyOf := map[int64]map[string]string{}
	for _, c := range out {
		if c.Setting != "" {
			whyOf[c.id] = why[c.policy.Canonical()]
		}
	}
	clients := r.pickClients(ctx, ids, func(id int64, name string) string { return whyOf[id][name] })
	exports := map[int64][]CardExport{}
	for i := range out {
		c := &out[i]
		if c.Setting == "" {
			continue
		}
		c.Clients = clients[c.id]
		if _, ok := exports[c.id]; !ok {
			exports[c.id] = r.cardExports(ctx, c.policy)
		}
		c.Exports = exports[c.id]
		if e := c.defaultExport(); e != nil {
			c.Default = slices.IndexFunc(c.Exports, func(x CardExport) bool { return x.Target == e.Target })
		}
	}
	return out
}

// pctCI prints a percentage, with v's 95% interval over replicates when
// it has one.
func pctCI(x float64, v *recommend.Interval) string {
	if v == nil || !v.HasInterval() {
		return fmt.Sprintf("%.2f%%", x)
	}
	return fmt.Sprintf("%.2f%% (%s–%s)", x, sigDigits(v.Lo, 3), sigDigits(v.Hi, 3))
}

// cardWarnings says what to watch with pick p: a cliff next to it on the
// grid, a parameter on an end of its swept range, the delay a shaping
// setting adds, and the retries of clients that react.
func (r *Run) cardWarnings(p *Point, byID map[int64]*recommend.Measure) []string {
	var out []string
	if m := byID[p.ID]; m != nil {
		for _, n := range gridSteps(r.Spec, p.ID) {
			q := byID[n.id]
			if q == nil {
				continue
			}
			dl, dm := q.LegitCutPct.Mean-m.LegitCutPct.Mean, q.MissedPct.Mean-m.MissedPct.Mean
			if math.Abs(dl) > cardCliffPP || math.Abs(dm) > cardCliffPP {
				out = append(out, fmt.Sprintf("cliff: one grid step, to %s=%s, moves legit cut %+.1f and missed %+.1f points; sweep finer here",
					n.param, paramValue(n.value), dl, dm))
				break
			}
		}
	}
	for _, e := range EdgesOfRange(r.Spec, p.ID) {
		out = append(out, "edge of the grid: "+e.String())
	}
	if c := delayCell(p); c != "" && c != "none" {
		out = append(out, fmt.Sprintf("delay: it queues the requests it admits, %s on average (p99 %s)", seconds(p.MeanDelayS), seconds(p.P99DelayS)))
	}
	if rx := &p.Reactions; rx.Measured && rx.AmplificationLegit >= 1.005 {
		out = append(out, fmt.Sprintf("amplification: legitimate clients retry, sending %.2f× the requests they mean to (added latency p99 %.2f s)",
			rx.AmplificationLegit, rx.LegitDelayP99S))
	}
	return out
}

// gridStep is a grid point one step from another along one parameter.
type gridStep struct {
	id    int64
	param string
	value float64
}

// gridSteps are the grid points of spec next to point id: each swept
// numeric parameter one value lower and one higher (in value order), the
// others unchanged.
func gridSteps(spec *sweep.Spec, id int64) []gridStep {
	e, first, idx, ok := spec.Locate(id)
	if !ok {
		return nil
	}
	at := func(axis, k int) int64 { // the point with axis at value index k
		var n int64
		for i, ax := range e.Axes {
			j := idx[i]
			if i == axis {
				j = k
			}
			n = n*int64(len(ax.Values)) + int64(j)
		}
		return first + n
	}
	var out []gridStep
	for i, ax := range e.Axes {
		if prm, _ := model.LookupParam(ax.Param); len(ax.Values) < 2 || len(prm.Values) > 0 {
			continue
		}
		v := ax.Values[idx[i]]
		lower, higher := -1, -1
		for k, w := range ax.Values {
			if w < v && (lower < 0 || w > ax.Values[lower]) {
				lower = k
			}
			if w > v && (higher < 0 || w < ax.Values[higher]) {
				higher = k
			}
		}
		for _, k := range []int{lower, higher} {
			if k >= 0 {
				out = append(out, gridStep{at(i, k), ax.Param, ax.Values[k]})
			}
		}
	}
	return out
}

// pickClients returns, per point of ids, the legitimate clients it cuts
// most (means over replicates), read from the clients rows of those points
// only, each with why(id, name), the causes of its cuts when known (whyCut).
// A run whose clients files cannot be read gets none.
func (r *Run) pickClients(ctx context.Context, ids []int64, why func(id int64, name string) string) map[int64][]string {
	out := map[int64][]string{}
	if len(ids) == 0 {
		return out
	}
	run, err := sweep.OpenRun(r.Dir, sweep.OpenOptions{AllowIncomplete: true})
	if err != nil {
		return out
	}
	type acc struct{ offered, cut float64 }
	sums := map[int64]map[string]*acc{}
	byFile := map[string][]int64{}
	var files []string
	for _, id := range ids {
		if _, ok := sums[id]; ok {
			continue
		}
		sums[id] = map[string]*acc{}
		f := run.ClientsFile(id, r.Spec.Points())
		if _, ok := byFile[f]; !ok {
			files = append(files, f)
		}
		byFile[f] = append(byFile[f], id)
	}
	others := map[string]bool{} // a replayed log's rows of many keys
	if r.Spec.Scenario == nil {
		for _, s := range append([]model.Stage{model.NoStage}, model.Stages...) {
			others[ingest.OtherRowName(s)] = true
		}
	}
	for _, f := range files {
		want := byFile[f]
		keep := func(lo, hi int64) bool {
			return slices.ContainsFunc(want, func(id int64) bool { return id >= lo && id <= hi })
		}
		if sweep.Confine(r.Dir, f) != nil {
			continue
		}
		err := sweep.ScanPointRange(ctx, f, []string{"point_id", "client", "offered", "cut", "class"}, keep, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				id, _ := sweep.Int(c[0], i)
				s, ok := sums[id]
				if !ok {
					continue
				}
				if class, _ := sweep.String(c[4], i); class != model.Legit.String() {
					continue
				}
				name, _ := sweep.String(c[1], i)
				if others[name] {
					continue // many keys summed: not one client
				}
				a := s[name]
				if a == nil {
					a = &acc{}
					s[strings.Clone(name)] = a
				}
				off, _ := sweep.Int(c[2], i)
				cut, _ := sweep.Int(c[3], i)
				a.offered += float64(off)
				a.cut += float64(cut)
			}
			return nil
		})
		if err != nil {
			for _, id := range want {
				delete(sums, id)
			}
		}
	}
	for id, s := range sums {
		names := make([]string, 0, len(s))
		for n, a := range s {
			if a.cut > 0 {
				names = append(names, n)
			}
		}
		slices.SortFunc(names, func(a, b string) int {
			if c := cmp.Compare(s[b].cut, s[a].cut); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		reps := float64(max(1, r.Spec.Replicates))
		var lines []string
		for _, n := range names[:min(cardClients, len(names))] {
			a := s[n]
			because := ""
			if w := why(id, n); w != "" && reps > 1 {
				because = "; why, in replicate 0: " + w
			} else if w != "" {
				because = "; why: " + w
			}
			lines = append(lines, fmt.Sprintf("%s (%s of %s cut, %.1f%%%s)", visible(n),
				fmtNum(math.Round(a.cut/reps)), fmtNum(math.Round(a.offered/reps)), 100*a.cut/max(a.offered, 1), because))
		}
		out[id] = lines
	}
	return out
}

// cardExports is policy p's configuration for every export target (the
// nearest setting of the run a target can express, where it cannot).
func (r *Run) cardExports(ctx context.Context, p model.Policy) []CardExport {
	pts, err := r.exportRun(ctx)
	if err != nil {
		return nil
	}
	o := export.Options{Nodes: 1, Zone: "ratesweep"}
	var out []CardExport
	for _, t := range export.Targets {
		res, asked, exported, err := export.NearestIn(p, t, pts, o)
		if err != nil {
			continue
		}
		var b bytes.Buffer
		if err := export.Write(&b, res, asked, exported, r.Dir); err != nil {
			continue
		}
		out = append(out, CardExport{Target: t, Fit: res.Fit.String(), Text: b.String()})
	}
	return out
}

// defaultExport is the export report.md shows: cardDefaultExport when it
// expresses the pick, else the first target that does, else the first.
func (c *CardPick) defaultExport() *CardExport {
	if len(c.Exports) == 0 {
		return nil
	}
	best := &c.Exports[0]
	for i := range c.Exports {
		e := &c.Exports[i]
		if e.Fit == "nearest" {
			continue
		}
		if e.Target == cardDefaultExport {
			return e
		}
		if best.Fit == "nearest" {
			best = e
		}
	}
	return best
}

// cardNote explains the card's numbers.
const cardNote = "For each target, the setting with the least legitimate cut that misses at most the target. " +
	"caught and missed: % of the abusive requests; false cut: % of the legitimate requests; in brackets, the 95% interval over replicates."

// cardTable is the decision card as a table (report.md).
func cardTable(picks []CardPick) *Table {
	t := &Table{
		Headers: []string{"missed at most", "setting", "caught", "missed", "false cut", "hurts most (legitimate)", "watch"},
		Right:   []bool{true, false, true, true, true, false, false},
	}
	for _, c := range picks {
		if c.Target == "" {
			t.AddRow("–", c.None, "–", "–", "–", "", "")
			continue
		}
		if c.Setting == "" {
			t.AddRow(c.Target, "none reaches it: "+c.None, "–", "–", "–", "", "")
			continue
		}
		hurts := strings.Join(c.Clients, "; ")
		if hurts == "" {
			hurts = "none cut"
		}
		t.AddRow(c.Target, c.Setting, c.Caught, c.Missed, c.FalseCut, hurts, strings.Join(c.Warnings, "; "))
	}
	t.Note = cardNote
	return t
}

// writeCardMarkdown writes the decision card: its table, then each pick's
// configuration for one export target in a fenced block.
func writeCardMarkdown(w *bytes.Buffer, picks []CardPick) error {
	if len(picks) == 0 {
		return nil
	}
	w.WriteString("## What to pick\n\n")
	if err := cardTable(picks).WriteMarkdown(w); err != nil {
		return err
	}
	w.WriteString("\n")
	done := map[int64]bool{}
	for _, c := range picks {
		e := c.defaultExport()
		if e == nil || done[c.id] {
			continue
		}
		done[c.id] = true
		fmt.Fprintf(w, "Missed at most %s, exported for %s (%s; `ratesweep export --to TARGET` for another):\n\n", mdEscape(c.Target), e.Target, e.Fit)
		fence := strings.Repeat("`", max(3, longestRun(e.Text, '`')+1))
		fmt.Fprintf(w, "%s\n%s", fence, e.Text)
		if !strings.HasSuffix(e.Text, "\n") {
			w.WriteString("\n")
		}
		w.WriteString(fence + "\n\n")
	}
	return nil
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := range len(s) {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// cardScript switches a pick's export to the target chosen and copies it
// (the clipboard API, else the text selected for the reader to copy). It
// loads nothing.
const cardScript = `for (const d of document.querySelectorAll("#pick .export")) {
  const sel = d.querySelector("select"), pres = d.querySelectorAll("pre"), msg = d.querySelector(".copied");
  const show = () => { pres.forEach((p, k) => { p.hidden = k !== sel.selectedIndex; }); msg.textContent = ""; };
  sel.addEventListener("change", show);
  show();
  d.querySelector("button").addEventListener("click", () => {
    const p = pres[sel.selectedIndex];
    const select = () => {
      const r = document.createRange();
      r.selectNodeContents(p);
      getSelection().removeAllRanges();
      getSelection().addRange(r);
      let ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      msg.textContent = ok ? "copied" : "selected: copy it with Ctrl+C (⌘C)";
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(p.textContent).then(() => { msg.textContent = "copied"; }, select);
    } else {
      select();
    }
  });
}`
