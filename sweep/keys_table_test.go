package sweep

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestNextStepTable runs configs/next-step-sweep.yaml through the whole
// pipeline (grid, simulation, Parquet, reading back) and prints the table of
// docs/keys.md with -v:
//
//	go test ./sweep -run TestNextStepTable -v
func TestNextStepTable(t *testing.T) {
	spec := mustSpec(t, "next-step-sweep.yaml")
	dir := t.TempDir()
	mustRun(t, spec, Options{OutDir: dir, Workers: 2})
	ctx := context.Background()
	points, err := ReadPoints(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := ReadClients(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	forms := []string{"login attempts, one account", "login attempts, 10000 accounts", "login attempts, 20 addresses x 10000 accounts"}
	type cell struct{ cut, admitted int64 }
	byPoint := map[int64]map[string]cell{}
	for _, c := range clients {
		if byPoint[c.PointID] == nil {
			byPoint[c.PointID] = map[string]cell{}
		}
		byPoint[c.PointID][c.Client] = cell{c.Cut, c.Admitted}
	}
	var b strings.Builder
	b.WriteString("| policy | key | one account: caught / missed | 10 000 accounts: caught / missed | 20 addr × 10 000 acc: caught / missed | false cut (legit cut %) | legit accounts locked out | live keys, state bytes (peak) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	keyOf := map[string]map[string]int64{} // policy → key → false cut
	for _, p := range points {
		key := "client"
		if v, ok := p.Params["key"]; ok {
			key = []string{"client", "address", "account", "both", "global"}[int(v)]
		}
		pol := strings.TrimSpace(strings.Replace(p.Key(), "key="+key, "", 1))
		fmt.Fprintf(&b, "| %s | %s |", pol, key)
		for _, f := range forms {
			c := byPoint[p.PointID][f]
			fmt.Fprintf(&b, " %d / %d |", c.cut, c.admitted)
		}
		fmt.Fprintf(&b, " %d (%.1f%%) | %d of %d | %d, %d |\n", p.FalseCut, p.LegitCutPct, p.LegitAccountsLocked, p.LegitAccounts, p.StateKeysPeak, p.StateBytesPeak)
		if keyOf[pol] == nil {
			keyOf[pol] = map[string]int64{}
		}
		keyOf[pol][key] = byPoint[p.PointID][forms[2]].admitted
	}
	if testing.Verbose() {
		fmt.Fprint(os.Stdout, b.String())
	}
	// The spread attack from 20 addresses over 10 000 accounts passes every
	// per-key limit of the lesson's size; only the global key cuts it.
	for pol, k := range keyOf {
		if !strings.Contains(pol, "limit=600") && !strings.Contains(pol, "capacity=900") {
			continue
		}
		if k["address"] != 2160 || k["account"] != 2160 || k["both"] != 2160 {
			t.Errorf("%s: spread attack admitted by address/account/both = %d/%d/%d, want 2160 each", pol, k["address"], k["account"], k["both"])
		}
	}
}
