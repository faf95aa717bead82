package model_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/configs"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

const okScenario = `name: s
duration_s: 100
clients:
  - name: a
    class: legit
    segments: [[0, 100, 4]]
  - name: b
    class: abusive
    stage: none
    segments: [[10, 20, 9]]
`

func TestParseScenarioBadInput(t *testing.T) {
	cases := []struct {
		name, yaml string
		line       int    // expected line, 0 = don't check
		want       string // substring of the message (path and reason)
	}{
		{"unknown key", strings.Replace(okScenario, "duration_s", "colour: red\nduration_s", 1), 2, `colour: unknown field`},
		{"unknown client key", strings.Replace(okScenario, "    class: legit", "    class: legit\n    rate: 3", 1), 6, `clients[0].rate: unknown field`},
		{"missing name", strings.Replace(okScenario, "name: s\n", "", 1), 0, `name: missing`},
		{"missing client name", strings.Replace(okScenario, "  - name: a\n    class", "  - class", 1), 4, `clients[0].name: missing`},
		{"missing class", strings.Replace(okScenario, "    class: legit\n", "", 1), 4, `clients[0].class: missing`},
		{"bad class", strings.Replace(okScenario, "class: legit", "class: evil", 1), 5, `clients[0].class: must be legit or abusive, got "evil"`},
		{"stage on legit", strings.Replace(okScenario, "    class: legit\n", "    class: legit\n    stage: code\n", 1), 6, `clients[0].stage: only abusive clients`},
		{"unknown stage", strings.Replace(okScenario, "stage: none", "stage: later", 1), 9, `clients[1].stage: must be design, code or none`},
		{"abusive without stage", strings.Replace(okScenario, "    stage: none\n", "", 1), 0, `clients[1].stage: missing`},
		{"t0 >= t1", strings.Replace(okScenario, "[10, 20, 9]", "[20, 20, 9]", 1), 10, `clients[1].segments[0]: t0 must be less than t1`},
		{"segment outside", strings.Replace(okScenario, "[10, 20, 9]", "[90, 120, 9]", 1), 10, `reaches outside 0 <= t < duration_s = 100`},
		{"negative start", strings.Replace(okScenario, "[10, 20, 9]", "[-1, 20, 9]", 1), 10, `reaches outside`},
		{"negative rate", strings.Replace(okScenario, "[10, 20, 9]", "[10, 20, -9]", 1), 10, `rate must be a finite number >= 0`},
		{"NaN rate", strings.Replace(okScenario, "[10, 20, 9]", "[10, 20, .nan]", 1), 10, `clients[1].segments[0].rate: must be a finite number`},
		{"fractional rate", strings.Replace(okScenario, "[10, 20, 9]", "[10, 20, 2.5]", 1), 10, `whole number of requests per second`},
		{"overlap", strings.Replace(okScenario, "[10, 20, 9]", "[10, 20, 9], [15, 30, 1]", 1), 10, `segments[1]: [15, 30) overlaps segments[0] [10, 20)`},
		{"two numbers", strings.Replace(okScenario, "[10, 20, 9]", "[10, 20]", 1), 10, `expected [t0, t1, requests per second]`},
		{"duplicate names", strings.Replace(okScenario, "name: b", "name: a", 1), 7, `clients[1].name: duplicate client name "a"`},
		{"zero clients", "name: s\nduration_s: 10\nclients: []\n", 3, `clients: at least one client`},
		{"empty file", "", 0, `empty file`},
		{"comment only", "# nothing\n", 0, `empty file`},
		{"not a mapping", "- 1\n- 2\n", 1, `expected a mapping`},
		{"zero duration", strings.Replace(okScenario, "duration_s: 100", "duration_s: 0", 1), 2, `duration_s: must be between 1`},
		{"bad yaml", "name: [\n", 0, `invalid YAML`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := model.ParseScenario([]byte(c.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			err = yamlx.InFile(err, "s.yaml")
			var ye *yamlx.Error
			if !errors.As(err, &ye) {
				t.Fatalf("error %T %v is not a *yamlx.Error", err, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "s.yaml") || !strings.Contains(msg, c.want) {
				t.Errorf("error %q: want file name and %q", msg, c.want)
			}
			if c.line != 0 && ye.Line != c.line {
				t.Errorf("error %q: line %d, want %d", msg, ye.Line, c.line)
			}
		})
	}
}

func TestScenarioYAMLRoundTrip(t *testing.T) {
	sc, err := model.ParseScenario(configs.Lesson)
	if err != nil {
		t.Fatal(err)
	}
	again, err := model.ParseScenario(sc.YAML())
	if err != nil {
		t.Fatalf("canonical YAML does not parse: %v\n%s", err, sc.YAML())
	}
	if again.SHA256() != sc.SHA256() {
		t.Error("round trip changed the scenario")
	}
	if !strings.Contains(string(sc.YAML()), `"login attempt sequence"`) {
		t.Errorf("canonical YAML lacks client names:\n%s", sc.YAML())
	}
}
