package report

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/ratesweep/ratesweep/internal/runfs"
	"github.com/ratesweep/ratesweep/internal/textsafe"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
	"golang.org/x/sync/errgroup"
)

// Figures returns every figure of the report, in page order.
func (r *Run) Figures() ([]*Figure, error) {
	figs, err := r.figures()
	if err != nil {
		return nil, err
	}
	if r.Incomplete != "" {
		for _, f := range figs {
			f.Banner = r.Incomplete
		}
	}
	return figs, nil
}

func (r *Run) figures() ([]*Figure, error) {
	figs := []*Figure{r.TradeoffFigure()}
	if all := r.TradeoffAllFigure(); all != nil {
		figs = append(figs, all)
	}
	for i, h := range r.Heats {
		figs = append(figs, r.HeatFigure(i, h))
	}
	for i := range r.Selected {
		s := &r.Selected[i]
		if s.Clients != nil {
			figs = append(figs, r.ClientsFigure(s))
		}
		if r.Spec.Scenario == nil {
			continue // a replayed log has no scenario to re-simulate
		}
		if sweep.ShouldStream(r.Spec.Scenario, sweep.DefaultMaxMemory()) {
			// Every client's per-second timeline would not fit in memory.
			if w := fmt.Sprintf("no timelines: the scenario's per-second series (%d clients × %d s) are too large to re-simulate",
				len(r.Spec.Scenario.Clients), r.Spec.Scenario.DurationS); !slices.Contains(r.Warnings, w) {
				r.Warnings = append(r.Warnings, w)
			}
			continue
		}
		t, err := r.TimelineFigure(s)
		if err != nil {
			return nil, err
		}
		if t != nil {
			figs = append(figs, t)
		}
	}
	return figs, nil
}

// rendered is a figure drawn in both formats.
type rendered struct {
	*Figure
	SVG []byte
}

// outputGlobs are the files Write owns in the output directory; stale ones
// from an earlier report are removed first (and only they: run --force
// removes no other file of RUN_DIR/report/).
var outputGlobs = sweep.ReportGlobs

// Write renders the report into dir (created if needed): a PNG and an SVG per
// figure, frontier.csv, report.md and a self-contained index.html. It
// returns the paths written.
func (r *Run) Write(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, g := range outputGlobs {
		old, _ := filepath.Glob(filepath.Join(dir, g))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return nil, err
			}
		}
	}
	figs, err := r.Figures()
	if err != nil {
		return nil, err
	}
	var written []string
	put := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		if filepath.Ext(name) != ".png" {
			// Whatever a name or key carried: no control character or
			// bidirectional override reaches a text output raw.
			if s := string(data); !textsafe.Clean(s) {
				data = []byte(textsafe.Escape(s))
			}
		}
		if err := runfs.WriteFile(dir, name, data); err != nil { // replaces a link, never follows it
			return err
		}
		written = append(written, p)
		return nil
	}
	step := func(done int) {
		if r.opts.Steps != nil {
			r.opts.Steps(done, len(figs)+1)
		}
	}
	step(0)
	// The figures are drawn at once, as many as there are processors: each
	// is its own drawing, so the files do not depend on the order.
	type drawn struct{ png, svg, file []byte }
	res := make([]drawn, len(figs))
	var mu sync.Mutex
	done := 0
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, f := range figs {
		g.Go(func() error {
			p, err := f.Render("png")
			if err != nil {
				return err
			}
			s, err := f.Render("svg")
			if err != nil {
				return err
			}
			file, err := subsetFonts(s)
			if err != nil {
				return err
			}
			res[i] = drawn{p, s, file}
			mu.Lock()
			done++
			step(done)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []rendered
	for i, f := range figs {
		if err := put(f.Name+".png", res[i].png); err != nil {
			return nil, err
		}
		if err := put(f.Name+".svg", res[i].file); err != nil {
			return nil, err
		}
		out = append(out, rendered{Figure: f, SVG: res[i].svg}) // the page shares each whole font among its figures
	}
	var csv bytes.Buffer
	if err := r.WriteFrontierCSV(&csv); err != nil {
		return nil, err
	}
	if err := put("frontier.csv", csv.Bytes()); err != nil {
		return nil, err
	}
	lesson, err := r.lessonTables()
	if err != nil {
		return nil, err
	}
	card := r.Card(context.Background())
	var md bytes.Buffer
	if err := r.writeMarkdown(&md, out, lesson, card); err != nil {
		return nil, err
	}
	if err := put("report.md", md.Bytes()); err != nil {
		return nil, err
	}
	var page bytes.Buffer
	if err := r.writeHTML(&page, out, lesson, card); err != nil {
		return nil, err
	}
	if err := put("index.html", page.Bytes()); err != nil {
		return nil, err
	}
	if err := r.putExplore(put); err != nil {
		return nil, err
	}
	r.reads = readCache{} // the card and explore.html are written: their reads go
	step(len(figs) + 1)
	return written, nil
}

// lessonTables re-simulates the lesson's tables over the run's scenario.
func (r *Run) lessonTables() ([]*Table, error) {
	if r.Spec.Scenario == nil {
		return nil, nil // a replayed log
	}
	if sc := r.Spec.Scenario; sweep.ShouldStream(sc, sweep.DefaultMaxMemory()) {
		// Fifteen re-simulations of a long scenario client by client would
		// take minutes; 'ratesweep tables' computes them on request.
		if w := fmt.Sprintf("no lesson tables: the scenario is long (%d clients × %d s); 'ratesweep tables' with its scenario computes them",
			len(sc.Clients), sc.DurationS); !slices.Contains(r.Warnings, w) {
			r.Warnings = append(r.Warnings, w)
		}
		return nil, nil
	}
	w, err := model.NewWorkload(r.Spec.Scenario)
	if err != nil {
		return nil, inputErrorf("%s: the scenario in the metadata: %v", r.Dir, err)
	}
	tables := LessonTables(model.ComputeLesson(w))
	tables[0] = topCutRows(tables[0]) // a long list of clients: the ones cut most
	return tables, nil
}

func (r *Run) title() string {
	return fmt.Sprintf("ratesweep report: %s", r.headline())
}

const lessonIntro = "The lesson's own tables (its three window shapes at 600 requests per minute, and its limit and capacity sweeps), " +
	"re-simulated over this run's scenario from the spec stored in the Parquet metadata."

func (r *Run) writeMarkdown(w *bytes.Buffer, figs []rendered, lesson []*Table, card []CardPick) error {
	fmt.Fprintf(w, "# %s\n\n", mdEscape(r.title()))
	if err := writeCardMarkdown(w, card); err != nil {
		return err
	}
	fmt.Fprintf(w, "Which algorithm and setting cuts the fewest legitimate requests for the abuse it must stop? "+
		"Every setting of the sweep is one point: legitimate requests cut (x) against abusive requests missed (y).\n\n")
	if r.Incomplete != "" {
		fmt.Fprintf(w, "> **%s**\n\n", mdEscape(r.Incomplete))
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, "> warning: %s\n\n", mdEscape(wn))
	}
	tables := r.Tables()
	section := func(title string, ts []*Table, fs []rendered) error {
		if title != "" {
			fmt.Fprintf(w, "## %s\n\n", mdEscape(title))
		}
		for _, f := range fs {
			alt := mdEscape(f.Title) // escapes "[" and "]" too
			fmt.Fprintf(w, "![%s](%s.png)\n\n%s ([SVG](%s.svg))\n\n", alt, f.Name, mdEscape(f.Caption), f.Name)
		}
		for _, t := range ts {
			if err := t.WriteMarkdown(w); err != nil {
				return err
			}
			w.WriteString("\n")
		}
		return nil
	}
	groups := r.groups(figs)
	if err := section("Trade-off", tables[:1], groups.tradeoff); err != nil {
		return err
	}
	fmt.Fprintf(w, "## Best settings\n\n%s\n\n", mdEscape(pickIntro))
	for _, l := range r.PickSummary() {
		fmt.Fprintf(w, "- %s\n", mdEscape(l))
	}
	w.WriteString("\n")
	if err := section("", tables[1:2], nil); err != nil {
		return err
	}
	if len(groups.heat) > 0 {
		if err := section("Two parameters at once", nil, groups.heat); err != nil {
			return err
		}
	}
	if err := section("Selected settings, per client and over time", tables[2:4], groups.selected); err != nil {
		return err
	}
	if err := section("Pareto frontier", tables[4:], nil); err != nil {
		return err
	}
	fmt.Fprintf(w, "## The lesson's tables\n\n%s\n\n", lessonIntro)
	for _, t := range lesson {
		if err := t.WriteMarkdown(w); err != nil {
			return err
		}
		w.WriteString("\n")
	}
	return nil
}

type figGroups struct{ tradeoff, heat, selected []rendered }

func (r *Run) groups(figs []rendered) figGroups {
	var g figGroups
	for _, f := range figs {
		switch {
		case f.Name == "tradeoff", f.Name == "tradeoff-all": // the second trade-off plot belongs with the first
			g.tradeoff = append(g.tradeoff, f)
		case strings.HasPrefix(f.Name, "heatmap-"):
			g.heat = append(g.heat, f)
		default:
			g.selected = append(g.selected, f)
		}
	}
	return g
}

// inlineSVG prepares gonum's SVG output for embedding in HTML: the XML
// declaration goes, the rest is kept (gonum escapes all text it draws).
func inlineSVG(b []byte, label string) template.HTML {
	s := string(b)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	s = strings.Replace(s, "<svg ", `<svg role="img" aria-label="`+template.HTMLEscapeString(label)+`" `, 1)
	return template.HTML(s)
}

type htmlFig struct {
	Name, Title, Caption string
	SVG                  template.HTML
}

type htmlSection struct {
	ID, Title string
	Intro     string
	Bullets   []string
	Figs      []htmlFig
	Tables    []template.HTML
}

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
{{.Fonts}}
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 1em auto; padding: 0 1em; color: #222; line-height: 1.4; overflow-wrap: anywhere; }
.scroll { max-width: 100%; overflow-x: auto; }
nav a { margin-right: 1em; }
figure { margin: 1.5em 0; }
figure svg { display: block; width: 100%; height: auto; border: 1px solid #ddd; box-sizing: border-box; }
figure svg image { image-rendering: pixelated; }
figcaption { font-size: 0.92em; color: #444; margin-top: 0.4em; }
table { border-collapse: collapse; margin: 1em 0 0.3em; font-size: 0.9em; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; }
th { background: #f3f3f3; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
p.note { font-size: 0.85em; color: #555; margin-top: 0; }
.card { border: 2px solid #0072b2; border-radius: 6px; padding: 0.2em 0.8em 0.4em; margin: 0.5em 0 1em; background: #f5f9fc; }
.card h2 { margin: 0.2em 0; font-size: 1.15em; }
.pick-card { border-top: 1px solid #c8d8e8; padding: 0.3em 0; }
.pick-card p { margin: 0.1em 0; }
.tgt { font-weight: 600; white-space: nowrap; }
.pick-head code { font-weight: 600; }
.nums b { font-weight: 600; font-variant-numeric: tabular-nums; }
.hurts, .watch { font-size: 0.9em; }
.watch { color: #703000; }
.export summary { cursor: pointer; color: #0057a0; font-size: 0.9em; }
.export pre { max-height: 24em; overflow: auto; background: #fff; border: 1px solid #ccc; padding: 0.4em; font-size: 0.8em; white-space: pre-wrap; overflow-wrap: anywhere; }
/* A phone: figures scale to the page's width; the page never scrolls
   sideways. */
@media (max-width: 820px) {
  body { padding: 0 0.5em; }
  h1 { font-size: 1.3em; margin: 0.3em 0; }
  .card { font-size: 0.92em; line-height: 1.3; padding: 0.1em 0.6em 0.3em; }
  figure { margin: 1em 0; }
  td, th { overflow-wrap: normal; }
}
.incomplete { position: sticky; top: 0; z-index: 1; background: #ffe0a0; color: #703000; border: 2px solid #d55e00; padding: 0.5em 1em; }
.warning { background: #fff4e0; border-left: 4px solid #e69f00; padding: 0.5em 1em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Card}}<section id="pick" class="card" aria-label="What to pick">
<h2>What to pick</h2>
{{range .Card}}<div class="pick-card">
{{if not .Target}}<p>{{.None}}</p>
{{else}}<p class="pick-head"><span class="tgt">missed ≤ {{.Target}}:</span> {{if .Setting}}<code>{{.Setting}}</code>{{else}}no setting reaches it{{end}}</p>
{{if .Setting}}<p class="nums">caught <b>{{.Caught}}</b> · missed <b>{{.Missed}}</b> · false cut <b>{{.FalseCut}}</b></p>
{{if .Clients}}<p class="hurts">hurts most: {{range $j, $n := .Clients}}{{if $j}}; {{end}}{{$n}}{{end}}</p>
{{end}}{{range .Warnings}}<p class="watch">⚠ {{.}}</p>
{{end}}{{if .Exports}}{{$d := .Default}}<details class="export"><summary>its configuration</summary>
<p class="export-bar"><label>for <select>{{range $k, $e := .Exports}}<option value="{{$e.Target}}"{{if eq $k $d}} selected{{end}}>{{$e.Target}}{{if eq $e.Fit "nearest"}} (nearest it can express){{end}}</option>{{end}}</select></label> <button type="button">Copy</button> <span class="copied" aria-live="polite"></span></p>
{{range $k, $e := .Exports}}<pre{{if ne $k $d}} hidden{{end}}>{{$e.Text}}</pre>
{{end}}</details>
{{end}}{{else}}<p class="nums">{{.None}}</p>
{{end}}{{end}}</div>
{{end}}</section>
<p class="note">{{.CardNote}} More in <a href="#best">Best settings</a>.</p>
<script id="card-script">{{.CardJS}}</script>
{{end}}<p>Which algorithm and setting cuts the fewest legitimate requests for the abuse it must stop?
Every setting of the sweep is one point: legitimate requests cut (x) against abusive requests missed (y).
Files: <a href="report.md">report.md</a>, <a href="frontier.csv">frontier.csv</a>, and a PNG and an SVG per figure beside this page.</p>
{{if .Incomplete}}<p class="incomplete" id="incomplete-run"><strong>{{.Incomplete}}</strong></p>
{{end}}{{range .Warnings}}<p class="warning">warning: {{.}}</p>
{{end}}<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Title}}</a> {{end}}</nav>
{{range .Sections}}<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{if .Intro}}<p>{{.Intro}}</p>
{{end}}{{if .Bullets}}<ul class="pick">{{range .Bullets}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{range .Figs}}<figure id="fig-{{.Name}}">
<div class="scroll">{{.SVG}}</div>
<figcaption><strong>{{.Title}}.</strong> {{.Caption}} <a href="{{.Name}}.png">PNG</a> · <a href="{{.Name}}.svg">SVG</a></figcaption>
</figure>
{{end}}{{range .Tables}}{{.}}{{end}}</section>
{{end}}</body>
</html>
`))

func (r *Run) writeHTML(w *bytes.Buffer, figs []rendered, lesson []*Table, card []CardPick) error {
	html := func(ts []*Table) ([]template.HTML, error) {
		var out []template.HTML
		for _, t := range ts {
			var b bytes.Buffer
			if err := t.WriteHTML(&b); err != nil {
				return nil, err
			}
			out = append(out, template.HTML(`<div class="scroll">`+b.String()+"</div>\n")) // Table.WriteHTML escapes every cell
		}
		return out, nil
	}
	// Each font once for the page, not once per inline SVG.
	var fonts []string
	pk := newSVGPacker()
	conv := func(fs []rendered) []htmlFig {
		var out []htmlFig
		for _, f := range fs {
			svg, faces := splitFonts(f.SVG)
			for _, fc := range faces {
				if !slices.Contains(fonts, fc) {
					fonts = append(fonts, fc)
				}
			}
			out = append(out, htmlFig{f.Name, f.Title, f.Caption, inlineSVG(pk.pack(svg), f.Title)})
		}
		return out
	}
	tables := r.Tables()
	g := r.groups(figs)
	var secs []htmlSection
	add := func(id, title, intro string, fs []rendered, ts []*Table) error {
		h, err := html(ts)
		if err != nil {
			return err
		}
		if len(fs) == 0 && len(h) == 0 {
			return nil
		}
		sec := htmlSection{ID: id, Title: title, Intro: intro, Figs: conv(fs), Tables: h}
		if id == "best" {
			sec.Bullets = r.PickSummary()
		}
		secs = append(secs, sec)
		return nil
	}
	steps := []struct {
		id, title, intro string
		fs               []rendered
		ts               []*Table
	}{
		{"tradeoff", "Trade-off", "", g.tradeoff, tables[:1]},
		{"best", "Best settings", pickIntro, nil, tables[1:2]},
		{"heatmaps", "Two parameters at once", "", g.heat, nil},
		{"selected", "Selected settings, per client and over time", "", g.selected, tables[2:4]},
		{"frontier", "Pareto frontier", "", nil, tables[4:]},
		{"lesson", "The lesson's tables", lessonIntro, nil, lesson},
	}
	for _, s := range steps {
		if err := add(s.id, s.title, s.intro, s.fs, s.ts); err != nil {
			return err
		}
	}
	// The page's fonts keep the glyphs its figures draw, nothing else.
	svgs := make([][]byte, len(figs))
	for i, f := range figs {
		svgs[i] = f.SVG
	}
	fonts, err := subsetFaces(fonts, svgs)
	if err != nil {
		return err
	}
	fonts = append(fonts, pk.css())
	return pageTmpl.Execute(w, struct {
		Title      string
		Incomplete string
		Fonts      template.CSS
		Warnings   []string
		Sections   []htmlSection
		Card       []CardPick
		CardJS     template.JS
		CardNote   string
	}{r.title(), r.Incomplete, template.CSS(strings.Join(fonts, "\n")), r.Warnings, secs, card, template.JS(cardScript), cardNote})
}
