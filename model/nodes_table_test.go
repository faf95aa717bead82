package model

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestNodesTable prints docs/keys.md's over-admission table with -v:
//
//	go test ./model -run TestNodesTable -v
//
// The lesson's scenario with uniform arrivals (so that a lag below one second
// matters), one key per client, N nodes behind a round-robin balancer.
func TestNodesTable(t *testing.T) {
	w := lessonWorkload(t, Arrivals{Process: Uniform})
	policies := []Policy{
		{Algorithm: SlidingWindow, WindowS: 60, Limit: 600},
		{Algorithm: FixedWindow, WindowS: 60, Limit: 600},
		{Algorithm: TokenBucket, Rate: 10, Capacity: 900},
	}
	lags := []float64{0, 10, 100, 1000, 10000}
	var b strings.Builder
	for _, base := range policies {
		single := runPolicy(w, base)
		fmt.Fprintf(&b, "\n%s — one node: missed %d, false cut %d, caught %d\n\n", base, single.Missed, single.FalseCut, single.Caught)
		b.WriteString("| nodes | local | shared, lag 0 | lag 10 ms | lag 100 ms | lag 1 s | lag 10 s |\n|---|---|---|---|---|---|---|\n")
		prevLocal := int64(-1)
		for _, n := range []int{1, 2, 4, 8, 16} {
			p := base
			p.Nodes = n
			local := runPolicy(w, p)
			fmt.Fprintf(&b, "| %d | %s |", n, cell(local, single))
			if local.Missed < prevLocal {
				t.Errorf("%v: local state on %d nodes missed %d, fewer than on fewer nodes (%d)", p, n, local.Missed, prevLocal)
			}
			prevLocal = local.Missed
			p.State = Shared
			for _, lag := range lags {
				p.SyncMs = lag
				o := runPolicy(w, p)
				if lag == 0 && (o.Missed != single.Missed || o.FalseCut != single.FalseCut) {
					t.Errorf("%v: an atomic shared store differs from one node", p)
				}
				if o.Missed > local.Missed && n > 1 {
					t.Errorf("%v: shared with a lag missed %d, more than local state (%d)", p, o.Missed, local.Missed)
				}
				fmt.Fprintf(&b, " %s |", cell(o, single))
			}
			b.WriteString("\n")
		}
	}
	if testing.Verbose() {
		fmt.Fprint(os.Stdout, b.String())
	}
}

// cell is "missed (+over-admitted) / false cut".
func cell(o, single Outcome) string {
	return fmt.Sprintf("%d (%+d) / %d", o.Missed, o.Missed-single.Missed, o.FalseCut)
}
