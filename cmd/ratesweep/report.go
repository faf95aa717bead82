package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ratesweep/ratesweep/internal/runfs"
	"github.com/ratesweep/ratesweep/report"
	"github.com/ratesweep/ratesweep/sweep"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

func cmdReport(e *env, args []string) error {
	fs := newFlags(e, "report", "[RUN_DIR]",
		"Tables and trade-off plots from a run directory (default out/default): PNG and SVG per plot,\n"+
			"report.md and a self-contained index.html under RUN_DIR/report/.")
	out := fs.String("out", "", "output directory (default RUN_DIR/report)")
	curves := fs.Int("curves", 4, "curves per algorithm on the trade-off plot (values of its second parameter)")
	knees := fs.Int("knees", 2, "frontier knees to show per client and over time")
	quiet := fs.BoolP("quiet", "q", false, "print nothing but errors")
	targets := fs.StringArray("target", nil, "a missed-abuse target for the best-settings table, e.g. 'missed<=5%' (repeatable; default 50%, 25%, 10%)")
	allowIncomplete := fs.Bool("allow-incomplete", false, "report on a run without its manifest.json (interrupted or not merged) or missing parts it lists; every page and plot says so")
	rest, err := parseFlags(fs, args, 1)
	if err != nil {
		return err
	}
	if *curves < 1 {
		return usagef("report: --curves must be >= 1, got %d", *curves)
	}
	if *knees < 0 {
		return usagef("report: --knees must be >= 0, got %d", *knees)
	}
	dir := filepath.Join("out", "default")
	if len(rest) == 1 {
		dir = rest[0]
	}
	inRun := *out == ""
	if inRun {
		*out = filepath.Join(dir, "report")
	}
	opts := report.Options{MaxCurves: *curves, Knees: *knees, AllowIncomplete: *allowIncomplete}
	for _, t := range *targets {
		v, err := report.ParseTarget(t)
		if err != nil {
			return usagef("report: --target: %v", err)
		}
		opts.Targets = append(opts.Targets, v)
	}
	var prog *progress
	opts.Progress = func(rows, total int64) {
		if prog == nil {
			prog = newProgress(e.progressOut(), total, *quiet)
		}
		prog.set(rows)
	}
	var bar *stepBar
	opts.Steps = func(done, total int) {
		if bar == nil {
			bar = newStepBar(e.progressOut(), "drawing", total, *quiet)
		}
		bar.set(done)
	}
	if *knees == 0 {
		opts.Knees = -1 // Options: negative = none
	}
	// Writing into the run directory: no other writer may be live there.
	if st, err := os.Stat(dir); inRun && err == nil && st.IsDir() {
		lock, err := runfs.Acquire(dir, false)
		if err != nil {
			if errors.Is(err, runfs.ErrLocked) {
				return &badInput{err}
			}
			return err
		}
		defer lock.Release()
	}
	start := time.Now()
	r, err := report.Load(e.ctx, dir, opts)
	if prog != nil {
		prog.stop(err == nil)
	}
	if err != nil {
		var ie *sweep.InputError
		if errors.As(err, &ie) {
			return &badInput{err}
		}
		return err
	}
	if !*quiet && time.Since(start) > 5*time.Second {
		fmt.Fprintf(e.stderr, "ratesweep: read %d rows in %.0f s; drawing the figures\n", r.Rows, time.Since(start).Seconds())
	}
	// The report is written into the run directory: no other writer may be
	// live there, and its report/ must be a directory of the run, not a link
	// to elsewhere.
	if inRun {
		if _, err := runfs.Dir(dir, "report"); err != nil {
			return &badInput{fmt.Errorf("report: %w (give --out to write elsewhere)", err)}
		}
	}
	files, err := r.Write(*out)
	if bar != nil {
		bar.stop(err == nil)
	}
	if err != nil {
		return err
	}
	if r.Incomplete != "" {
		fmt.Fprintf(e.stderr, "ratesweep: warning: %s\n", r.Incomplete)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(e.stderr, "ratesweep: warning: %s\n", w)
	}
	if *quiet {
		return nil
	}
	fmt.Fprintf(e.stdout, "read %d points (%d rows, %d files) from %s in %.2f s; frontier: %d points\n",
		r.Points, r.Rows, r.Files, dir, time.Since(start).Seconds(), r.Frontier.Len())
	fmt.Fprintf(e.stdout, "wrote %d files under %s:\n", len(files), *out)
	fmt.Fprintf(e.stdout, "  page     %s\n", filepath.Join(*out, "index.html"))
	fmt.Fprintf(e.stdout, "  markdown %s\n", filepath.Join(*out, "report.md"))
	fmt.Fprintf(e.stdout, "  plot     %s (and .svg)\n", filepath.Join(*out, "tradeoff.png"))
	fmt.Fprintf(e.stdout, "  frontier %s\n", filepath.Join(*out, "frontier.csv"))
	return nil
}

// stepBar is a bar of steps (the report's figures) on a terminal; it shows
// nothing when quiet or when w is not a terminal.
type stepBar struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

func newStepBar(w io.Writer, name string, total int, quiet bool) *stepBar {
	f, ok := w.(*os.File)
	if quiet || !ok || !isTerminal(f) {
		return &stepBar{}
	}
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond))
	bar := p.AddBar(int64(total),
		mpb.PrependDecorators(decor.Name(name+" "), decor.CountersNoUnit("%d / %d")),
		mpb.AppendDecorators(decor.Name("  ETA "), decor.AverageETA(decor.ET_STYLE_GO)),
	)
	return &stepBar{p: p, bar: bar}
}

func (b *stepBar) set(done int) {
	if b.bar != nil {
		b.bar.SetCurrent(int64(done))
	}
}

func (b *stepBar) stop(ok bool) {
	if b.bar == nil {
		return
	}
	if ok {
		b.bar.SetTotal(-1, true)
	} else {
		b.bar.Abort(false)
	}
	b.p.Wait()
}
