package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
	"golang.org/x/net/html"
)

// tinySpec has a client named like an injection, the lesson's three
// reference settings, and two swept parameters per algorithm.
const tinySpec = `name: "tiny <i>run"
scenario:
  name: "tiny <b>scenario</b> & co"
  duration_s: 120
  clients:
    - name: "<script>alert(1)</script>"
      class: legit
      segments: [[0, 30, 3], [30, 40, 20], [40, 120, 3]]
    - name: steady user
      class: legit
      segments: [[0, 120, 1]]
    - name: scraper
      class: abusive
      stage: none
      segments: [[0, 120, 8]]
    - name: login burst
      class: abusive
      stage: code
      segments: [[20, 50, 15]]
sweep:
  - algorithm: fixed_window
    window_s: [30, 60]
    limit: {from: 100, to: 1000, step: 100}
  - algorithm: sliding_window
    window_s: [30, 60]
    limit: {from: 100, to: 1000, step: 100}
  - algorithm: token_bucket
    rate: [5, 10]
    capacity: [100, 500, 900]
`

const evilName = "<script>alert(1)</script>"

// runSpec runs a spec in-process into a fresh directory.
func runSpec(t *testing.T, yaml string, shards ...sweep.Shard) string {
	t.Helper()
	spec, err := sweep.ParseSpec([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if len(shards) == 0 {
		shards = []sweep.Shard{{Index: 0, Count: 1}}
	}
	for _, s := range shards {
		if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Workers: 1, Shard: s}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadTinyRun(t *testing.T) {
	dir := runSpec(t, tinySpec)
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Points != r.Spec.Points() || r.Rows != r.Points {
		t.Fatalf("points %d rows %d, want %d", r.Points, r.Rows, r.Spec.Points())
	}
	// The lesson's three reference settings come first among the selected.
	if len(r.Refs) != 3 || len(r.Selected) < 3 {
		t.Fatalf("refs %d selected %d, want 3 refs", len(r.Refs), len(r.Selected))
	}
	for i, ref := range lessonRefs {
		if r.Selected[i].Policy != ref || !strings.HasPrefix(r.Selected[i].Why, "lesson:") {
			t.Errorf("selected[%d] = %v (%s), want %v", i, r.Selected[i].Policy, r.Selected[i].Why, ref)
		}
	}
	// Per-client numbers from clients/*.parquet agree with the points row
	// and with a fresh simulation.
	w, err := model.NewWorkload(r.Spec.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Selected {
		var o model.Outcome
		w.NewSimulator().Run(s.Policy, &o)
		// The report reads the judged metrics only, not the account and
		// state columns of keyed runs.
		o.LegitAccounts, o.LegitAccountsLocked = s.LegitAccounts, s.LegitAccountsLocked
		o.StateKeysPeak, o.StateBytesPeak, o.StateMeasured = s.StateKeysPeak, s.StateBytesPeak, s.StateMeasured
		if o.Metrics != s.Metrics {
			t.Errorf("%v: Parquet metrics %+v, simulated %+v", s.Policy, s.Metrics, o.Metrics)
		}
		if len(s.Clients) != len(r.Spec.Scenario.Clients) {
			t.Fatalf("%v: %d clients", s.Policy, len(s.Clients))
		}
		for k, c := range s.Clients {
			if c.Cut != float64(o.Clients[k].Cut()) || c.Offered != float64(o.Clients[k].Offered) {
				t.Errorf("%v client %q: cut %g of %g, simulated %d of %d", s.Policy, c.Name, c.Cut, c.Offered, o.Clients[k].Cut(), o.Clients[k].Offered)
			}
		}
	}
	// Curves: two per algorithm (both secondary values), each along its
	// whole swept axis.
	per := map[model.Algorithm]int{}
	for _, c := range r.Curves {
		per[c.Algorithm]++
		if n := len(c.Points()); n != c.Total {
			t.Errorf("%s: %d points, want %d", c.Label(), n, c.Total)
		}
	}
	for _, a := range []model.Algorithm{model.FixedWindow, model.SlidingWindow, model.TokenBucket} {
		if per[a] != 2 {
			t.Errorf("%s: %d curves, want 2", a, per[a])
		}
	}
	if len(r.Heats) != 3 {
		t.Fatalf("%d heat maps, want 3", len(r.Heats))
	}
}

func TestSelectPoints(t *testing.T) {
	r := &Run{opts: Options{Knees: 2}.withDefaults()}
	ref := pt(7, 10, 10)
	ref.Policy = model.LessonSliding
	r.Refs = []Point{ref}
	for _, p := range []Point{pt(1, 0, 100), pt(2, 2, 60), pt(3, 5, 30), ref, pt(4, 25, 6), pt(5, 40, 4), pt(6, 100, 2)} {
		r.Frontier.Add(p)
	}
	r.selectPoints()
	var ids []int64
	slugs := map[string]bool{}
	for _, s := range r.Selected {
		ids = append(ids, s.ID)
		slugs[s.Slug] = true
	}
	// The reference point is also the frontier's main knee: listed once, as
	// the lesson's point, followed by the next knee.
	if len(ids) != 2 || ids[0] != 7 || r.Selected[0].Why != "lesson: sliding window 600/60 s" || r.Selected[1].Why != "frontier knee" {
		t.Fatalf("selected %v (%v)", ids, r.Selected)
	}
	if len(slugs) != len(ids) {
		t.Fatalf("slugs not unique: %v", slugs)
	}
	r.opts.Knees, r.Selected = -1, nil
	r.selectPoints()
	if len(r.Selected) != 1 {
		t.Fatalf("no knees wanted: %d selected", len(r.Selected))
	}
}

func TestPickIndices(t *testing.T) {
	windows := []float64{10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300}
	for _, c := range []struct {
		vals []float64
		k    int
		must int
		want []int
	}{
		{windows, 4, 5, []int{0, 3, 5, 10}}, // geometric spread 10, 30, 60 (the lesson's), 300
		{windows, 4, -1, []int{0, 3, 6, 10}},
		{windows, 20, 5, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8}, 3, 7, []int{0, 3, 7}}, // linear; must is an end already
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8}, 3, 1, []int{0, 1, 7}},
	} {
		if got := pickIndices(c.vals, c.k, c.must); !slices.Equal(got, c.want) {
			t.Errorf("pickIndices(%v, %d, %d) = %v, want %v", c.vals, c.k, c.must, got, c.want)
		}
	}
}

// A run split into shards (any number of part files, dealt round-robin)
// reports the same as the whole run; a missing shard still reports.
func TestShardsReportLikeOneRun(t *testing.T) {
	spec := strings.Replace(tinySpec, "limit: {from: 100, to: 1000, step: 100}", "limit: {from: 1, to: 1200, step: 1}", 1)
	whole := runSpec(t, spec)
	split := runSpec(t, spec, sweep.Shard{Index: 0, Count: 2}, sweep.Shard{Index: 1, Count: 2})
	if _, err := Load(context.Background(), split, Options{}); !errors.As(err, new(*IncompleteError)) {
		t.Fatalf("unmerged shards: got %v, want an *IncompleteError", err)
	}
	if _, err := sweep.Merge(context.Background(), split, sweep.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := Load(context.Background(), whole, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(context.Background(), split, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Files < 2 || a.Files != b.Files || a.Points != b.Points {
		t.Fatalf("files %d/%d points %d/%d", a.Files, b.Files, a.Points, b.Points)
	}
	if fa, fb := frontierIDs(&a.Frontier), frontierIDs(&b.Frontier); !slices.Equal(fa, fb) {
		t.Fatalf("frontiers differ: %v vs %v", fa, fb)
	}
	half := runSpec(t, spec, sweep.Shard{Index: 1, Count: 2})
	_, err = Load(context.Background(), half, Options{})
	var ie *IncompleteError
	if !errors.As(err, &ie) || len(ie.Missing) == 0 || !strings.Contains(err.Error(), "points/part-") {
		t.Fatalf("half run: got %v, want an *IncompleteError naming the missing parts", err)
	}
	h, err := Load(context.Background(), half, Options{AllowIncomplete: true})
	if err != nil {
		t.Fatal(err)
	}
	if h.Points >= a.Points || h.Points == 0 || h.Incomplete == "" {
		t.Fatalf("half run: %d points of %d, incomplete %q", h.Points, a.Points, h.Incomplete)
	}
	out := t.TempDir()
	if _, err := h.Write(out); err != nil {
		t.Fatal(err)
	}
	// The banner on the page, in report.md and in every figure.
	for _, name := range []string{"index.html", "report.md"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || !bytes.Contains(b, []byte("INCOMPLETE RUN")) {
			t.Errorf("%s has no incomplete-run banner (%v)", name, err)
		}
	}
	svgs, _ := filepath.Glob(filepath.Join(out, "*.svg"))
	for _, f := range svgs {
		b, _ := os.ReadFile(f)
		if !bytes.Contains(b, []byte("INCOMPLETE RUN")) {
			t.Errorf("%s has no incomplete-run banner", f)
		}
	}
	if len(svgs) == 0 {
		t.Error("no figures")
	}
}

func TestWriteReport(t *testing.T) {
	dir := runSpec(t, tinySpec)
	var calls, last, total int64
	r, err := Load(context.Background(), dir, Options{Progress: func(rows, of int64) {
		if rows < last {
			t.Errorf("progress went back from %d to %d rows", last, rows)
		}
		calls, last, total = calls+1, rows, of
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 2 || last != r.Rows || total != r.Rows {
		t.Errorf("progress: %d calls, last %d of %d, want the %d rows read", calls, last, total, r.Rows)
	}
	out := filepath.Join(dir, "report")
	files, err := r.Write(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tradeoff.png", "tradeoff.svg", "heatmap-1-fixed_window.svg", "report.md", "index.html", "frontier.csv"} {
		if !slices.Contains(files, filepath.Join(out, want)) {
			t.Errorf("%s not written (wrote %v)", want, files)
		}
	}
	for _, s := range r.Selected {
		for _, stem := range []string{"clients-", "timeline-"} {
			for _, ext := range []string{".png", ".svg"} {
				if _, err := os.Stat(filepath.Join(out, stem+s.Slug+ext)); err != nil {
					t.Error(err)
				}
			}
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormedHTML(t, page)
	// The card's own script is the page's only one.
	if n := bytes.Count(bytes.ToLower(page), []byte("<script")); n != 1 || !bytes.Contains(page, []byte(`<script id="card-script">`)) {
		t.Errorf("index.html has %d <script> elements, want the card's only: a name was not escaped", n)
	}
	if !bytes.Contains(page, []byte("&lt;script&gt;alert(1)&lt;/script&gt;")) {
		t.Error("index.html does not show the escaped client name")
	}
	if !bytes.Contains(page, []byte("tiny &lt;b&gt;scenario&lt;/b&gt; &amp;")) {
		t.Error("index.html does not show the escaped scenario name")
	}
	// Each font once for the page (in its <style>), none inside the inline SVGs.
	if head, _, _ := strings.Cut(string(page), "</style>"); strings.Count(string(page), "@font-face") != strings.Count(head, "@font-face") ||
		strings.Count(head, "@font-face") == 0 {
		t.Errorf("index.html: %d @font-face rules, %d in its <style>", strings.Count(string(page), "@font-face"), strings.Count(head, "@font-face"))
	}
	if n := strings.Count(string(page), "<svg "); n != len(mustFigures(t, r)) {
		t.Errorf("index.html embeds %d SVGs, want one per figure (%d)", n, len(mustFigures(t, r)))
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(md, []byte(evilName)) {
		t.Error("report.md contains the raw client name")
	}
	// A second report into the same directory replaces the first.
	if _, err := r.Write(out); err != nil {
		t.Fatal(err)
	}
}

func mustFigures(t *testing.T, r *Run) []*Figure {
	t.Helper()
	f, err := r.Figures()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var voidElements = map[string]bool{"meta": true, "link": true, "br": true, "img": true, "hr": true, "input": true}

// checkWellFormedHTML checks that every element is closed in order (void
// elements aside) and that nothing is left open.
func checkWellFormedHTML(t *testing.T, page []byte) {
	t.Helper()
	z := html.NewTokenizer(bytes.NewReader(page))
	var stack []string
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatalf("tokenizer: %v", z.Err())
			}
			if len(stack) > 0 {
				t.Fatalf("unclosed elements at the end: %v", stack)
			}
			return
		case html.StartTagToken:
			name, _ := z.TagName()
			if !voidElements[string(name)] {
				stack = append(stack, string(name))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if len(stack) == 0 || stack[len(stack)-1] != string(name) {
				t.Fatalf("</%s> closes %v", name, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
}

// svgDoc is what the structural checks read from an SVG file: the text of
// every <text> element and the style of every <path>, at any depth.
type svgDoc struct {
	Texts []string
	Paths []struct{ Style string }
}

func parseSVG(b []byte) (svgDoc, error) {
	var doc svgDoc
	d := xml.NewDecoder(bytes.NewReader(b))
	inText := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return doc, nil
		}
		if err != nil {
			return doc, err
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			switch tk.Name.Local {
			case "text":
				inText = true
				doc.Texts = append(doc.Texts, "")
			case "path":
				var st struct{ Style string }
				for _, a := range tk.Attr {
					if a.Name.Local == "style" {
						st.Style = a.Value
					}
				}
				doc.Paths = append(doc.Paths, st)
			}
		case xml.EndElement:
			if tk.Name.Local == "text" {
				inText = false
			}
		case xml.CharData:
			if inText {
				doc.Texts[len(doc.Texts)-1] += string(tk)
			}
		}
	}
}

func TestFiguresRender(t *testing.T) {
	dir := runSpec(t, tinySpec)
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mustFigures(t, r) {
		p, err := f.Render("png")
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(p))
		if err != nil {
			t.Fatalf("%s.png: %v", f.Name, err)
		}
		if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != int(f.W.Dots(pngDPI)+0.5) || h != int(f.H.Dots(pngDPI)+0.5) {
			t.Errorf("%s.png is %d×%d", f.Name, w, h)
		}
		s, err := f.Render("svg")
		if err != nil {
			t.Fatal(err)
		}
		doc, err := parseSVG(s)
		if err != nil {
			t.Fatalf("%s.svg is not well-formed XML: %v", f.Name, err)
		}
		if len(doc.Texts) == 0 || len(doc.Paths) == 0 {
			t.Fatalf("%s.svg: %d texts, %d paths", f.Name, len(doc.Texts), len(doc.Paths))
		}
		if f.Name == "tradeoff" {
			checkTradeoffSVG(t, r, doc)
			// A hover title per visible marker, naming the setting.
			if n := bytes.Count(s, []byte(`<circle `)); n < len(r.Frontier.Points())+len(r.Refs) || !bytes.Contains(s, []byte("<title>frontier: ")) {
				t.Errorf("tradeoff.svg: %d hover circles, no frontier titles", n)
			}
		}
		// Vector drawings only (a raster stretched by a browser misplaced
		// cells), with their font inside.
		if bytes.Contains(s, []byte("<image")) || !bytes.Contains(s, []byte("@font-face")) {
			t.Errorf("%s.svg: has a raster image or no embedded font", f.Name)
		}
		if strings.HasPrefix(f.Name, "clients-") && !slices.Contains(doc.Texts, evilName+" (legit)") {
			t.Errorf("%s.svg: no y label for the client %q", f.Name, evilName)
		}
	}
}

func checkTradeoffSVG(t *testing.T, r *Run, doc svgDoc) {
	t.Helper()
	all := strings.Join(doc.Texts, "\n")
	for _, want := range []string{
		"Raising a limit trades false cuts for missed abuse",
		`run "tiny <i>run", scenario "tiny <b>scenario</b> & co"`,
		"legitimate requests cut (% of all legitimate requests)",
		"abusive requests missed (% of all abusive requests)",
		"Pareto frontier over all",
		"fixed window 600/60 s",
		"token bucket 10/s, capacity 900",
		"0%",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("tradeoff.svg: no text %q", want)
		}
	}
	// One stroked path per curve on the plot plus one legend thumbnail,
	// in the algorithm's colour.
	for _, a := range r.Algos {
		col := algoColor(a.Algorithm)
		stroke := fmt.Sprintf("stroke:#%02X%02X%02X;stroke-width:1.6", col.R, col.G, col.B)
		n := 0
		for _, p := range doc.Paths {
			if strings.Contains(p.Style, stroke) {
				n++
			}
		}
		curves := 0
		for _, c := range r.Curves {
			if c.Algorithm == a.Algorithm && len(c.Points()) > 1 {
				curves++
			}
		}
		if n != 2*curves {
			t.Errorf("tradeoff.svg: %d paths stroked %s, want %d (2 per curve)", n, stroke, 2*curves)
		}
	}
	// The frontier's dark underlay: once on the plot, once per algorithm
	// in the legend.
	frontier := regexp.MustCompile(`stroke-width:5.5\b`)
	n := 0
	for _, p := range doc.Paths {
		if frontier.MatchString(p.Style) {
			n++
		}
	}
	algs := map[model.Algorithm]bool{}
	for _, q := range r.Frontier.Points() {
		algs[q.Policy.Algorithm] = true
	}
	if n != 1+len(algs) {
		t.Errorf("tradeoff.svg: %d frontier underlay paths, want %d (plot and one legend entry per algorithm)", n, 1+len(algs))
	}
}

// Replicates are pooled into one point: same percentages, summed counts,
// per-client numbers averaged.
func TestReplicatesPooled(t *testing.T) {
	one, err := Load(context.Background(), runSpec(t, tinySpec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	two, err := Load(context.Background(), runSpec(t, strings.Replace(tinySpec, "scenario:\n", "replicates: 2\nscenario:\n", 1)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if two.Rows != 2*two.Points || two.Points != one.Points {
		t.Fatalf("rows %d points %d (one replicate: %d points)", two.Rows, two.Points, one.Points)
	}
	a, b := one.Frontier.Points(), two.Frontier.Points()
	if len(a) != len(b) {
		t.Fatalf("frontier %d vs %d points", len(a), len(b))
	}
	for i := range a {
		if a[i].X() != b[i].X() || a[i].Y() != b[i].Y() || 2*a[i].FalseCut != b[i].FalseCut || b[i].Replicates != 2 {
			t.Errorf("frontier[%d]: %+v vs %+v", i, a[i].Point, b[i].Point)
		}
	}
	for i := range one.Selected {
		if !slices.Equal(one.Selected[i].Clients, two.Selected[i].Clients) {
			t.Errorf("selected %d: clients %v vs %v", i, one.Selected[i].Clients, two.Selected[i].Clients)
		}
	}
}

func TestThinAxis(t *testing.T) {
	vals := make([]float64, 100000)
	for i := range vals {
		vals[i] = float64(i + 1)
	}
	got := thinAxis(vals, 2000)
	if len(got) > 2000+20 || got[0] != 0 || got[len(got)-1] != len(vals)-1 || !slices.IsSorted(got) {
		t.Fatalf("thinAxis: %d indices, first %d last %d", len(got), got[0], got[len(got)-1])
	}
	// Low values keep their detail (geometric half) and round values are kept.
	for _, v := range []int{1, 2, 3, 5, 10, 20, 50, 100, 1000, 100000} {
		if !slices.Contains(got, v-1) {
			t.Errorf("value %d not kept", v)
		}
	}
	if got := thinAxis(vals[:50], 2000); len(got) != 50 {
		t.Errorf("short axis thinned to %d", len(got))
	}
}
