package ingest

import (
	"context"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// parseTraffic decodes a traffic section.
func parseTraffic(data []byte) (*Config, error) {
	n, err := yamlx.Parse(data)
	if err != nil {
		return nil, err
	}
	return DecodeConfig(n, "traffic", ".")
}

// A traffic section's cost: prices requests by rules (first match, path
// without its query) or by response bytes; bad sections name the field.
func TestCostConfig(t *testing.T) {
	lines := `1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "POST /graphql?q=1 HTTP/1.1" 200 5000 "-" "a"
1.1.1.1 - - [01/Jan/2026:00:00:01 +0000] "GET /export HTTP/1.1" 401 1 "-" "a"
1.1.1.1 - - [01/Jan/2026:00:00:02 +0000] "POST /export HTTP/1.1" 200 2049 "-" "a"
`
	for _, c := range []struct {
		cost string
		want []int64
	}{
		{"{rules: [{path_prefix: /graphql, cost: 10}, {path: /export, method: POST, cost: 50}], default: 2}", []int64{10, 2, 50}},
		{"{field: bytes, unit_bytes: 1024}", []int64{5, 1, 3}},
		{"{field: bytes}", []int64{5000, 1, 2049}},
	} {
		cfg, err := parseTraffic([]byte("log: x.log\nformat: combined\ncost: " + c.cost + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.cost, err)
		}
		tr, err := Build(context.Background(), strings.NewReader(lines), cfg.Options)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		var statuses []int
		for _, r := range tr.Costs(0) {
			cost, st := unpackResp(r)
			got, statuses = append(got, cost), append(statuses, st)
		}
		if len(got) != 3 || got[0] != c.want[0] || got[1] != c.want[1] || got[2] != c.want[2] || statuses[1] != 401 {
			t.Errorf("%s: costs %v statuses %v, want %v", c.cost, got, statuses, c.want)
		}
		if !strings.Contains(string(cfg.YAML()), "  cost: {") {
			t.Errorf("%s: canonical YAML lacks the cost:\n%s", c.cost, cfg.YAML())
		}
	}
	for _, bad := range []struct{ cfg, msg string }{
		{"format: combined\ncost: {}", "says no cost"},
		{"format: combined\ncost: {field: header}", "cost.field"},
		{"format: combined\ncost: {rules: [{path: /x}]}", "cost.rules[0].cost: missing"},
		{"format: combined\ncost: {rules: [{path: /x, cost: 0}]}", "between 1 and"},
		{"format: csv\ncsv: {columns: {time: t, ip: i}}\ncost: {field: bytes}", "logs no response bytes"},
	} {
		_, err := parseTraffic([]byte("log: x.log\n" + bad.cfg + "\n"))
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%q: error %v, want %q", bad.cfg, err, bad.msg)
		}
	}
}
