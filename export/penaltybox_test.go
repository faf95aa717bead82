package export

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// A penalty box exports to HAProxy (a table of blocked keys expiring
// block_s after the denied request that starts the block); every other
// target drops it and says so (Nearest). The configurations are golden.
func TestPenaltyBoxExport(t *testing.T) {
	levels := model.BlockLevels{{After: 1, BlockS: 600}}
	for _, c := range []struct {
		label, target string
		levels        bool
		opts          Options
		fit           Fit
		exported      string
		why           string
	}{
		{"haproxy_rate limit=10 period_s=1 counts=all block_s=60", "haproxy", false, Options{}, Exact, "haproxy_rate limit=10 period_s=1 counts=all block_s=60", ""},
		{"haproxy_rate limit=5 period_s=0.25 counts=admitted block_s=2.5", "haproxy", false, Options{Key: "header:X-Key", Zone: "api"}, Exact, "haproxy_rate limit=5 period_s=0.25 counts=admitted block_s=2.5", ""},
		{"sliding_counter window_s=10 limit=50 block_s=30", "haproxy", false, Options{Key: "global"}, Nearest, "haproxy_rate limit=50 period_s=10 counts=admitted block_s=30", "periods"},
		{"haproxy_rate limit=10 period_s=1 counts=all block_s=60", "haproxy", true, Options{}, Nearest, "haproxy_rate limit=10 period_s=1 counts=all block_s=60", "block_levels"},
		{"token_bucket rate=5 capacity=20 block_s=60", "nginx", false, Options{}, Nearest, "nginx rate=5 burst=19 delay=19", "no penalty box"},
		{"token_bucket rate=5 capacity=20 block_s=60", "go", false, Options{}, Nearest, "token_bucket rate=5 capacity=20", "no penalty box"},
		{"fixed_window window_s=60 limit=600 block_s=600", "redis", false, Options{}, Nearest, "fixed_window window_s=60 limit=600", "no penalty box"},
	} {
		p, err := model.ParseLabel(c.label)
		if err != nil {
			t.Fatal(err)
		}
		if c.levels {
			p.BlockLevels = &levels
		}
		r, err := Export(p, c.target, c.opts)
		if err != nil {
			t.Fatalf("%s to %s: %v", c.label, c.target, err)
		}
		if r.Fit != c.fit || r.Exported.Canonical() != c.exported || !strings.Contains(r.Why, c.why) {
			t.Errorf("%s to %s: %s %s (%s), want %s %s (…%s…)", c.label, c.target, r.Fit, r.Exported.Canonical(), r.Why, c.fit, c.exported, c.why)
		}
		if ok, _ := Expressible(p, c.target); ok != (c.why != "no penalty box" && c.why != "block_levels") {
			t.Errorf("%s to %s: Expressible %v", c.label, c.target, ok)
		}
		if c.target != "haproxy" {
			continue
		}
		var b bytes.Buffer
		if err := Write(&b, r, nil, nil, ""); err != nil {
			t.Fatal(err)
		}
		name := strings.ReplaceAll(c.label, " ", "_")
		if c.levels {
			name += "_levels"
		}
		golden(t, filepath.Join("testdata", "penaltybox", name+".txt"), b.Bytes())
	}
}
