package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// The example specs load, read their logs with the README's figures, and
// every rule labels something.
func TestExampleSpecs(t *testing.T) {
	cases := []struct {
		spec           string
		requests, keys int64
		spread         Spread
	}{
		{"nasa-ksc.yaml", 30969, 2365, SpreadEven},
		{"antlr-org.yaml", 7502, 431, SpreadEven},
		{"elastic-apache.yaml", 10000, 1753, SpreadRandom},
	}
	for _, c := range cases {
		cfg, err := LoadConfig(filepath.Join("..", "configs", "examples", c.spec))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Spread != c.spread || cfg.TopKeys != 20 || len(cfg.Options.Rules) < 2 {
			t.Errorf("%s: config %+v", c.spec, cfg)
		}
		tr, err := Load(context.Background(), cfg.Log, cfg.Options)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Requests() != c.requests || int64(len(tr.Keys)) != c.keys {
			t.Errorf("%s: %d requests, %d keys", c.spec, tr.Requests(), len(tr.Keys))
		}
		used := map[string]bool{}
		for _, k := range tr.Keys {
			used[k.Rule] = true
		}
		for _, r := range cfg.Options.Rules {
			if !used[r.Name] {
				t.Errorf("%s: rule %q labels no key", c.spec, r.Name)
			}
		}
		rows := tr.Rows(cfg.TopKeys)
		if n := len(rows.Names); n < 21 || n > 24 {
			t.Errorf("%s: %d rows", c.spec, n)
		}
	}
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigDecoding(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "bad-ips.txt", "# known\n10.0.0.1\n\n10.0.0.2\n")
	writeFile(t, dir, "rules.yaml", "rules:\n  - name: listed\n    stage: code\n    keys_file: bad-ips.txt\n")
	spec := writeFile(t, dir, "spec.yaml", `name: x
traffic:
  log: sub/access.log
  format: combined
  key: [ip, path_prefix]
  path_depth: 2
  spread: random
  strict: true
  max_line_bytes: 1024
  top_keys: 5
  rules: rules.yaml
sweep: []
`)
	cfg, err := LoadConfig(spec)
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Options
	if cfg.Log != filepath.Join(dir, "sub", "access.log") || o.Reader.Format != FormatCombined || len(o.Key) != 2 ||
		o.Key[1] != FieldPathPrefix || o.PathDepth != 2 || cfg.Spread != SpreadRandom || !o.Reader.Strict ||
		o.Reader.MaxLineBytes != 1024 || cfg.TopKeys != 5 || len(o.Rules) != 1 || !o.Rules[0].Keys["10.0.0.2"] || len(o.Rules[0].Keys) != 2 {
		t.Errorf("config %+v", cfg)
	}
	// A traffic file without a spec around it.
	inline := writeFile(t, dir, "traffic.yaml", `log: a.csv
format: csv
csv: {delimiter: ";", time_format: rfc3339, columns: {time: when, ip: addr, label: verdict}}
key: ip
rules:
  - {name: posts, stage: none, method: [POST, PUT], status: ["4xx", 500, "502-504"], path: '^/api/', user_agent: curl}
`)
	cfg, err = LoadConfig(inline)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Options.Rules[0]
	if cfg.Options.Reader.CSV.Delimiter != ';' || cfg.Options.Reader.CSV.TimeFormat != TimeRFC3339 || r.Stage != model.StageNone ||
		len(r.Methods) != 2 || len(r.Statuses) != 3 || r.Statuses[2] != (StatusRange{502, 504}) || r.Path == nil || r.UserAgent == nil {
		t.Errorf("csv config %+v, rule %+v", cfg, r)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ body, want string }{
		{"name: x\nsweep: []\n", ":1: no traffic: section"},
		{"traffic:\n  format: clf\n", ":2: traffic.log: missing"},
		{"traffic:\n  log: a\n  formt: clf\n", ":3: traffic.formt: unknown field"},
		{"traffic:\n  log: a\n  format: w3x\n", `:3: traffic.format: unknown log format "w3x"`},
		{"traffic:\n  log: a\n  key: [ip, cookie]\n", `:3: traffic.key[1]: unknown key field "cookie"`},
		{"traffic:\n  log: a\n  spread: jitter\n", `traffic.spread: unknown spread`},
		{"traffic:\n  log: a\n  strict: yes please\n", `traffic.strict: expected true or false`},
		{"traffic:\n  log: a\n  top_keys: -1\n", `traffic.top_keys: must be between`},
		{"traffic:\n  log: a\n  format: csv\n", `traffic.csv: missing`},
		{"traffic:\n  log: a\n  csv: {columns: {time: t}}\n", `traffic.csv: only with format: csv`},
		{"traffic:\n  log: a\n  format: parquet\n  parquet: {delimiter: x, columns: {time: t}}\n", `:4: traffic.parquet.delimiter: unknown field`},
		{"traffic:\n  log: a\n  format: parquet\n", `traffic.parquet: missing`},
		{"traffic:\n  log: a\n  format: csv\n  csv: {columns: {ip: a}}\n", `traffic.csv.columns.time: missing`},
		{"traffic:\n  log: a\n  format: csv\n  csv: {columns: {time: t}}\n  key: user\n", `key field user needs csv.columns.user`},
		{"traffic:\n  log: a\n  rules:\n    - name: r\n      stage: evil\n      method: GET\n", `:5: traffic.rules[0].stage: must be design, code or none`},
		{"traffic:\n  log: a\n  rules:\n    - name: r\n      stage: code\n", `:4: traffic.rules[0]: rule "r" has no condition`},
		{"traffic:\n  log: a\n  rules:\n    - name: r\n      stage: code\n      path: '(['\n", `:6: traffic.rules[0].path: bad regular expression`},
		{"traffic:\n  log: a\n  rules:\n    - name: r\n      stage: code\n      status: 4x\n", `traffic.rules[0].status: expected a status`},
		{"traffic:\n  log: a\n  rules:\n    - name: r\n      stage: code\n      scope: request\n      rate: {requests: 5, window_s: 10}\n", `a rate condition marks keys`},
		{"traffic:\n  log: a\n  rules:\n    - name: r\n      stage: code\n      rate: {requests: 5}\n", `traffic.rules[0].rate.window_s: missing`},
		{"traffic:\n  log: a\n  rules:\n    - {name: r, stage: code, method: GET}\n    - {name: r, stage: code, method: PUT}\n", `duplicate rule name "r"`},
		{"traffic:\n  log: a\n  rules: nope.yaml\n", `nope.yaml: no such file`},
		{"traffic:\n  log: a\n  rules:\n    - {name: r, stage: code, keys_file: none.txt}\n", `none.txt: no such file`},
	}
	for i, c := range cases {
		p := writeFile(t, dir, "spec.yaml", c.body)
		_, err := LoadConfig(p)
		var ye *yamlx.Error
		if err == nil || !errors.As(err, &ye) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: error %v, want *yamlx.Error with %q", i, err, c.want)
		}
	}
	if _, err := Load(context.Background(), filepath.Join(dir, "missing.log"), Options{}); err == nil || !strings.Contains(err.Error(), "missing.log: no such file") {
		t.Errorf("missing log: %v", err)
	}
	if _, err := Load(context.Background(), dir, Options{}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
}

// Config.YAML reads back to the same config, for every example spec.
func TestConfigYAMLRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, spec := range []string{"nasa-ksc.yaml", "antlr-org.yaml", "elastic-apache.yaml"} {
		cfg, err := LoadConfig(filepath.Join("..", "configs", "examples", spec))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Options.Rules = append(cfg.Options.Rules, Rule{Name: `odd "name" \d`, Stage: model.StageCode, Scope: ScopeRequest,
			Methods: []string{"POST"}, Statuses: []StatusRange{{400, 499}, {503, 503}}, Keys: map[string]bool{"b": true, "a": true}})
		y := cfg.YAML()
		p := writeFile(t, dir, "canon.yaml", string(y))
		back, err := LoadConfig(p)
		if err != nil {
			t.Fatalf("%s: %v\n%s", spec, err, y)
		}
		if y2 := back.YAML(); string(y2) != string(y) {
			t.Errorf("%s: round trip differs:\n%s\n---\n%s", spec, y, y2)
		}
	}
	cfg := &Config{Log: "/x.csv", TopKeys: 3, Options: Options{Reader: ReaderOptions{Format: FormatCSV, CSV: CSVOptions{
		Delimiter: '\t', TimeFormat: TimeUnixMs, Columns: map[string]string{"time": "t", "ip": "a b"}}}}}
	back, err := LoadConfig(writeFile(t, dir, "csv.yaml", string(cfg.YAML())))
	if err != nil || string(back.YAML()) != string(cfg.YAML()) {
		t.Errorf("csv round trip: %v\n%s", err, cfg.YAML())
	}
	cfg.Options.Reader.Format = FormatParquet
	back, err = LoadConfig(writeFile(t, dir, "pq.yaml", string(cfg.YAML())))
	if err != nil || string(back.YAML()) != string(cfg.YAML()) || !strings.Contains(string(cfg.YAML()), "  parquet:\n    time_format: unix_ms") {
		t.Errorf("parquet round trip: %v\n%s", err, cfg.YAML())
	}
}
