package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

func cmdInspect(e *env, args []string) error {
	fs := newFlags(e, "inspect", "[LOG] [--spec SPEC.yaml]",
		"Profile an access log (requests, span, keys, malformed lines, peak and p99 requests/s, top keys) to help choose a grid.\n"+
			"LOG is Common/Combined Log Format, the NASA TSV, CSV, JSON lines (envoy, caddy, traefik, cloudflare, gcp-lb or field paths), AWS ALB, W3C, envoy's text log, HAProxy's HTTP log or nginx by its log_format (plain, gzip, zstd, bzip2 or xz; - reads standard input), or Parquet;\n"+
			"the format is detected unless given. --spec reads log, key and rules from a traffic section.")
	spec := fs.String("spec", "", "take the log, format, key and rules from this spec's traffic: section (LOG overrides its log)")
	format := fs.String("format", "auto", "log format: auto | clf | combined | nasa-tsv | csv | parquet | jsonl | envoy | caddy | traefik | cloudflare | gcp-lb | alb | w3c | envoy-text | haproxy | nginx")
	logFormat := fs.String("log-format", "", "envoy-text, haproxy, nginx: the format string (envoy format string, HAProxy log-format, nginx log_format); default the vendor's")
	trusted := fs.StringSlice("trusted-proxies", nil, "envoy-text, haproxy, nginx, JSON formats: addresses or CIDR prefixes of proxies in front (comma-separated): the key ip is the first X-Forwarded-For hop from the right not among them")
	key := fs.String("key", "ip", "rate-limit key: comma-separated fields ("+strings.Join(ingest.FieldNames, ", ")+")")
	depth := fs.Int("path-depth", 1, "path segments kept by the path_prefix key field")
	rules := fs.String("rules", "", "labelling rules file (YAML with rules: [...])")
	csvTime := fs.String("csv-time", "", "csv, parquet: the time column; jsonl: its field path")
	csvTimeFormat := fs.String("csv-time-format", "unix", "csv, parquet, jsonl: unix | unix_ms | unix_us | unix_ns | rfc3339 | clf | auto (Parquet timestamps need none; jsonl defaults to auto)")
	csvCols := fs.StringSlice("csv-column", nil, "csv, parquet: FIELD=COLUMN; jsonl and presets: FIELD=PATH; repeatable (fields: ip, user, method, path, status, user_agent, referer, label)")
	csvDelim := fs.String("csv-delimiter", ",", "csv: the field delimiter (\\t for tab)")
	top := fs.Int("top", 10, "keys to list")
	window := fs.Int("window", 60, "window for peak counts, seconds")
	strict := fs.Bool("strict", false, "fail on the first malformed line")
	maxLine := fs.Int("max-line-bytes", ingest.DefaultMaxLineBytes, "longer lines are malformed")
	quiet := fs.BoolP("quiet", "q", false, "print the profile only (no progress or file notes on stderr)")
	maxMemory := fs.String("max-memory", "", "refuse a log whose memory estimate (its requests and keys, bounded from its size) exceeds this, and stop reading one whose requests and keys, counted as they are read, come to more (e.g. 4GiB; 0 = no limit; default 3/4 of the least of RAM, cgroup limit and ulimit -v)")
	scenarioOut := fs.String("scenario-out", "", "also write the log as a fluid scenario YAML (one client per key, requests per second) for a spec's scenario:")
	rest, err := parseFlags(fs, args, 1)
	if err != nil {
		return err
	}
	if *top < 0 || *window < 1 || *depth < 1 || *maxLine < 256 {
		return usagef("inspect: --top must be >= 0, --window and --path-depth >= 1, --max-line-bytes >= 256")
	}
	memLimit := sweep.DefaultMaxMemory()
	if *maxMemory != "" {
		if memLimit, err = yamlx.ParseBytes(*maxMemory); err != nil {
			return usagef("inspect: --max-memory: %v", err)
		}
	}
	var cfg *ingest.Config
	if *spec != "" {
		for _, f := range []string{"format", "key", "path-depth", "rules", "csv-time", "csv-time-format", "csv-column", "csv-delimiter", "max-line-bytes", "log-format", "trusted-proxies"} {
			if fs.Changed(f) {
				return usagef("inspect: --%s conflicts with --spec (set it in the spec's traffic section)", f)
			}
		}
		if cfg, err = ingest.LoadConfig(*spec); err != nil {
			return err
		}
	} else {
		if len(rest) == 0 {
			return usagef("inspect: give a LOG or --spec SPEC.yaml")
		}
		if cfg, err = inspectConfig(*format, *key, *depth, *rules, *csvTime, *csvTimeFormat, *csvDelim, *csvCols); err != nil {
			return err
		}
		if c := &cfg.Options.Reader.CSV; cfg.Options.Reader.Format.IsJSON() && fs.Changed("csv-time-format") {
			c.TimeSet = true
		}
		cfg.Options.Reader.MaxLineBytes = *maxLine
		if err := inspectTemplate(&cfg.Options.Reader, *logFormat, *trusted); err != nil {
			return err
		}
	}
	if len(rest) == 1 {
		cfg.Log = rest[0]
	}
	if fs.Changed("strict") {
		cfg.Options.Reader.Strict = *strict
	}
	if est := sweep.EstimateLog(cfg); memLimit > 0 && est.MemoryBytes > memLimit {
		d := est.Driver()
		return &badInput{fmt.Errorf("inspect: reading %s needs about %s of memory, more than --max-memory %s; most of it (%s) is %s",
			cfg.Log, yamlx.FormatBytes(est.MemoryBytes), yamlx.FormatBytes(memLimit), yamlx.FormatBytes(d.Bytes), d.What)}
	}
	start := time.Now()
	cfg.Options.ProfileWindowS = max(*window, 1) // the whole log's peaks counted as it is read
	if memLimit > 0 {
		// Counted as the log is read, whatever its size said (a gzip of
		// many members, standard input): past the budget the read stops.
		cfg.Options.Budget = sweep.LogBudget(memLimit)
		debug.SetMemoryLimit(memLimit)
	}
	var tr *ingest.Traffic
	if cfg.Log == ingest.Stdin && e.stdin != nil {
		tr, err = ingest.LoadStdin(e.ctx, e.stdin, cfg.Options)
	} else {
		tr, err = ingest.Load(e.ctx, cfg.Log, cfg.Options)
	}
	if err != nil {
		if e.ctx.Err() != nil {
			return err
		}
		var be *ingest.BudgetError
		if errors.As(err, &be) {
			return &badInput{fmt.Errorf("inspect: %w", err)}
		}
		return &badInput{err}
	}
	if cfg.Overlay != nil {
		// The spec's overlay on the log's clock, realised from its seed.
		seed := uint64(0)
		if sp, err := sweep.LoadSpec(*spec); err == nil {
			seed = sp.Seed
		}
		if tr, err = tr.WithOverlay(cfg.Overlay, cfg.Spread, seed); err != nil {
			return &badInput{fmt.Errorf("%s: %v", *spec, err)} // err says overlay
		}
	}
	took := time.Since(start).Seconds()
	if !*quiet {
		fmt.Fprintf(e.stderr, "inspect: read %s lines in %.2f s (%.0f lines/s, wall clock)\n", commas(tr.Stats.Lines), took, float64(tr.Stats.Lines)/took)
	}
	printProfile(e.stdout, tr, cfg, tr.Profile(*top, *window))
	if *scenarioOut != "" {
		return writeScenario(e, tr, *scenarioOut, *quiet)
	}
	return nil
}

// inspectConfig builds a traffic config from inspect's flags.
func inspectConfig(format, key string, depth int, rules, csvTime, csvTimeFormat, csvDelim string, csvCols []string) (*ingest.Config, error) {
	cfg := &ingest.Config{TopKeys: ingest.DefaultTopKeys}
	o := &cfg.Options
	var err error
	if o.Reader.Format, err = ingest.ParseFormat(format); err != nil {
		return nil, usagef("inspect: --format: %v", err)
	}
	if f := o.Reader.Format; f == ingest.FormatCSV || f == ingest.FormatParquet {
		c := &o.Reader.CSV
		c.Columns = map[string]string{"time": csvTime}
		if csvTime == "" {
			return nil, usagef("inspect: --format %s needs --csv-time COLUMN", f)
		}
		for _, kv := range csvCols {
			f, col, ok := strings.Cut(kv, "=")
			if !ok || col == "" {
				return nil, usagef("inspect: --csv-column %q: want FIELD=COLUMN", kv)
			}
			c.Columns[f] = col
		}
		if c.TimeFormat, err = ingest.ParseTimeFormat(csvTimeFormat); err != nil {
			return nil, usagef("inspect: --csv-time-format: %v", err)
		}
		if csvDelim == `\t` {
			csvDelim = "\t"
		}
		if len(csvDelim) != 1 {
			return nil, usagef("inspect: --csv-delimiter must be one byte, got %q", csvDelim)
		}
		c.Delimiter = csvDelim[0]
	} else if f.IsJSON() {
		c := &o.Reader.CSV
		if csvTime != "" || len(csvCols) > 0 {
			c.Columns = map[string]string{}
		}
		if csvTime != "" {
			c.Columns["time"] = csvTime
		}
		for _, kv := range csvCols {
			fld, path, ok := strings.Cut(kv, "=")
			if !ok || path == "" {
				return nil, usagef("inspect: --csv-column %q: want FIELD=PATH", kv)
			}
			c.Columns[fld] = path
		}
		if f == ingest.FormatJSONL && csvTime == "" {
			return nil, usagef("inspect: --format jsonl needs --csv-time PATH (or a preset: envoy, caddy, traefik, cloudflare, gcp-lb)")
		}
		if c.TimeFormat, err = ingest.ParseTimeFormat(csvTimeFormat); err != nil {
			return nil, usagef("inspect: --csv-time-format: %v", err)
		}
	} else if csvTime != "" || len(csvCols) > 0 {
		return nil, usagef("inspect: --csv-* flags need --format csv, parquet, jsonl or a JSON preset")
	}
	for _, f := range strings.Split(key, ",") {
		fld, err := ingest.ParseField(strings.TrimSpace(f))
		if err != nil {
			return nil, usagef("inspect: --key: %v", err)
		}
		o.Key = append(o.Key, fld)
	}
	o.PathDepth = depth
	if rules != "" {
		if o.Rules, err = ingest.LoadRules(rules); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// inspectTemplate sets --log-format and --trusted-proxies on ro.
func inspectTemplate(ro *ingest.ReaderOptions, logFormat string, trusted []string) error {
	if logFormat != "" && !ro.Format.Templated() {
		return usagef("inspect: --log-format needs --format envoy-text, haproxy or nginx")
	}
	if len(trusted) > 0 && !ro.Format.Templated() && !ro.Format.JSON() {
		return usagef("inspect: --trusted-proxies needs --format envoy-text, haproxy, nginx or a JSON format")
	}
	ro.Template = logFormat
	for _, s := range trusted {
		p, err := ingest.ParseTrustedProxy(strings.TrimSpace(s))
		if err != nil {
			return usagef("inspect: --trusted-proxies: %v", err)
		}
		ro.TrustedProxies = append(ro.TrustedProxies, p)
	}
	if _, err := ingest.NewReader(strings.NewReader(""), *ro); err != nil {
		return usagef("inspect: --log-format: %v", err)
	}
	return nil
}

func printProfile(w io.Writer, tr *ingest.Traffic, cfg *ingest.Config, p *ingest.Profile) {
	s := tr.Stats
	comp := ""
	if s.Compression != ingest.CompressNone {
		comp = ", " + s.Compression.String()
	}
	detected := ""
	if cfg.Options.Reader.Format == ingest.FormatAuto {
		detected = "detected "
	}
	fmt.Fprintf(w, "log         %s (%s%s%s)\n", tr.Source, detected, tr.Format, comp)
	fmt.Fprintf(w, "lines       %s: %s requests, %s malformed, %s other (header, blank)\n",
		commas(s.Lines), commas(s.Requests), commas(s.Malformed), commas(s.Lines-s.Requests-s.Malformed))
	for _, r := range s.ReasonsSorted() {
		fmt.Fprintf(w, "            malformed: %s × %s\n", commas(s.Reasons[r]), r)
	}
	if tr.OverlayRequests > 0 {
		fmt.Fprintf(w, "overlay     %s requests added on the log's clock (the profile below includes them)\n", commas(tr.OverlayRequests))
	}
	if s.FieldsChanges > 0 {
		fmt.Fprintf(w, "note        the W3C #Fields: header changes %d times; each applies to the lines after it\n", s.FieldsChanges)
	}
	first := time.Unix(tr.StartUnix, 0).UTC()
	last := first.Add(time.Duration(tr.DurationS-1) * time.Second)
	fmt.Fprintf(w, "span        %s .. %s UTC (%s s, %.1f h)\n", first.Format("2006-01-02 15:04:05"), last.Format("2006-01-02 15:04:05"),
		commas(int64(tr.DurationS)), float64(tr.DurationS)/3600)
	var keyNames []string
	for _, f := range cfg.Options.Key {
		keyNames = append(keyNames, f.String())
	}
	if len(keyNames) == 0 {
		keyNames = []string{"ip"}
	}
	fmt.Fprintf(w, "keys        %s (key: %s)\n", commas(int64(p.Keys)), strings.Join(keyNames, " + "))
	fmt.Fprintf(w, "req/s       mean %.2f, p99 %d, peak %d (over all %s seconds of the span)\n", p.MeanS, p.P99S, p.PeakS, commas(int64(p.DurationS)))
	fmt.Fprintf(w, "per %d s    peak %d requests in any %d s window\n", p.WindowS, p.PeakW, p.WindowS)
	q := p.LegitKeysW
	fmt.Fprintf(w, "keys' peak  per %d s window, legit keys (%d): p50 %d, p90 %d, p99 %d, max %d\n", p.WindowS, q.N, q.P50, q.P90, q.P99, q.Max)
	if p.Abusive > 0 || len(cfg.Options.Rules) > 0 {
		q = p.AbusiveKeysW
		fmt.Fprintf(w, "            abusive keys (%d): p50 %d, p90 %d, p99 %d, max %d\n", q.N, q.P50, q.P90, q.P99, q.Max)
		fmt.Fprintf(w, "labels      legit %s, abusive %s (design %s, code %s, none %s) requests; %d keys mixed\n",
			commas(p.ByStage[model.NoStage]), commas(p.Abusive), commas(p.ByStage[model.StageDesign]),
			commas(p.ByStage[model.StageCode]), commas(p.ByStage[model.StageNone]), p.Mixed)
	}
	if st := s.LimitReqStatus; st != nil {
		var parts []string
		for _, v := range ingest.LimitReqStatuses {
			if n := st[v]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %s (%.1f%%)", v, commas(n), 100*float64(n)/float64(s.Requests)))
			}
		}
		fmt.Fprintf(w, "limit_req   %s ($limit_req_status)\n", strings.Join(parts, ", "))
	}
	if warn := tr.KeyWarning(cfg.Options.Key); warn != "" {
		fmt.Fprintf(w, "warning     %s\n", warn)
	}
	if s.OutOfOrder > 0 {
		fmt.Fprintf(w, "warning     %s requests earlier than a previous line (first at line %d, up to %d s back); sorted\n",
			commas(s.OutOfOrder), s.FirstBack, s.MaxBackS)
	}
	if s.InvalidUTF8 > 0 {
		fmt.Fprintf(w, "warning     %s lines are not valid UTF-8 (keys shown with U+FFFD)\n", commas(s.InvalidUTF8))
	}
	if tr.SubSecond {
		fmt.Fprintf(w, "note        sub-second times: requests are not spread inside their second\n")
	}
	for i, m := range s.Samples {
		if i == 0 {
			fmt.Fprintf(w, "malformed   first %d of %s:\n", len(s.Samples), commas(s.Malformed))
		}
		fmt.Fprintf(w, "  line %d: %s: %s\n", m.Line, m.Msg, m.Excerpt)
	}
	if len(p.Top) == 0 {
		return
	}
	fmt.Fprintf(w, "\ntop %d keys by requests (peak/%ds: most requests in a %d s window; p99/s over the key's active seconds)\n", len(p.Top), p.WindowS, p.WindowS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "key\trequests\tshare\tlabel\tpeak/s\tp99/s\tpeak/%ds\tactive s\tfirst..last s\t\n", p.WindowS)
	for _, k := range p.Top {
		label := k.Key.Class.String()
		if k.Key.Class == model.Abusive {
			label += " " + k.Key.Stage.String()
		}
		if k.Key.Mixed() {
			label += "*"
		}
		name := k.Key.Name
		if len(name) > 48 {
			name = name[:45] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f%%\t%s\t%d\t%d\t%d\t%d\t%d..%d\t\n", name, commas(k.Key.Requests),
			100*float64(k.Key.Requests)/float64(p.Requests), label, k.PeakS, k.P99S, k.PeakW, k.ActiveS, k.FirstS, k.LastS)
	}
	tw.Flush()
	if p.Mixed > 0 {
		fmt.Fprintf(w, "* the key's requests carry several labels; the label shown is that of most of them\n")
	}
}

// commas formats n with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// writeScenario writes tr as a fluid scenario file.
func writeScenario(e *env, tr *ingest.Traffic, path string, quiet bool) error {
	name := filepath.Base(tr.Source)
	sc, err := tr.Scenario(name)
	if err != nil {
		return &badInput{fmt.Errorf("%s: %v", tr.Source, err)}
	}
	if err := os.WriteFile(path, sc.YAML(), 0o666); err != nil {
		return err
	}
	mixed := 0
	for i := range tr.Keys {
		if tr.Keys[i].Mixed() {
			mixed++
		}
	}
	if quiet {
		return nil
	}
	fmt.Fprintf(e.stderr, "inspect: wrote %s: %d clients over %d s (fluid: one-second batches; %d mixed keys take the label of most of their requests)\n",
		path, len(sc.Clients), sc.DurationS, mixed)
	return nil
}
