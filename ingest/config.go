package ingest

import (
	"fmt"
	"path/filepath"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"go.yaml.in/yaml/v3"
)

// Config is a decoded traffic section: a log, how to read, key and label it,
// how to spread its seconds and how many keys get their own output row.
type Config struct {
	Log string // path to the log, resolved against the spec's directory (the first of Logs)
	// Logs are every log of the section (log: [day1, day2, ...]): the days
	// a sweep replays as its replicates, one log per replicate. One log
	// gives a one-element list.
	Logs    []string
	Options Options
	Spread  Spread
	TopKeys int // keys with their own clients row (others are grouped)
	// Overlay is synthetic traffic placed on the log's clock (a spec's
	// top-level overlay: section), or nil.
	Overlay *Overlay
	// WindowOrigin places fixed_window and sliding_counter windows in the
	// replay (default: on the Unix epoch, as deployed limiters do).
	WindowOrigin WindowOrigin
	// Reactions say how the clients behind the log's keys answer
	// rejections (reactions.go); none by default.
	Reactions []ReactionRule
}

var trafficKeys = []string{"log", "format", "csv", "parquet", "jsonl", "key", "path_depth", "spread", "strict", "max_line_bytes", "max_backwards_s", "top_keys", "rules", "window_origin",
	"envoy_format", "haproxy_format", "nginx_log_format", "trusted_proxies", "cost", "reactions"}

// templateKeys are the format string field of each templated format.
var templateKeys = map[Format]string{FormatEnvoyText: "envoy_format", FormatHAProxy: "haproxy_format", FormatNginx: "nginx_log_format"}
var csvKeys = []string{"delimiter", "time_format", "columns"}

// LoadConfig reads a traffic section from file: either a sweep spec with a
// top-level "traffic:" mapping (its other fields are left to the sweep), or
// a file whose root is the traffic mapping. Errors are *yamlx.Error.
func LoadConfig(file string) (*Config, error) {
	data, err := readFile(file)
	if err != nil {
		return nil, err
	}
	root, err := yamlx.Parse(data)
	if err != nil {
		return nil, yamlx.InFile(err, file)
	}
	n, path := root, ""
	var ov *yaml.Node
	if root.Kind == yaml.MappingNode {
		hasLog := false
		for i := 0; i+1 < len(root.Content); i += 2 {
			switch root.Content[i].Value {
			case "traffic":
				n, path = root.Content[i+1], "traffic"
			case "overlay":
				ov = root.Content[i+1]
			case "log":
				hasLog = true
			}
		}
		if path == "" && !hasLog {
			return nil, &yamlx.Error{File: file, Line: root.Line, Msg: "no traffic: section (a spec over a log needs traffic: {log: FILE, ...})"}
		}
	}
	c, err := DecodeConfig(n, path, filepath.Dir(file))
	if err == nil && ov != nil && path == "traffic" {
		c.Overlay, err = DecodeOverlay(ov, "overlay")
	}
	return c, yamlx.InFile(err, file)
}

// readFile reads a spec, rules or keys file: a regular file of at most
// yamlx.MaxFileBytes (logs are streamed instead).
func readFile(file string) ([]byte, error) { return yamlx.ReadFile(file) }

// MaxLogs bounds the logs of one traffic section.
const MaxLogs = 366

// DecodeConfig decodes a traffic mapping found at path (strict). Relative
// file names (log, rules, keys_file) are resolved against dir.
//
//	log: access.log.gz          # required; plain or compressed; or a list of logs (days): one per replicate
//	log: {files: 'access.log*', as: one}  # or a rotated set read as one log: a list (oldest first) or a glob
//	format: combined            # auto (default) | clf | combined | nasa-tsv | csv | parquet | alb | w3c
//	                            # | jsonl and presets | envoy-text | haproxy | nginx
//	nginx_log_format: '$remote_addr ... $msec'  # format nginx: its log_format (default combined)
//	envoy_format: '[%START_TIME%] ...'          # format envoy-text: its format string (default envoy's)
//	haproxy_format: '%ci:%cp [%tr] ...'         # format haproxy: its log-format (default option httplog)
//	trusted_proxies: [10.0.0.0/8]  # the key ip is the first X-Forwarded-For hop from the right not among these
//	csv: {delimiter: ",", time_format: unix, columns: {time: ts, ip: client, label: label}}
//	parquet: {time_format: unix, columns: {time: ts, ip: client}}  # timestamp columns need no format
//	jsonl: {time_format: auto, columns: {time: ts, ip: req.ip}}     # JSON field paths; optional with a preset
//	key: ip                     # a field or a list joined by a space: ip, user, logname,
//	                            # method, path, path_prefix, status, user_agent, referer
//	path_depth: 1               # segments kept by path_prefix
//	spread: even                # even (default) | random | none
//	strict: false               # a malformed line is an error
//	max_line_bytes: 65536
//	max_backwards_s: 300        # a time further back than this behind an earlier line is malformed; -1 no bound
//	top_keys: 20                # keys with their own clients row
//	rules: [...] or rules.yaml  # labelling rules (a list, or a file with rules: [...])
//	reactions: [...]            # how the keys' clients answer rejections: [{match: {keys, keys_file, label, rule} | all, on_reject, throttle}]
//	window_origin: epoch        # epoch (default) | log_start: where windows start
func DecodeConfig(n *yaml.Node, path, dir string) (*Config, error) {
	var ec yamlx.Collector // every field is decoded, so that all errors show at once
	m, err := yamlx.Mapping(n, path, trafficKeys...)
	ec.Add(err)
	if m == nil {
		return nil, ec.Err()
	}
	c := &Config{TopKeys: DefaultTopKeys}
	decodeLogs(&ec, m, c, dir)
	o := &c.Options
	decodeFormat(&ec, n, m, o)
	decodeReading(&ec, m, c)
	if v := m.Get("rules"); v != nil {
		o.Rules, err = decodeRulesRef(v, m.FieldPath("rules"), dir)
		ec.Add(err)
	}
	if v := m.Get("cost"); v != nil {
		o.Cost, err = decodeCost(v, m.FieldPath("cost"))
		ec.Add(err)
		if o.Cost != nil && o.Cost.Field == "bytes" && !logsBytes(o.Reader.Format) {
			ec.Errorf(v, m.FieldPath("cost"), "format %s logs no response bytes: price requests with rules instead", o.Reader.Format)
		}
	}
	if v := m.Get("reactions"); v != nil && ec.Len() == 0 {
		c.Reactions, err = decodeReactionRules(v, m.FieldPath("reactions"), dir, o.Rules)
		ec.Add(err)
	}
	if err := ec.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeLogs reads the log field: one log (a name, or a set of files), or
// a list of 2 to MaxLogs logs, the replicates.
func decodeLogs(ec *yamlx.Collector, m *yamlx.Map, c *Config, dir string) {
	if ln, err := m.Require("log"); !ec.Add(err) && ln.Kind == yaml.MappingNode {
		files, err := decodeLogSet(ln, m.FieldPath("log"), dir)
		if !ec.Add(err) {
			c.Log, c.Logs, c.Options.Set = files[0], files[:1], files
		}
	} else if err == nil {
		logs, err := strList(ln, m.FieldPath("log"))
		switch {
		case ec.Add(err):
		case ln.Kind == yaml.SequenceNode && (len(ln.Content) < 2 || len(ln.Content) > MaxLogs):
			ec.Errorf(ln, m.FieldPath("log"), "a list of 2 to %d logs (the replicates), or one log", MaxLogs)
		default:
			for i, l := range logs {
				if l == "" {
					ec.Errorf(ln, m.FieldPath("log"), "empty log name (entry %d)", i)
					continue
				}
				c.Logs = append(c.Logs, resolve(dir, l))
			}
			if len(c.Logs) > 0 {
				c.Log = c.Logs[0]
			}
		}
	}
}

// decodeFormat reads the format and what depends on it: the csv, parquet
// and jsonl sections, a template's format string and trusted_proxies.
func decodeFormat(ec *yamlx.Collector, n *yaml.Node, m *yamlx.Map, o *Options) {
	var err error
	formatOK := true
	if v := m.Get("format"); v != nil {
		s, err := yamlx.Str(v, m.FieldPath("format"))
		if !ec.Add(err) {
			if o.Reader.Format, err = ParseFormat(s); err != nil {
				ec.Errorf(v, m.FieldPath("format"), "%v%s", err, yamlx.DidYouMean(s, formatNames))
			}
		}
		formatOK = err == nil
	}
	for _, sec := range []struct {
		name string
		f    Format
	}{{"csv", FormatCSV}, {"parquet", FormatParquet}, {"jsonl", FormatJSONL}} {
		if !formatOK {
			break // which sections apply is unknown
		}
		preset := sec.f == FormatJSONL && o.Reader.Format.IsJSON() && o.Reader.Format != FormatJSONL
		if v := m.Get(sec.name); v != nil {
			if o.Reader.Format != sec.f && !preset {
				what := sec.name
				if sec.f == FormatJSONL {
					what = "jsonl or a JSON lines preset (envoy, caddy, traefik, cloudflare, gcp-lb)"
				}
				ec.Errorf(v, m.FieldPath(sec.name), "only with format: %s", what)
				continue
			}
			o.Reader.CSV, err = decodeCSV(v, m.FieldPath(sec.name), sec.f, preset)
			ec.Add(err)
		} else if o.Reader.Format == sec.f {
			ec.Errorf(n, m.FieldPath(sec.name), "missing: format %s needs %s: {columns: {time: NAME, ...}}", sec.name, sec.name)
		}
	}
	for _, f := range []Format{FormatEnvoyText, FormatHAProxy, FormatNginx} {
		k := templateKeys[f]
		v := m.Get(k)
		if v == nil || !formatOK {
			continue
		}
		if o.Reader.Format != f {
			ec.Errorf(v, m.FieldPath(k), "only with format: %s", f)
			continue
		}
		s, err := yamlx.Str(v, m.FieldPath(k))
		if ec.Add(err) {
			continue
		}
		if _, err := newTemplate(f, s, nil); err != nil {
			ec.Errorf(v, m.FieldPath(k), "%v", err)
			continue
		}
		o.Reader.Template = s
	}
	if v := m.Get("trusted_proxies"); v != nil && formatOK {
		ps, err := strList(v, m.FieldPath("trusted_proxies"))
		switch {
		case ec.Add(err):
		case !o.Reader.Format.Templated() && !o.Reader.Format.JSON():
			ec.Errorf(v, m.FieldPath("trusted_proxies"), "only with format envoy-text, haproxy, nginx or a JSON format (formats that can log X-Forwarded-For)")
		default:
			for _, p := range ps {
				pr, err := ParseTrustedProxy(p)
				if err != nil {
					ec.Errorf(v, m.FieldPath("trusted_proxies"), "%v", err)
					break
				}
				o.Reader.TrustedProxies = append(o.Reader.TrustedProxies, pr)
			}
		}
	}
}

// decodeReading reads how lines become requests: key (when nothing before
// it failed: keys depend on the format and columns), path_depth, spread,
// window_origin, strict, max_line_bytes, max_backwards_s and top_keys.
func decodeReading(ec *yamlx.Collector, m *yamlx.Map, c *Config) {
	o := &c.Options
	var err error
	if v := m.Get("key"); v != nil && ec.Len() == 0 { // keys depend on the format and columns
		o.Key, err = decodeKey(v, m.FieldPath("key"), o.Reader)
		ec.Add(err)
	}
	if v := m.Get("path_depth"); v != nil {
		d, err := yamlx.Int(v, m.FieldPath("path_depth"))
		switch {
		case ec.Add(err):
		case d < 1 || d > 100:
			ec.Errorf(v, m.FieldPath("path_depth"), "must be between 1 and 100, got %d", d)
		default:
			o.PathDepth = int(d)
		}
	}
	if v := m.Get("spread"); v != nil {
		s, err := yamlx.Str(v, m.FieldPath("spread"))
		if !ec.Add(err) {
			if c.Spread, err = ParseSpread(s); err != nil {
				ec.Errorf(v, m.FieldPath("spread"), "%v%s", err, yamlx.DidYouMean(s, spreadNames))
			}
		}
	}
	if v := m.Get("window_origin"); v != nil {
		s, err := yamlx.Str(v, m.FieldPath("window_origin"))
		if !ec.Add(err) {
			if c.WindowOrigin, err = ParseWindowOrigin(s); err != nil {
				ec.Errorf(v, m.FieldPath("window_origin"), "%v%s", err, yamlx.DidYouMean(s, windowOriginNames))
			}
		}
	}
	if v := m.Get("strict"); v != nil {
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
			ec.Errorf(v, m.FieldPath("strict"), "expected true or false")
		} else {
			o.Reader.Strict = v.Value == "true"
		}
	}
	if v := m.Get("max_line_bytes"); v != nil {
		b, err := yamlx.Int(v, m.FieldPath("max_line_bytes"))
		switch {
		case ec.Add(err):
		case b < 256 || b > 64<<20:
			ec.Errorf(v, m.FieldPath("max_line_bytes"), "must be between 256 and %d, got %d", 64<<20, b)
		default:
			o.Reader.MaxLineBytes = int(b)
		}
	}
	if v := m.Get("max_backwards_s"); v != nil {
		b, err := yamlx.Int(v, m.FieldPath("max_backwards_s"))
		switch {
		case ec.Add(err):
		case b != -1 && (b < 1 || b > 1<<40):
			ec.Errorf(v, m.FieldPath("max_backwards_s"), "must be -1 (no bound) or between 1 and %d, got %d", int64(1<<40), b)
		default:
			o.MaxBackS = b
		}
	}
	if v := m.Get("top_keys"); v != nil {
		k, err := yamlx.Int(v, m.FieldPath("top_keys"))
		switch {
		case ec.Add(err):
		case k < 0 || k > 100_000:
			ec.Errorf(v, m.FieldPath("top_keys"), "must be between 0 and 100000, got %d", k)
		default:
			c.TopKeys = int(k)
		}
	}
}

var logSetKeys = []string{"files", "as"}

// decodeLogSet decodes log: {files: [...] or GLOB, as: one}: the files of
// one log (a rotated set), oldest first.
func decodeLogSet(n *yaml.Node, path, dir string) ([]string, error) {
	m, err := yamlx.Mapping(n, path, logSetKeys...)
	if err != nil {
		return nil, err
	}
	as, err := m.String("as")
	if err != nil {
		return nil, err
	}
	if as != "one" {
		return nil, yamlx.Errorf(m.Get("as"), m.FieldPath("as"), "must be one (the files are one log; a list of logs under log: are the replicates), got %q", as)
	}
	fn, err := m.Require("files")
	if err != nil {
		return nil, err
	}
	if fn.Kind == yaml.ScalarNode {
		s, err := yamlx.Str(fn, m.FieldPath("files"))
		if err != nil {
			return nil, err
		}
		files, err := ExpandSet(resolve(dir, s))
		if err != nil {
			return nil, yamlx.Errorf(fn, m.FieldPath("files"), "%v", err)
		}
		if len(files) > MaxSetFiles {
			return nil, yamlx.Errorf(fn, m.FieldPath("files"), "%d files, at most %d", len(files), MaxSetFiles)
		}
		return files, nil
	}
	list, err := strList(fn, m.FieldPath("files"))
	if err != nil {
		return nil, err
	}
	if len(list) > MaxSetFiles {
		return nil, yamlx.Errorf(fn, m.FieldPath("files"), "%d files, at most %d", len(list), MaxSetFiles)
	}
	var files []string
	for i, f := range list {
		if f == "" || f == Stdin {
			return nil, yamlx.Errorf(fn, fmt.Sprintf("%s[%d]", m.FieldPath("files"), i), "a file name, got %q", f)
		}
		files = append(files, resolve(dir, f))
	}
	return files, nil
}

func resolve(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" || p == Stdin {
		return p
	}
	return filepath.Join(dir, p)
}

// decodeCSV decodes a csv:, parquet: or jsonl: section (columns are JSON
// field paths for jsonl; a preset needs no time path).
func decodeCSV(n *yaml.Node, path string, f Format, preset bool) (CSVOptions, error) {
	var o CSVOptions
	keys := csvKeys
	if f != FormatCSV {
		keys = csvKeys[1:] // Parquet and JSON lines have no delimiter
	}
	m, err := yamlx.Mapping(n, path, keys...)
	if err != nil {
		return o, err
	}
	if v := m.Get("delimiter"); v != nil {
		s, err := yamlx.Str(v, m.FieldPath("delimiter"))
		if err != nil {
			return o, err
		}
		if s == `\t` {
			s = "\t"
		}
		if len(s) != 1 || s == `"` || s == "\n" || s == "\r" {
			return o, yamlx.Errorf(v, m.FieldPath("delimiter"), "must be one byte other than a quote or newline, got %q", s)
		}
		o.Delimiter = s[0]
	}
	if v := m.Get("time_format"); v != nil {
		s, err := yamlx.Str(v, m.FieldPath("time_format"))
		if err != nil {
			return o, err
		}
		if o.TimeFormat, err = ParseTimeFormat(s); err != nil {
			return o, yamlx.Errorf(v, m.FieldPath("time_format"), "%v", err)
		}
		o.TimeSet = true
	}
	if preset && !m.Has("columns") {
		return o, nil
	}
	cn, err := m.Require("columns")
	if err != nil {
		return o, err
	}
	cm, err := yamlx.Mapping(cn, m.FieldPath("columns"), CSVColumnFields...)
	if err != nil {
		return o, err
	}
	o.Columns = map[string]string{}
	for _, f := range CSVColumnFields {
		if cm.Has(f) {
			if o.Columns[f], err = cm.String(f); err != nil {
				return o, err
			}
		}
	}
	if f == FormatJSONL {
		for k, p := range o.Columns {
			if _, err := parseJSONPath(p); err != nil {
				return o, yamlx.Errorf(cm.Get(k), cm.FieldPath(k), "%v", err)
			}
		}
	}
	if o.Columns["time"] == "" && !preset {
		return o, yamlx.Errorf(cn, cm.FieldPath("time"), "missing: the CSV time column")
	}
	return o, nil
}

func decodeKey(n *yaml.Node, path string, ro ReaderOptions) ([]Field, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
		if len(items) == 0 {
			return nil, yamlx.Errorf(n, path, "empty list: name at least one field")
		}
	}
	var out []Field
	for i, it := range items {
		p := path
		if n.Kind == yaml.SequenceNode {
			p = fmt.Sprintf("%s[%d]", path, i)
		}
		s, err := yamlx.Str(it, p)
		if err != nil {
			return nil, err
		}
		f, err := ParseField(s)
		if err != nil {
			return nil, yamlx.Errorf(it, p, "%v%s", err, yamlx.DidYouMean(s, FieldNames))
		}
		if ro.Format.Columnar() {
			col := map[Field]string{FieldIP: "ip", FieldUser: "user", FieldMethod: "method", FieldPath: "path", FieldPathPrefix: "path",
				FieldStatus: "status", FieldUserAgent: "user_agent", FieldReferer: "referer"}[f]
			cols := ro.CSV.Columns
			if ro.Format.IsJSON() {
				cols = jsonOptions(ro.Format, ro.CSV).Columns
			}
			if col == "" || cols[col] == "" {
				return nil, yamlx.Errorf(it, p, "key field %s needs %s.columns.%s", s, ro.Format, cmpOr(col, s))
			}
		}
		out = append(out, f)
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
