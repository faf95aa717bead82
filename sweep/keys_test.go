package sweep

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// Enumerated parameters (key, lb, state) are written as names in specs and
// Parquet, and read back into PointRow.Key.
func TestKeyAxisRoundTrip(t *testing.T) {
	spec := mustSpec(t, "nodes-sweep.yaml")
	if got := string(spec.YAML()); !strings.Contains(got, "    state: [shared]\n    sync_ms: [0, 100, 1000, 10000]\n") {
		t.Errorf("canonical spec lacks the state and sync_ms axes:\n%s", got)
	}
	again, err := ParseSpec(spec.YAML(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.YAML()) != string(spec.YAML()) {
		t.Error("canonical spec does not round-trip")
	}
	dir := t.TempDir()
	mustRun(t, spec, Options{OutDir: dir, Workers: 2})
	rows, err := ReadPoints(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 40 {
		t.Fatalf("%d rows, want 40", len(rows))
	}
	byKey := map[string]PointRow{}
	for _, r := range rows {
		byKey[r.Key()] = r
	}
	one, ok := byKey["sliding_window window_s=60 limit=600"]
	if !ok {
		t.Fatalf("no single-node row; keys: %v", keys(byKey))
	}
	if one.Missed != 6900 || one.FalseCut != 880 || one.StateMeasured {
		t.Errorf("single node: %+v (want the lesson's 6900 missed, 880 false cut, state not measured)", one.Metrics)
	}
	eight, ok := byKey["sliding_window window_s=60 limit=600 nodes=8"]
	if !ok || eight.Missed <= one.Missed {
		t.Errorf("8 local nodes missed %d, want more than one node's %d", eight.Missed, one.Missed)
	}
	shared, ok := byKey["sliding_window window_s=60 limit=600 nodes=8 state=shared"]
	if !ok || shared.Missed != one.Missed || !shared.StateMeasured || shared.StateKeysPeak == 0 {
		t.Errorf("8 nodes on an atomic store: %+v, want the single node's numbers and measured state", shared.Metrics)
	}
	if _, ok := byKey["fixed_window window_s=60 limit=600 nodes=4 state=shared sync_ms=1000"]; !ok {
		t.Errorf("no lagged fixed-window row; keys: %v", keys(byKey))
	}
}

func keys(m map[string]PointRow) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestKeyAxisErrors(t *testing.T) {
	for _, c := range []struct{ entry, want string }{
		{"    key: [client, adress]\n", `line 7: sweep[0].key[1]: unknown key "adress" (one of client, address, account, both, global, org)`},
		{"    key: {from: 0, to: 3, step: 1}\n", "line 7: sweep[0].key: expected one of client"},
		{"    nodes: 0\n", "line 7: sweep[0].nodes: must be >= 1 nodes"},
		{"    sync_ms: 100\n", "sync_ms: applies to state: shared only"},
		{"    state: shared\n    sync_ms: -1\n", "sync_ms: must be >= 0 ms"},
	} {
		src := "name: x\nscenario: {name: s, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\nsweep:\n  - algorithm: sliding_window\n    window_s: 60\n    limit: 10\n" + c.entry
		_, err := ParseSpec([]byte(src), nil)
		var ye *yamlx.Error
		if !errors.As(err, &ye) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.entry, err, c.want)
		}
	}
	if _, ok := model.LookupParam("key"); !ok {
		t.Error("no key parameter")
	}
}

func TestStateSlotsBound(t *testing.T) {
	src := `name: x
scenario:
  name: s
  duration_s: 10
  clients:
    - {name: a, class: legit, accounts: 5000000, segments: [[0, 10, 1]]}
sweep:
  - algorithm: fixed_window
    window_s: 60
    limit: 10
    key: [client, account]
    nodes: [1, 8]
`
	spec, err := ParseSpec([]byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), spec, Options{OutDir: t.TempDir()})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "40000000 limiter slots") {
		t.Errorf("error %v, want an InputError about 40000000 limiter slots", err)
	}
	big := `name: x
scenario:
  name: s
  duration_s: 10
  clients:
    - {name: a, class: legit, accounts: 10000000, account_pool: p, segments: [[0, 10, 1]]}
    - {name: b, class: legit, accounts: 1, segments: [[0, 10, 1]]}
    - {name: c, class: legit, accounts: 10000000, segments: [[0, 10, 1]]}
sweep:
  - {algorithm: fixed_window, window_s: 60, limit: 10}
`
	if _, err := ParseSpec([]byte(big), nil); err == nil || !strings.Contains(err.Error(), "at most 20000000 of each") {
		t.Errorf("error %v, want too many accounts", err)
	}
}
