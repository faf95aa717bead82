package recommend

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/ratesweep/ratesweep/internal/markdown"
)

// Write prints r as text, markdown or json.
func Write(w io.Writer, r *Result, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "text", "markdown":
	default:
		return fmt.Errorf("unknown format %q (text, markdown or json)", format)
	}
	md := format == "markdown"
	esc := escaper(md)
	var b strings.Builder
	objective := map[string]string{"missed_pct": "fewest abusive requests missed (%)", "legit_cut_pct": "fewest legitimate requests cut (%)"}[r.Objective]
	worst := ""
	if len(r.Runs) > 1 {
		worst = " in the worst run"
	}
	fmt.Fprintf(&b, "recommend: %s; %d policies, %d meet %s; objective: %s%s\n",
		plural(len(r.Runs), "run"), r.Policies, r.Feasible, esc(strings.Join(r.Constraints, " and ")), objective, worst)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", esc(n))
	}
	if r.Overall == nil {
		fmt.Fprintf(&b, "\nno policy meets the constraints; the nearest miss: %s\n", esc(r.NearestMiss.Label))
		detail(&b, r.NearestMiss, r.Objective, md)
		return output(w, b.String(), md)
	}
	b.WriteString("\n")
	rows := [][]string{{"choice", "policy", "false cut", "missed", "caught", "margin", "flags"}}
	for _, c := range append([]*Choice{r.Overall}, r.ByAlgorithm...) {
		name := c.Algorithm
		if c == r.Overall {
			name = "overall"
		}
		m := worstRun(c, r.Objective)
		var flags []string
		if c.Cliff {
			flags = append(flags, "cliff")
		}
		if len(c.Edges) > 0 {
			flags = append(flags, "grid edge")
		}
		rows = append(rows, []string{name, c.Label, pctCI(m.Measure.LegitCutPct), pctCI(m.Measure.MissedPct), pctCI(m.Measure.CaughtPct), margins(c), strings.Join(flags, ", ")})
	}
	table(&b, rows, md)
	fmt.Fprintf(&b, "\nbest overall: %s\n", esc(r.Overall.Label))
	detail(&b, r.Overall, r.Objective, md)
	return output(w, b.String(), md)
}

// output writes the text, or for Markdown its blocks (mdBlocks).
func output(w io.Writer, text string, md bool) error {
	if md {
		text = mdBlocks(text)
	}
	_, err := io.WriteString(w, text)
	return err
}

// mdBlocks lays the text's lines out as Markdown blocks, so that a renderer
// keeps the text's structure instead of joining its lines into one
// paragraph: a line at the margin is a paragraph of its own, an indented
// line an item of a list nested by its indentation (two spaces a level),
// and table rows a table at the margin, between blank lines. The lines'
// content is escaped already.
func mdBlocks(text string) string {
	var b strings.Builder
	prev := "" // the last line: "p", "li", "table", "blank", or "" before the first
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		body := strings.TrimLeft(l, " ")
		indent := len(l) - len(body)
		kind := "p"
		switch {
		case body == "":
			if prev != "" {
				prev = "blank"
			}
			continue
		case strings.HasPrefix(body, "|"):
			kind = "table"
		case indent > 0:
			kind = "li"
		}
		if prev != "" && (prev == "blank" || kind != prev || kind == "p") {
			b.WriteString("\n")
		}
		switch kind {
		case "table":
			b.WriteString(body)
		case "li":
			b.WriteString(strings.Repeat("  ", indent/2-1) + "- " + body)
		default:
			b.WriteString(body)
		}
		b.WriteString("\n")
		prev = kind
	}
	return b.String()
}

// worstRun is the run where the choice's objective is worst.
func worstRun(c *Choice, objective string) RunFit {
	k := 0
	for i, f := range c.Runs {
		if f.Measure.metric(objective) > c.Runs[k].Measure.metric(objective) {
			k = i
		}
	}
	return c.Runs[k]
}

func detail(b *strings.Builder, c *Choice, objective string, md bool) {
	esc := escaper(md)
	for _, f := range c.Runs {
		m := f.Measure
		fmt.Fprintf(b, "  run %s: false cut %s (%s), missed %s (%s), caught %s (%s)\n", esc(f.Dir),
			countCI(m.FalseCut), pctCI(m.LegitCutPct), countCI(m.Missed), pctCI(m.MissedPct), countCI(m.Caught), pctCI(m.CaughtPct))
		for _, ck := range f.Checks {
			state := "met"
			if !ck.ok() {
				state = "MISSED"
			}
			cross := ""
			if ck.Crosses {
				cross = " (the 95% interval crosses the bound)"
			}
			fmt.Fprintf(b, "    %s: %s, margin %s %s%s\n", esc(ck.Constraint), state, signed(ck.Margin), esc(ck.Unit), cross)
		}
		if f.Own != "" && len(c.Runs) > 1 {
			fmt.Fprintf(b, "    regret: %s pp against this run's own best, %s\n", signed(f.Regret), esc(f.Own))
		}
	}
	if a := c.Across; a != nil {
		ci := "mean and its 95% interval over the runs"
		if !a.LegitCutPct.Mean.HasInterval() {
			ci = fmt.Sprintf("mean; no interval from fewer than %d runs", minIntervalN)
		}
		fmt.Fprintf(b, "  across the %d runs (min / median / max of the runs; %s):\n", len(c.Runs), ci)
		for _, s := range []struct {
			name string
			v    Spread
		}{{"false cut", a.LegitCutPct}, {"missed", a.MissedPct}, {"caught", a.CaughtPct}} {
			fmt.Fprintf(b, "    %-9s  %.2f%% / %.2f%% / %.2f%%; mean %s\n", s.name, s.v.Min, s.v.Median, s.v.Max, pctCI(s.v.Mean))
		}
	}
	if len(c.Neighbors) > 0 {
		b.WriteString("  neighbouring settings (worst run):\n")
		for _, n := range c.Neighbors {
			flag := ""
			if n.Cliff {
				flag = "  CLIFF"
			}
			if !n.Feasible {
				flag += "  (misses a constraint)"
			}
			fmt.Fprintf(b, "    %s=%s: false cut %.2f%% (%s pp), missed %.2f%% (%s pp)%s\n", esc(n.Param), num(n.Value),
				n.LegitCutPct, signed(n.DLegitCut), n.MissedPct, signed(n.DMissed), flag)
		}
	}
	if c.Cliff {
		b.WriteString("  warning: on a cliff: one grid step moves a metric by more than the cliff threshold; sweep finer around it\n")
	}
	for _, e := range c.Edges {
		fmt.Fprintf(b, "  warning: on the edge of the swept range: %s\n", esc(e))
	}
	f := worstRun(c, objective)
	// Log runs keep rows for their busiest keys only; the rest of the false
	// cut falls on the "other keys" rows, which no per-client bound sees.
	rest := f.Measure.FalseCut.Mean
	for _, cl := range f.Measure.Clients {
		rest -= cl.Cut
	}
	others := ""
	if rest >= 0.5 {
		others = fmt.Sprintf("  and %s legitimate requests of the other keys (the log's keys beyond its top_keys rows, "+
			"not counted per key: --max-client-cut cannot check them)\n", count(rest))
	}
	if len(f.Measure.Clients) == 0 {
		if others != "" {
			fmt.Fprintf(b, "  legitimate clients cut in %s: none of the keys with their own row\n%s", esc(f.Dir), others)
			return
		}
		fmt.Fprintf(b, "  legitimate clients cut in %s: none\n", esc(f.Dir))
		return
	}
	defer b.WriteString(others)
	fmt.Fprintf(b, "  legitimate clients cut in %s (%s):\n", esc(f.Dir), esc(c.Why))
	rows := [][]string{{"client", "offered", "cut", "cut %", "why"}}
	for i, cl := range f.Measure.Clients {
		if i == 10 {
			rows = append(rows, []string{fmt.Sprintf("… %d more", len(f.Measure.Clients)-10), "", "", "", ""})
			break
		}
		rows = append(rows, []string{cl.Client, count(cl.Offered), count(cl.Cut), fmt.Sprintf("%.2f%%", cl.Pct), cl.Why})
	}
	anyWhy := false
	for _, cl := range f.Measure.Clients {
		anyWhy = anyWhy || cl.Why != ""
	}
	if !anyWhy { // log runs: no per-second series to explain a cut by
		for i := range rows {
			rows[i] = rows[i][:4]
		}
	}
	var t strings.Builder
	table(&t, rows, md)
	for _, l := range strings.SplitAfter(t.String(), "\n") {
		if l != "" {
			b.WriteString("    " + l)
		}
	}
}

// escaper returns markdown.Escape for Markdown, else the identity
// (text goes to a terminal through the command's own escaping).
func escaper(md bool) func(string) string {
	if md {
		return markdown.Escape
	}
	return func(s string) string { return s }
}

func table(b *strings.Builder, rows [][]string, md bool) {
	if md {
		for i, r := range rows {
			cells := make([]string, len(r))
			for k, c := range r {
				cells[k] = markdown.Escape(c)
			}
			fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
			if i == 0 {
				fmt.Fprintf(b, "|%s\n", strings.Repeat("---|", len(r)))
			}
		}
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func margins(c *Choice) string {
	var out []string
	for _, ck := range c.Runs[0].Checks {
		name, _, _ := strings.Cut(ck.Constraint, " <=")
		name, _, _ = strings.Cut(name, " >=")
		worst := ck.Margin
		for _, f := range c.Runs[1:] {
			for _, k := range f.Checks {
				if k.Constraint == ck.Constraint {
					worst = min(worst, k.Margin)
				}
			}
		}
		out = append(out, fmt.Sprintf("%s %s %s", name, signed(worst), ck.Unit))
	}
	return strings.Join(out, ", ")
}

// pctCI is a percentage with its 95% interval: ± its half-width, or its
// ends where the range of the metric (0–100%) cuts it.
func pctCI(v Interval) string {
	if !v.HasInterval() || v.Hi-v.Lo < 0.005 {
		return fmt.Sprintf("%.2f%%", v.Mean)
	}
	if math.Abs((v.Hi-v.Mean)-(v.Mean-v.Lo)) >= 0.005 {
		return fmt.Sprintf("%.2f%% [%.2f, %.2f]", v.Mean, v.Lo, v.Hi)
	}
	return fmt.Sprintf("%.2f%% ±%.2f", v.Mean, (v.Hi-v.Lo)/2)
}

// countCI is a count with its 95% interval, as pctCI.
func countCI(v Interval) string {
	if !v.HasInterval() || v.Hi-v.Lo < 0.05 {
		return count(v.Mean)
	}
	if math.Abs((v.Hi-v.Mean)-(v.Mean-v.Lo)) >= 0.05 {
		return fmt.Sprintf("%s [%.1f, %.1f]", count(v.Mean), v.Lo, v.Hi)
	}
	return fmt.Sprintf("%s ±%.1f", count(v.Mean), (v.Hi-v.Lo)/2)
}

func count(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

func signed(v float64) string {
	if v == float64(int64(v)) && (v > 10 || v < -10) {
		return fmt.Sprintf("%+d", int64(v))
	}
	return fmt.Sprintf("%+.2f", v)
}

func plural(n int, s string) string {
	if n == 1 {
		return "1 " + s
	}
	return fmt.Sprintf("%d %ss", n, s)
}
