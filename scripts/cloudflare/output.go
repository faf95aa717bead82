package main

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// pct is 100·n/d.
func pct(n, d int64) float64 { return 100 * float64(n) / float64(d) }

// spreadStats returns the even realisation's value and the mean, min and
// max over the random ones of f(realisation index).
func spreadStats(f func(k int) float64) (even, mean, lo, hi float64) {
	even = f(0)
	lo, hi = math.Inf(1), math.Inf(-1)
	for k := 1; k < len(realisations); k++ {
		v := f(k)
		mean += v
		lo, hi = min(lo, v), max(hi, v)
	}
	return even, mean / float64(len(realisations)-1), lo, hi
}

// fmtPct formats a percentage with three significant digits.
func fmtPct(v float64) string {
	if v == 0 {
		return "0"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.3g", v), ".")
}

func fmtRange(mean, lo, hi float64) string {
	return fmt.Sprintf("%s [%s–%s]", fmtPct(mean), fmtPct(lo), fmtPct(hi))
}

func windowIndex(w int64) int { return slices.Index(windows, w) }

func markdown(ls []loaded, res [][][]result) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	b.WriteString(docHead)
	w60 := windowIndex(60)

	p("\n## Cloudflare's measure: counter estimate vs exact count (window 60 s)\n\n")
	p("Both count every request. Percent of all the log's requests; random: mean [min–max] over %d seeds.\n\n", len(realisations)-1)
	b.WriteString("| log | requests | limit | exact log rejects % | counter wrongly allows % | wrongly limits % | differ % (even) | differ % (random) |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, l := range ls {
		for _, lim := range tableLimits {
			r := res[i][w60]
			c := r[0].count
			_, mean, lo, hi := spreadStats(func(k int) float64 {
				ck := r[k].count
				return pct(ck.allowed[lim]+ck.limits[lim], ck.requests)
			})
			p("| %s | %d | %d | %s | %s | %s | %s | %s |\n", l.name, c.requests, lim, fmtPct(pct(c.rejected[lim], c.requests)),
				fmtPct(pct(c.allowed[lim], c.requests)), fmtPct(pct(c.limits[lim], c.requests)),
				fmtPct(pct(c.allowed[lim]+c.limits[lim], c.requests)), fmtRange(mean, lo, hi))
		}
	}

	p("\n## All three logs pooled, by window (spread even)\n\n")
	p("Percent of the %d requests of the three logs decided differently, and the same among the requests the exact log rejects (where the limit bites).\n\n", pooledRequests(res, 0))
	b.WriteString("| window s | limit | differ % of all | exact rejects % of all | differ % of rejected |\n|---:|---:|---:|---:|---:|\n")
	for j, w := range windows {
		for _, lim := range tableLimits {
			var d, rej, n int64
			for i := range ls {
				c := res[i][j][0].count
				d += c.allowed[lim] + c.limits[lim]
				rej += c.rejected[lim]
				n += c.requests
			}
			ofRej := "–"
			if rej > 0 {
				ofRej = fmtPct(pct(d, rej))
			}
			p("| %d | %d | %s | %s | %s |\n", w, lim, fmtPct(pct(d, n)), fmtPct(pct(rej, n)), ofRej)
		}
	}

	b.WriteString("\n## As limiters: `sliding_counter` vs `sliding_window` (window 60 s)\n\n")
	b.WriteString("Each limiter counts the requests it admitted (RussellLuo/slidingwindow's counter; the exact log of admitted requests), so a decision feeds back into the next. Percent of all requests decided differently; random: mean [min–max].\n\n")
	b.WriteString("| log | limit | counter admits, exact rejects % | counter rejects, exact admits % | differ % (even) | differ % (random) |\n|---|---:|---:|---:|---:|---:|\n")
	for i, l := range ls {
		r := res[i][w60]
		for li, lim := range limiterLimits {
			if !slices.Contains(tableLimits, lim) {
				continue
			}
			n := r[0].count.requests
			_, mean, lo, hi := spreadStats(func(k int) float64 { return pct(r[k].allowed[li]+r[k].limited[li], n) })
			p("| %s | %d | %s | %s | %s | %s |\n", l.name, lim, fmtPct(pct(r[0].allowed[li], n)), fmtPct(pct(r[0].limited[li], n)),
				fmtPct(pct(r[0].allowed[li]+r[0].limited[li], n)), fmtRange(mean, lo, hi))
		}
	}
	b.WriteString(docTail)
	return b.String()
}

func pooledRequests(res [][][]result, j int) int64 {
	var n int64
	for i := range res {
		n += res[i][j][0].count.requests
	}
	return n
}

var logColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// plotCurves draws, for window 60 s, the percent of requests decided
// differently against the limit: Cloudflare's measure (left) and the two
// limiters with feedback (right), per log, spread even (solid) and the mean
// of the random seeds (dashed), on log axes, with Cloudflare's 0.003%.
func plotCurves(file string, ls []loaded, res [][][]result) error {
	w60 := windowIndex(60)
	left, right := plot.New(), plot.New()
	left.Title.Text = "counter estimate vs exact count (both count every request)"
	right.Title.Text = "sliding_counter vs sliding_window (each counts what it admitted)"
	for _, p := range []*plot.Plot{left, right} {
		p.X.Label.Text = "limit (requests per 60 s window)"
		p.Y.Label.Text = "requests decided differently, %"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Max = 1e-3, 100
		p.X.Min, p.X.Max = 1, float64(maxLimit)
		p.Legend.Top, p.Legend.YOffs, p.Legend.XOffs = true, -vg.Inch/2, -vg.Inch/8
		p.Add(plotter.NewGrid())
		cf, _ := plotter.NewLine(plotter.XYs{{X: 1, Y: 0.003}, {X: float64(maxLimit), Y: 0.003}})
		cf.Color, cf.Dashes = color.Gray{Y: 0x60}, []vg.Length{vg.Points(1), vg.Points(3)}
		p.Add(cf)
		if p == left {
			p.Legend.Add("Cloudflare 2017: 0.003%", cf)
		}
	}
	for i, l := range ls {
		r := res[i][w60]
		n := r[0].count.requests
		for _, even := range []bool{true, false} {
			var leftXY, rightXY plotter.XYs
			for lim := 1; lim <= maxLimit; lim++ {
				v := pct(r[0].count.allowed[lim]+r[0].count.limits[lim], n)
				if !even {
					_, v, _, _ = spreadStats(func(k int) float64 {
						return pct(r[k].count.allowed[lim]+r[k].count.limits[lim], n)
					})
				}
				if v > 0 {
					leftXY = append(leftXY, plotter.XY{X: float64(lim), Y: v})
				}
			}
			for li, lim := range limiterLimits {
				v := pct(r[0].allowed[li]+r[0].limited[li], n)
				if !even {
					_, v, _, _ = spreadStats(func(k int) float64 { return pct(r[k].allowed[li]+r[k].limited[li], n) })
				}
				if v > 0 {
					rightXY = append(rightXY, plotter.XY{X: float64(lim), Y: v})
				}
			}
			name := l.name + ", spread even"
			if !even {
				name = fmt.Sprintf("%s, spread random (mean of %d)", l.name, len(realisations)-1)
			}
			for _, side := range []struct {
				p   *plot.Plot
				xys plotter.XYs
			}{{left, leftXY}, {right, rightXY}} {
				if len(side.xys) == 0 {
					continue
				}
				line, err := plotter.NewLine(side.xys)
				if err != nil {
					return err
				}
				line.Color, line.Width = logColors[i], vg.Points(1.5)
				if !even {
					line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				}
				side.p.Add(line)
				if side.p == left {
					left.Legend.Add(name, line)
				}
			}
		}
	}
	if green, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 1}}); err == nil {
		green.Color, green.Width = logColors[2], vg.Points(1.5)
		left.Legend.Add("elastic: 0 at every limit (not drawn)", green)
	}
	const w, h = 13 * vg.Inch, 5.5 * vg.Inch
	img := vgimgNew(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadY: vg.Inch / 8, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{{left, right}}, tiles, dc)
	left.Draw(canvases[0][0])
	right.Draw(canvases[0][1])
	return savePNG(img, file)
}
