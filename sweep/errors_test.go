package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// A spec with errors in several places reports all of them, each with its
// file, line and field, in line order, and suggests the names meant.
func TestSpecReportsEveryError(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "scn.yaml"), []byte(
		"name: s\nduration_s: 60\nclients:\n  - name: a\n    clas: legit\n    segments: [[0, 60, 4]]\n"), 0o644)
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(`name: demo
seeds: 1
replicates: 0
scenario: scn.yaml
sweep:
  - algorithm: sliding_windw
    window_s: [60]
  - algorithm: sliding_window
    windw_s: [60]
    limit: [10, -1]
  - algorithm: token_bucket
    rate: 1
    capacity: 10
    limit: 3
`), 0o644)
	_, err := LoadSpec(spec)
	var es *yamlx.Errors
	if !errors.As(err, &es) {
		t.Fatalf("want *yamlx.Errors, got %T %v", err, err)
	}
	scn := filepath.Join(dir, "scn.yaml")
	want := []string{
		spec + `:2: seeds: unknown field; did you mean "seed"?`,
		spec + `:3: replicates: must be between 1 and 1000000, got 0`,
		spec + `:6: sweep[0].algorithm: unknown algorithm "sliding_windw"; did you mean "sliding_window"?`,
		spec + `:8: sweep[1].window_s: missing`,
		spec + `:9: sweep[1].windw_s: unknown field; did you mean "window_s"?`,
		spec + `:10: sweep[1].limit[1]: must be >= 0`,
		spec + `:14: sweep[2].limit: token_bucket takes no parameter "limit"`,
		scn + `:4: clients[0].class: missing`,
		scn + `:5: clients[0].clas: unknown field; did you mean "class"?`,
	}
	var got []string
	for _, e := range es.List {
		got = append(got, e.Error())
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	// The scenario file's errors come where the decoder met them (at
	// line 4 of the spec), the spec's own in line order.
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w)
		}
		if !found {
			t.Errorf("missing %q in\n%s", w, strings.Join(got, "\n"))
		}
	}
	for i := 1; i < len(es.List); i++ {
		a, b := es.List[i-1], es.List[i]
		if a.File == b.File && a.Line > b.Line {
			t.Errorf("not in line order: %q before %q", got[i-1], got[i])
		}
	}
}

// A grid with more errors than the limit keeps MaxErrors and counts the rest.
func TestSpecErrorLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: x\nscenario: {name: s, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\nsweep:\n")
	for range yamlx.MaxErrors + 10 {
		b.WriteString("  - {algorithm: fixed_window, window_s: 0, limit: 1}\n")
	}
	_, err := ParseSpec([]byte(b.String()), nil)
	var es *yamlx.Errors
	if !errors.As(err, &es) || len(es.List) != yamlx.MaxErrors || es.More != 10 {
		t.Fatalf("want %d errors and 10 more, got %v", yamlx.MaxErrors, err)
	}
}

// Scenario checks that need the decoded values (overlaps, stages, fluid
// rates) come for every client at once too.
func TestScenarioValidationEveryClient(t *testing.T) {
	spec := "name: x\nscenario:\n  name: s\n  duration_s: 60\n  clients:\n" +
		"    - {name: a, class: legit, segments: [[0, 30, 4], [20, 40, 4]]}\n" +
		"    - {name: b, class: abusive, segments: [[0, 60, 4]]}\n" +
		"    - {name: c, class: legit, segments: [[0, 60, 1.5]]}\n" +
		"sweep: [{algorithm: token_bucket, rate: 1, capacity: 5}]\n"
	_, err := ParseSpec([]byte(spec), nil)
	var es *yamlx.Errors
	if !errors.As(err, &es) || len(es.List) != 3 {
		t.Fatalf("want 3 errors, got %v", err)
	}
	for i, want := range []string{
		"line 6: scenario.clients[0].segments[1]: [20, 40) overlaps segments[0]",
		"line 7: scenario.clients[1].stage: missing for an abusive client",
		"line 8: scenario.clients[2].segments[0]: rate must be a whole number",
	} {
		if !strings.HasPrefix(es.List[i].Error(), want) {
			t.Errorf("error %d = %q, want %q", i, es.List[i].Error(), want)
		}
	}
}
