package check

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

const joinScenario = "scenario: {name: s, duration_s: 120, clients: [{name: a, class: legit, segments: [[0, 120, 5]]}, {name: b, class: abusive, stage: code, segments: [[30, 90, 20]]}]}\n"

// joinRun runs a spec of the given sweep entries into a new directory.
func joinRun(t *testing.T, entries ...string) string {
	t.Helper()
	spec, err := sweep.ParseSpec([]byte("name: join\n"+joinScenario+"sweep:\n"+strings.Join(entries, "")), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Grids in another order, extended or shrunk join on the parameters; the
// points held for a second pass are bounded (pendingMax 7 here, so the
// reordered grid takes many passes) and every point is compared once.
func TestJoinReorderedExtended(t *testing.T) {
	defer func(n int) { pendingMax = n }(pendingMax)
	pendingMax = 7
	fw := "  - algorithm: fixed_window\n    window_s: [30, 60]\n    limit: {from: 100, to: 3000, step: 100}\n"
	sw := "  - algorithm: sliding_window\n    window_s: [30, 60]\n    limit: {from: 100, to: 3000, step: 100}\n"
	tb := "  - algorithm: token_bucket\n    rate: [5, 10]\n    capacity: {from: 10, to: 300, step: 10}\n"
	extra := "  - algorithm: gcra\n    rate: [5]\n    capacity: [10, 20]\n"
	base := joinRun(t, fw, sw, tb)
	for _, c := range []struct {
		name                     string
		run                      string
		compared, added, removed int
	}{
		{"reordered", joinRun(t, tb, sw, fw), 180, 0, 0},
		{"extended in front", joinRun(t, extra, fw, sw, tb), 180, 2, 0},
		{"reordered and shrunk", joinRun(t, sw, tb), 120, 0, 60},
	} {
		res, err := Compare(context.Background(), base, c.run, Options{AllowRemoved: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Compared != c.compared || res.Identical != c.compared || res.Added != int64(c.added) || res.Removed != c.removed || res.Failed() {
			t.Errorf("%s: compared %d identical %d added %d removed %d, want %d %d %d %d", c.name, res.Compared, res.Identical, res.Added, res.Removed, c.compared, c.compared, c.added, c.removed)
		}
		if c.removed > 0 && !strings.HasPrefix(res.RemovedPoints[0], "fixed_window window_s=30 limit=100") {
			t.Errorf("%s: removed %v, want the fixed windows in baseline order", c.name, res.RemovedPoints[:3])
		}
	}
}
