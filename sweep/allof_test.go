package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"golang.org/x/time/rate"
)

const stackSpec = `name: stacked
scenario:
  name: integrators
  duration_s: 60
  clients:
    - {name: integrator A, class: legit, org: acme, segments: [[0, 8, 1]]}
    - {name: integrator B, class: abusive, stage: none, org: acme, segments: [[10, 15, 1]]}
sweep:
  - all_of:
      - {algorithm: sliding_window, window_s: 60, limit: [5, 6]}
      - {algorithm: sliding_window, window_s: 60, limit: 10, key: org}
    rejected_counts: [all, none]
  - algorithm: sliding_window
    window_s: 60
    limit: 5
`

// The worked case through a whole run: the labels name every component,
// the spec round-trips, and integrator B gets 2 (all) or 5 (none).
func TestStackRun(t *testing.T) {
	spec, err := ParseSpec([]byte(stackSpec), nil)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Points() != 5 {
		t.Fatalf("%d points, want 5", spec.Points())
	}
	again, err := ParseSpec(spec.YAML(), nil)
	if err != nil {
		t.Fatalf("canonical spec does not parse: %v\n%s", err, spec.YAML())
	}
	if string(again.YAML()) != string(spec.YAML()) {
		t.Errorf("canonical spec does not round-trip:\n%s\n---\n%s", spec.YAML(), again.YAML())
	}
	dir := t.TempDir()
	mustRun(t, spec, Options{OutDir: dir, Workers: 2})
	rows, err := ReadPoints(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := ReadClients(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{ // integrator B's admitted requests
		"all_of rejected_counts=all [sliding_window window_s=60 limit=5] [sliding_window window_s=60 limit=10 key=org]":  2,
		"all_of rejected_counts=all [sliding_window window_s=60 limit=6] [sliding_window window_s=60 limit=10 key=org]":  2,
		"all_of rejected_counts=none [sliding_window window_s=60 limit=5] [sliding_window window_s=60 limit=10 key=org]": 5,
		"all_of rejected_counts=none [sliding_window window_s=60 limit=6] [sliding_window window_s=60 limit=10 key=org]": 4,
		"sliding_window window_s=60 limit=5": 5,
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		w, ok := want[r.Key()]
		if !ok {
			t.Errorf("unexpected policy %q", r.Key())
			continue
		}
		for _, c := range clients {
			if c.PointID == r.PointID && c.Client == "integrator B" && c.Admitted != w {
				t.Errorf("%s: B admitted %d, want %d", r.Key(), c.Admitted, w)
			}
		}
		if r.Algorithm == "all_of" && (r.Params["all_of[1].limit"] != 10 || r.Params["all_of[0].limit"] < 5) {
			t.Errorf("%s: stacked parameters %v", r.Key(), r.Params)
		}
	}
}

func TestStackSpecErrors(t *testing.T) {
	head := "name: x\nscenario: {name: s, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\nsweep:\n"
	for _, c := range []struct{ entry, want string }{
		{"  - all_of: [{algorithm: fixed_window, window_s: 60, limit: 5}]\n", "line 4: sweep[0].rejected_counts: say whether"},
		{"  - all_of: [{algorithm: fixed_window, window_s: 60}]\n    rejected_counts: all\n", "sweep[0].all_of[0].limit: missing"},
		{"  - all_of: [{algorithm: fixed_window, window_s: 60, limit: 5, key: both}]\n    rejected_counts: all\n", "all_of[0].key: both is two limits"},
		{"  - all_of: [{algorithm: fixed_window, window_s: 60, limit: 5}]\n    rejected_counts: some\n", `sweep[0].rejected_counts: unknown rejected_counts "some"`},
		{"  - all_of: []\n    rejected_counts: all\n", "sweep[0].all_of: at least one component"},
		{"  - all_of: [{all_of: [], rejected_counts: all}]\n    rejected_counts: all\n", "sweep[0].all_of[0]: a component cannot itself be all_of"},
		{"  - all_of: [{algorithm: fixed_window, window_s: 60, limit: 5}]\n    rejected_counts: all\n    limit: 3\n", "sweep[0].limit: unknown field (allowed: all_of, rejected_counts)"},
		{"  - algorithm: all_of\n", "all_of: needs a list of component policies"},
	} {
		_, err := ParseSpec([]byte(head+c.entry), nil)
		var ye *yamlx.Error
		if !errors.As(err, &ye) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.entry, err, c.want)
		}
	}
}

// The spec schema takes a stacked entry and refuses one without
// rejected_counts, as the decoder does.
func TestStackSchema(t *testing.T) {
	s := compiledSchema(t, "spec")
	for _, c := range []struct {
		src   string
		valid bool
	}{
		{stackSpec, true},
		{strings.Replace(stackSpec, "    rejected_counts: [all, none]\n", "", 1), false},
		{strings.Replace(stackSpec, "key: org}", "key: org, burst: 3}", 1), false},
	} {
		root, err := yamlx.Parse([]byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemaValid(t, s, root); (err == nil) != c.valid {
			t.Errorf("schema says %v, want valid %v:\n%s", err, c.valid, c.src)
		}
		if _, err := ParseSpec([]byte(c.src), nil); (err == nil) != c.valid {
			t.Errorf("decoder says %v, want valid %v", err, c.valid)
		}
	}
}

// On a replayed log a stack hangs every component on the log's key: a
// one-component stack decides as its component alone (window boundaries on
// the wall clock included), a stack never admits more than a component
// alone, and a component on another key is refused.
func TestStackOnLog(t *testing.T) {
	base, err := os.ReadFile("../configs/examples/antlr-org.yaml")
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(base), "sweep:\n")
	src := head + `sweep:
  - algorithm: fixed_window
    window_s: 10
    limit: 5
  - algorithm: sliding_window
    window_s: 60
    limit: 30
  - all_of:
      - {algorithm: fixed_window, window_s: 10, limit: 5}
    rejected_counts: [all, none]
  - all_of:
      - {algorithm: fixed_window, window_s: 10, limit: 5}
      - {algorithm: sliding_window, window_s: 60, limit: 30}
    rejected_counts: [all, none]
`
	spec, err := ReadSpec([]byte(src), "antlr-stack.yaml", "../configs/examples")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mustRun(t, spec, Options{OutDir: dir, Workers: 2})
	rows, err := ReadPoints(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	admitted := map[string]int64{}
	for _, r := range rows {
		admitted[r.Key()] = r.OfferedLegit + r.OfferedAbusive - r.FalseCut - r.Caught
	}
	fixed, sliding := admitted["fixed_window window_s=10 limit=5"], admitted["sliding_window window_s=60 limit=30"]
	if fixed == 0 || fixed == 7502 || sliding == 7502 {
		t.Fatalf("components admit %d and %d of 7502: no test", fixed, sliding)
	}
	for _, rc := range []string{"all", "none"} {
		if one := admitted["all_of rejected_counts="+rc+" [fixed_window window_s=10 limit=5]"]; one != fixed {
			t.Errorf("%s: a one-component stack admits %d, its component alone %d", rc, one, fixed)
		}
		two := admitted["all_of rejected_counts="+rc+" [fixed_window window_s=10 limit=5] [sliding_window window_s=60 limit=30]"]
		if two > min(fixed, sliding) || two == 0 {
			t.Errorf("%s: the stack admits %d, its components alone %d and %d", rc, two, fixed, sliding)
		}
	}
	bad := strings.Replace(src, "{algorithm: sliding_window, window_s: 60, limit: 30}", "{algorithm: sliding_window, window_s: 60, limit: 30, key: global}", 1)
	if _, err := ReadSpec([]byte(bad), "antlr-stack.yaml", "../configs/examples"); err == nil || !strings.Contains(err.Error(), "sweep[3].all_of[1].key: a replayed log hangs every component on its traffic key") {
		t.Errorf("a component on another key: %v", err)
	}
}

// writeStatusLog writes a CSV log of one key's requests, one a second from
// the start of 2026, with the given statuses and paths.
func writeStatusLog(t *testing.T, statuses []int, paths []string) string {
	t.Helper()
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString("ts,client,path,code\n")
	for i, st := range statuses {
		fmt.Fprintf(&b, "%s,1.1.1.1,%s,%d\n", day.Add(time.Duration(i)*time.Second).Format(time.RFC3339), paths[i], st)
	}
	log := filepath.Join(t.TempDir(), "log.csv")
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return log
}

// count_if inside an all_of component counts only the matching responses
// there, is named in the policy label and reads back. The hand-worked
// stack: fixed_window limit 3 counting 401s admits 200, 401, 200, 401, 401
// (three failures counted), then refuses the rest of the minute, matching
// or not: 5 of 10 admitted; the same stack without count_if admits 3.
func TestCountIfInStackComponent(t *testing.T) {
	statuses := []int{200, 401, 200, 401, 401, 200, 401, 200, 200, 401}
	paths := slices.Repeat([]string{"/login"}, len(statuses))
	log := writeStatusLog(t, statuses, paths)
	for _, rc := range []string{"all", "none"} {
		spec := fmt.Sprintf(`name: x
traffic:
  log: %q
  format: csv
  csv: {time_format: rfc3339, columns: {time: ts, ip: client, path: path, status: code}}
sweep:
  - rejected_counts: %s
    all_of:
      - {algorithm: fixed_window, window_s: 60, limit: 3, count_if: {status: [401]}}
      - {algorithm: fixed_window, window_s: 60, limit: 100}
  - rejected_counts: %[2]s
    all_of:
      - {algorithm: fixed_window, window_s: 60, limit: 3}
      - {algorithm: fixed_window, window_s: 60, limit: 100}
`, log, rc)
		sp, rows, _ := runSpecText(t, spec, "x.yaml")
		if len(rows) != 2 {
			t.Fatalf("%d rows", len(rows))
		}
		want := map[string]int64{
			"all_of rejected_counts=" + rc + " [fixed_window window_s=60 limit=3 count_if=401] [fixed_window window_s=60 limit=100]": 5,
			"all_of rejected_counts=" + rc + " [fixed_window window_s=60 limit=3] [fixed_window window_s=60 limit=100]":              7,
		}
		for _, r := range rows {
			w, ok := want[r.Key()]
			if !ok {
				t.Errorf("unexpected policy %q", r.Key())
				continue
			}
			if r.FalseCut != w {
				t.Errorf("%s: false cut %d, hand-worked %d", r.Key(), r.FalseCut, w)
			}
			p, err := model.ParseLabel(r.Key())
			if err != nil || p.Canonical() != r.Key() {
				t.Errorf("%s does not read back: %v %q", r.Key(), err, p.Canonical())
			}
		}
		back, err := ParseSpec(sp.YAML(), nil)
		if err != nil || string(back.YAML()) != string(sp.YAML()) {
			t.Errorf("canonical spec does not read back: %v\n%s", err, sp.YAML())
		}
	}
}

// Every component of an all_of spends a request's cost: a token bucket
// (x/time/rate AllowN, looked at first with TokensAt) and a fixed window
// of 25 units a minute, with rejected_counts none (a request is charged
// only when both have room).
func TestCostsInStack(t *testing.T) {
	var statuses []int
	var paths []string
	for i := range 180 {
		statuses = append(statuses, 200)
		if i%3 == 0 {
			paths = append(paths, "/graphql")
		} else {
			paths = append(paths, "/rest")
		}
	}
	log := writeStatusLog(t, statuses, paths)
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lim := rate.NewLimiter(1, 10)
	var window, admitted, offered int64
	for i, path := range paths {
		at := day.Add(time.Duration(i) * time.Second)
		if i%60 == 0 {
			window = 0
		}
		c := int64(1)
		if path == "/graphql" {
			c = 4
		}
		offered += c
		if lim.TokensAt(at) >= float64(c) && window+c <= 25 {
			lim.AllowN(at, int(c))
			window += c
			admitted += c
		}
	}
	spec := fmt.Sprintf(`name: x
traffic:
  log: %q
  format: csv
  csv: {time_format: rfc3339, columns: {time: ts, ip: client, path: path, status: code}}
  cost: {rules: [{path_prefix: /graphql, cost: 4}], default: 1}
sweep:
  - rejected_counts: none
    all_of:
      - {algorithm: token_bucket, rate: 1, capacity: 10}
      - {algorithm: fixed_window, window_s: 60, limit: 25}
`, log)
	_, rows, _ := runSpecText(t, spec, "x.yaml")
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	if got := rows[0].Cost.FalseCut; got != offered-admitted || admitted == 0 || admitted == offered {
		t.Errorf("false cut %d cost units, hand-worked %d (admitted %d of %d)", got, offered-admitted, admitted, offered)
	}
}
