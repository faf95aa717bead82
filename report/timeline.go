package report

// The clients figure and the timeline: each client's cut share, and requests
// over time.

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/ratesweep/ratesweep/model"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ClientsFigure draws a selected point's requests per client: a bar per
// client, offered = admitted + cut, coloured by class.
func (r *Run) ClientsFigure(s *Selected) *Figure {
	clients, note := barClients(s.Clients)
	n := len(clients)
	f := &Figure{Name: "clients-" + s.Slug, W: 10 * vg.Inch, H: vg.Length(1.9+0.42*float64(n)) * vg.Inch}
	f.Title = fmt.Sprintf("Requests per client under %s (%s)", s.Policy.String(), s.Why)
	f.Caption = fmt.Sprintf("Each bar is one client's offered requests over %s, split into admitted (light) "+
		"and cut (dark); blue clients are legitimate (their cut is the false cut), vermillion ones abusive (their cut is "+
		"caught, their admitted requests are missed). Totals: %.1f%% of legitimate requests cut, %.1f%% of abusive missed.%s",
		r.span(), s.X(), s.Y(), note)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s — %s\n%.1f%% of legitimate requests cut, %.1f%% of abusive requests missed",
		s.Policy.String(), s.Why, s.X(), s.Y())
	p.X.Label.Text = "requests over " + r.span()
	names := make([]string, n)
	// Top to bottom in scenario order: bar k sits at y = n-1-k.
	vals := map[string][]float64{}
	for _, key := range []string{"la", "lc", "aa", "ac"} {
		vals[key] = make([]float64, n)
	}
	xmax := 1.0
	var labels plotter.XYLabels
	for k, c := range clients {
		y := n - 1 - k
		names[y] = fmt.Sprintf("%s (%s)", ellipsis(c.Name, maxFigureName), c.Class)
		if c.Class == model.Legit {
			vals["la"][y], vals["lc"][y] = c.Admitted, c.Cut
		} else {
			vals["aa"][y], vals["ac"][y] = c.Admitted, c.Cut
		}
		xmax = max(xmax, c.Offered)
		labels.XYs = append(labels.XYs, plotter.XY{X: c.Offered, Y: float64(y)})
		labels.Labels = append(labels.Labels, fmt.Sprintf("cut %s of %s", fmtNum(math.Round(c.Cut)), fmtNum(math.Round(c.Offered))))
	}
	p.NominalY(names...)
	w := vg.Points(16)
	bar := func(key string, col color.Color, on *plotter.BarChart) *plotter.BarChart {
		b, _ := plotter.NewBarChart(plotter.Values(vals[key]), w)
		b.Horizontal = true
		b.Color = col
		b.LineStyle.Width = 0
		if on != nil {
			b.StackOn(on)
		}
		p.Add(b)
		return b
	}
	la := bar("la", colLegitLight, nil)
	lc := bar("lc", colLegit, la)
	aa := bar("aa", colAbusiveLight, nil)
	ac := bar("ac", colAbusive, aa)
	lb, _ := plotter.NewLabels(labels)
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = vg.Points(8)
		lb.TextStyle[i].YAlign = draw.YCenter
	}
	lb.Offset = vg.Point{X: vg.Points(4)}
	p.Add(lb)
	p.X.Min, p.X.Max = 0, xmax*1.22
	p.X.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick { return countTicks(min, max, 6) })
	leg := plot.NewLegend()
	leg.Left, leg.Top = true, true
	leg.TextStyle.Font.Size = vg.Points(9)
	leg.Add("legitimate, admitted", la)
	leg.Add("legitimate, cut (false cut)", lc)
	leg.Add("abusive, admitted (missed)", aa)
	leg.Add("abusive, cut (caught)", ac)
	f.draw = func(c draw.Canvas) {
		c = draw.Crop(c, vg.Points(8), -vg.Points(8), vg.Points(4), -vg.Points(4))
		p.Draw(sub(c, 0, 0.77, 0, 1))
		leg.Draw(sub(c, 0.78, 1, 0, 0.85))
	}
	return f
}

// span says what the requests were offered over: the scenario's duration or
// the replayed log.
func (r *Run) span() string {
	if r.Spec.Scenario == nil {
		return "the replayed log " + r.Spec.WorkloadName()
	}
	return fmt.Sprintf("the %d s scenario", r.Spec.Scenario.DurationS)
}

// replicateNote says which arrivals a timeline draws when they are random.
func replicateNote(sc *model.Scenario, replicates int) string {
	if !sc.Arrivals.Stochastic() {
		return ""
	}
	if replicates > 1 {
		return fmt.Sprintf(" The arrivals are random: the panels draw replicate 0's, as simulated (the bar chart above gives means over the %d replicates).", replicates)
	}
	return " The arrivals are random: the panels draw the ones simulated."
}

// maxTimelineClients bounds the small multiples of a timeline.
const maxTimelineClients = 12

// TimelineFigure draws a selected point's offered and admitted requests per
// second for each client, re-simulated from the run's spec (the model is
// deterministic; random arrivals are replicate 0's of the spec's seed).
// Long scenarios are averaged into at most 600 bins. It returns no figure,
// with a warning, where clients share keys or state.
func (r *Run) TimelineFigure(s *Selected) (*Figure, error) {
	w, err := model.NewWorkload(r.Spec.Scenario)
	if err != nil {
		return nil, err
	}
	if !w.HasTimeline(s.Policy) {
		m := "no per-second timelines for keyed scenarios or policies on several nodes: clients share keys and state there"
		if r.Spec.Scenario.Reacts() {
			m = "no per-second timelines for scenarios whose clients react to rejections: the timelines do not draw retries"
		}
		if !slices.Contains(r.Warnings, m) {
			r.Warnings = append(r.Warnings, m)
		}
		return nil, nil
	}
	offered, adm := w.Timeline(s.Policy, r.Spec.Seed, 0)
	sc := r.Spec.Scenario
	idx := make([]int, len(sc.Clients))
	for i := range idx {
		idx[i] = i
	}
	note := ""
	if len(idx) > maxTimelineClients {
		// Keep the clients with the most requests cut.
		cut := func(i int) int64 {
			var c int64
			for t, a := range offered[i] {
				c += int64(a - adm[i][t])
			}
			return c
		}
		sort.SliceStable(idx, func(a, b int) bool { return cut(idx[a]) > cut(idx[b]) })
		idx = idx[:maxTimelineClients]
		sort.Ints(idx)
		note = fmt.Sprintf(" Only the %d clients with the most requests cut are shown (of %d).", maxTimelineClients, len(sc.Clients))
	}
	bin := (sc.DurationS + 599) / 600
	unit := "requests per second"
	if bin > 1 {
		unit = fmt.Sprintf("requests per second (mean over %d s)", bin)
	}
	f := &Figure{Name: "timeline-" + s.Slug, W: 10 * vg.Inch, H: vg.Length(1.2+1.05*float64(len(idx))) * vg.Inch}
	f.Title = fmt.Sprintf("Offered and admitted requests per second under %s (%s)", s.Policy.String(), s.Why)
	f.Caption = "One panel per client: the grey area is what the client offered each second, the coloured line what the " +
		"limiter admitted (blue legitimate, vermillion abusive); the gap between them is cut. Re-simulated from the spec " +
		"stored in the run's Parquet metadata." + replicateNote(sc, r.Spec.Replicates) + note
	var plots [][]*plot.Plot
	for row, i := range idx {
		c := sc.Clients[i]
		off, ad := offered[i], adm[i]
		var oxy, axy plotter.XYs
		var offSum, admSum int64
		for t0 := 0; t0 < len(off); t0 += bin {
			var o, a int64
			t1 := min(t0+bin, len(off))
			for t := t0; t < t1; t++ {
				o += int64(off[t])
				a += int64(ad[t])
			}
			offSum += o
			admSum += a
			d := float64(t1 - t0)
			// Steps: a point only where the rate changes.
			if y := float64(o) / d; len(oxy) == 0 || oxy[len(oxy)-1].Y != y {
				oxy = append(oxy, plotter.XY{X: float64(t0), Y: y})
			}
			if y := float64(a) / d; len(axy) == 0 || axy[len(axy)-1].Y != y {
				axy = append(axy, plotter.XY{X: float64(t0), Y: y})
			}
		}
		// Close the step at the end of the scenario.
		oxy = append(oxy, plotter.XY{X: float64(len(off)), Y: oxy[len(oxy)-1].Y})
		axy = append(axy, plotter.XY{X: float64(len(off)), Y: axy[len(axy)-1].Y})
		p := plot.New()
		col := colLegit
		if c.Class == model.Abusive {
			col = colAbusive
		}
		p.Title.Text = fmt.Sprintf("%s (%s) — cut %s of %s", c.Name, c.Class, fmtNum(float64(offSum-admSum)), fmtNum(float64(offSum)))
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.Title.Padding = vg.Points(2)
		ol, _ := plotter.NewLine(oxy)
		ol.StepStyle = plotter.PostStep
		ol.FillColor = color.RGBA{0xD0, 0xD0, 0xD0, 0xFF}
		ol.LineStyle = draw.LineStyle{Color: colGrey, Width: vg.Points(0.8)}
		al, _ := plotter.NewLine(axy)
		al.StepStyle = plotter.PostStep
		al.LineStyle = draw.LineStyle{Color: col, Width: vg.Points(1.6)}
		p.Add(plotter.NewGrid(), ol, al)
		p.Y.Min = 0
		p.X.Min, p.X.Max = 0, float64(len(off))
		p.Y.Label.Text = "req/s"
		p.Y.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick { return sparseTicks(min, max) })
		p.X.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
			ts := countTicks(min, max, 10)
			if row != len(idx)-1 { // labels on the bottom panel only
				for i := range ts {
					ts[i].Label = ""
				}
			}
			return ts
		})
		if row == len(idx)-1 {
			p.X.Label.Text = "time (s)"
			p.Legend.Add("offered", ol)
			p.Legend.Add("admitted", al)
			p.Legend.Top = true
			p.Legend.TextStyle.Font.Size = vg.Points(9)
		}
		plots = append(plots, []*plot.Plot{p})
	}
	title := fmt.Sprintf("Offered and admitted %s under %s (%s)\n%s", unit, s.Policy.String(), s.Why, r.headline())
	f.draw = func(c draw.Canvas) {
		ts := textStyle(vg.Points(12))
		ts.XAlign = draw.XCenter
		fillText(c, ts, (c.Min.X+c.Max.X)/2, c.Max.Y-vg.Points(4), title)
		body := draw.Crop(c, vg.Points(4), -vg.Points(14), vg.Points(2), -vg.Points(40))
		tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(4), PadX: vg.Points(4), PadTop: vg.Points(2), PadBottom: vg.Points(2)}
		canvases := plot.Align(plots, tiles, body)
		for i := range plots {
			plots[i][0].Draw(canvases[i][0])
		}
	}
	return f, nil
}

// countTicks gives about n labelled ticks with round values and thousands
// separators.
func countTicks(min, max float64, n int) []plot.Tick {
	step := niceStep(max-min, n)
	var out []plot.Tick
	for v := math.Ceil(min/step) * step; v <= max+step*1e-9; v += step {
		out = append(out, plot.Tick{Value: v, Label: fmtNum(roundTo(v, step))})
	}
	return out
}

// sparseTicks gives at most three labelled ticks (small panels).
func sparseTicks(min, max float64) []plot.Tick {
	step := niceStep(max-min, 2)
	var out []plot.Tick
	for v := math.Ceil(min/step) * step; v <= max; v += step {
		out = append(out, plot.Tick{Value: v, Label: strings.TrimSuffix(fmtNum(v), ".0")})
	}
	return out
}

// maxFigureName is the most characters of a client's name a figure's axis
// shows: a longer name would push the other labels and ticks off the
// figure (the tables hold it whole).
const maxFigureName = 40

// ellipsis is s cut to n characters, the last an ellipsis, when longer.
func ellipsis(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
