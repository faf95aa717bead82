package ingest

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// YAML renders the config as a canonical "traffic:" block (rules and key
// lists inlined, the log path made absolute) for a run's spec.yaml and
// Parquet metadata. DecodeConfig reads it back to the same config. It
// writes every field in the order the decoder reads them, one function to
// read against it top to bottom.
func (c *Config) YAML() []byte {
	var b strings.Builder
	q := strconv.Quote
	o := &c.Options
	b.WriteString("traffic:\n")
	abs := func(log string) string {
		if a, err := filepath.Abs(log); err == nil {
			return a
		}
		return log
	}
	if set := c.Options.Set; len(set) > 1 {
		var ls []string
		for _, l := range set {
			ls = append(ls, q(abs(l)))
		}
		fmt.Fprintf(&b, "  log: {files: [%s], as: one}\n", strings.Join(ls, ", "))
	} else if len(c.Logs) > 1 {
		var ls []string
		for _, l := range c.Logs {
			ls = append(ls, q(abs(l)))
		}
		fmt.Fprintf(&b, "  log: [%s]\n", strings.Join(ls, ", "))
	} else {
		fmt.Fprintf(&b, "  log: %s\n", q(abs(c.Log)))
	}
	fmt.Fprintf(&b, "  format: %s\n", o.Reader.Format)
	if k := templateKeys[o.Reader.Format]; k != "" && o.Reader.Template != "" {
		fmt.Fprintf(&b, "  %s: %s\n", k, q(o.Reader.Template))
	}
	if len(o.Reader.TrustedProxies) > 0 {
		ps := make([]string, len(o.Reader.TrustedProxies))
		for i, p := range o.Reader.TrustedProxies {
			ps[i] = q(p.String())
		}
		fmt.Fprintf(&b, "  trusted_proxies: [%s]\n", strings.Join(ps, ", "))
	}
	if f := o.Reader.Format; f.IsJSON() && (f == FormatJSONL || o.Reader.CSV.Columns != nil || o.Reader.CSV.TimeSet) {
		cs := o.Reader.CSV
		b.WriteString("  jsonl:\n")
		if cs.TimeSet {
			fmt.Fprintf(&b, "    time_format: %s\n", cs.TimeFormat)
		}
		if cs.Columns != nil {
			b.WriteString("    columns:\n")
			for _, f := range CSVColumnFields {
				if col, ok := cs.Columns[f]; ok {
					fmt.Fprintf(&b, "      %s: %s\n", f, q(col))
				}
			}
		}
	}
	if f := o.Reader.Format; f == FormatCSV || f == FormatParquet {
		cs := o.Reader.CSV
		fmt.Fprintf(&b, "  %s:\n", f)
		if f == FormatCSV {
			d := cs.Delimiter
			if d == 0 {
				d = ','
			}
			fmt.Fprintf(&b, "    delimiter: %s\n", q(string(d)))
		}
		fmt.Fprintf(&b, "    time_format: %s\n    columns:\n", cs.TimeFormat)
		for _, f := range CSVColumnFields {
			if col, ok := cs.Columns[f]; ok {
				fmt.Fprintf(&b, "      %s: %s\n", f, q(col))
			}
		}
	}
	keys := o.Key
	if len(keys) == 0 {
		keys = []Field{FieldIP}
	}
	names := make([]string, len(keys))
	for i, f := range keys {
		names[i] = f.String()
	}
	fmt.Fprintf(&b, "  key: [%s]\n", strings.Join(names, ", "))
	fmt.Fprintf(&b, "  path_depth: %d\n", max(o.PathDepth, 1))
	fmt.Fprintf(&b, "  spread: %s\n", c.Spread)
	fmt.Fprintf(&b, "  strict: %v\n", o.Reader.Strict)
	mlb := o.Reader.MaxLineBytes
	if mlb <= 0 {
		mlb = DefaultMaxLineBytes
	}
	fmt.Fprintf(&b, "  max_line_bytes: %d\n", mlb)
	if o.MaxBackS != 0 && o.MaxBackS != DefaultMaxBackS {
		fmt.Fprintf(&b, "  max_backwards_s: %d\n", o.MaxBackS) // only when set: older specs keep their hash
	}
	fmt.Fprintf(&b, "  top_keys: %d\n", c.TopKeys)
	if c.WindowOrigin != OriginEpoch { // the default stays out, so specs without the field read as before
		fmt.Fprintf(&b, "  window_origin: %s\n", c.WindowOrigin)
	}
	b.WriteString(o.Cost.yaml())
	if len(o.Rules) == 0 {
		return c.withOverlay(&b)
	}
	b.WriteString("  rules:\n")
	list := func(xs []string) string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = q(x)
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	for _, r := range o.Rules {
		fmt.Fprintf(&b, "    - name: %s\n      stage: %s\n      scope: %s\n", q(r.Name), r.Stage, r.Scope)
		if r.Path != nil {
			fmt.Fprintf(&b, "      path: %s\n", q(r.Path.String()))
		}
		if len(r.Methods) > 0 {
			fmt.Fprintf(&b, "      method: %s\n", list(r.Methods))
		}
		if len(r.Statuses) > 0 {
			var ss []string
			for _, s := range r.Statuses {
				if s.Lo == s.Hi {
					ss = append(ss, strconv.Itoa(s.Lo))
				} else {
					ss = append(ss, fmt.Sprintf("%d-%d", s.Lo, s.Hi))
				}
			}
			fmt.Fprintf(&b, "      status: %s\n", list(ss))
		}
		if r.UserAgent != nil {
			fmt.Fprintf(&b, "      user_agent: %s\n", q(r.UserAgent.String()))
		}
		if r.Keys != nil {
			ks := make([]string, 0, len(r.Keys))
			for k := range r.Keys {
				ks = append(ks, k)
			}
			slices.Sort(ks)
			fmt.Fprintf(&b, "      keys: %s\n", list(ks))
		}
		if r.Rate != nil {
			fmt.Fprintf(&b, "      rate: {requests: %d, window_s: %d}\n", r.Rate.Requests, r.Rate.WindowS)
		}
	}
	return c.withOverlay(&b)
}

// withOverlay ends the traffic block with its reactions, if any, and
// appends the overlay block, if any.
func (c *Config) withOverlay(b *strings.Builder) []byte {
	b.WriteString(c.reactionsYAML())
	if c.Overlay != nil {
		b.Write(c.Overlay.YAML())
	}
	return []byte(b.String())
}
