package ingest

import (
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

const reactionsConfig = `traffic:
  log: access.log
  rules:
    - {name: crawler, stage: none, user_agent: bot}
    - {name: prober, stage: code, status: 404}
  reactions:
    - match: {label: code}
      on_reject: {retry: backoff, max_retries: 5, base_s: 0.5, cap_s: 30, jitter: decorrelated, honour_retry_after: true, budget: {ratio: 0.1, min_per_s: 2}}
    - match: {keys: ["10.0.0.9", "a \"quoted\" key"], rule: crawler}
      on_reject: {retry: immediate, max_retries: 3}
      throttle: {k: 2}
    - match: {keys_file: keys.txt, label: legit}
      throttle: {k: 1.5}
    - match: all
      on_reject: {retry: immediate, max_retries: 1}
`

// Reaction rules read back from the canonical YAML to the same config, and
// a key takes the first rule whose every condition holds.
func TestReactionRules(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "keys.txt", "# legit keys that throttle\n10.0.0.5\n")
	cfg, err := LoadConfig(writeFile(t, dir, "spec.yaml", reactionsConfig))
	if err != nil {
		t.Fatal(err)
	}
	y := cfg.YAML()
	back, err := LoadConfig(writeFile(t, dir, "canon.yaml", string(y)))
	if err != nil || string(back.YAML()) != string(y) {
		t.Fatalf("round trip: %v\n%s\n---\n%s", err, y, back.YAML())
	}
	if !cfg.Reacts() || len(cfg.Reactions) != 4 {
		t.Fatalf("%d rules", len(cfg.Reactions))
	}
	tr := &Traffic{Keys: []Key{
		{Name: "10.0.0.1", Class: model.Abusive, Stage: model.StageCode, Rule: "prober"},
		{Name: "10.0.0.9", Class: model.Abusive, Stage: model.StageNone, Rule: "crawler"},
		{Name: "10.0.0.8", Class: model.Abusive, Stage: model.StageNone, Rule: "crawler"},
		{Name: "10.0.0.5", Class: model.Legit},
		{Name: "10.0.0.6", Class: model.Legit},
		{Name: "stuffer", Class: model.Abusive, Stage: model.StageCode, Overlay: "stuffer"},
	}}
	got := tr.KeyReactions(cfg)
	want := []*model.Reaction{&cfg.Reactions[0].React, &cfg.Reactions[1].React, &cfg.Reactions[3].React, &cfg.Reactions[2].React, &cfg.Reactions[3].React, nil}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("key %s: reaction %+v, want %+v", tr.Keys[i].Name, got[i], want[i])
		}
	}
	if r := cfg.Reactions[0].React; r.Budget == nil || r.Budget.MinPerS != 2 || r.Jitter != model.JitterDecorrelated || !r.HonourRetryAfter {
		t.Errorf("rule 0: %+v", r)
	}
}

// A bad reaction rule names its field.
func TestReactionRulesRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ from, to, want string }{
		{"match: {label: code}", "match: {label: coder}", "reactions[0].match.label"},
		{"match: {label: code}", "match: {stage: code}", "reactions[0].match"},
		{"rule: crawler}", "rule: crawlr}", "reactions[1].match.rule"},
		{"match: all", "match: every", "reactions[3].match"},
		{"base_s: 0.5, cap_s: 30", "base_s: 0.5, cap_s: 0.1", "reactions[0].on_reject.cap_s"},
		{"throttle: {k: 1.5}", "throttle: {k: 0.5}", "reactions[2].throttle.k"},
		{"throttle: {k: 1.5}", "on_reject: none", "reactions[2]"},
		{"keys_file: keys.txt", "keys_file: missing.txt", "missing.txt"},
	} {
		writeFile(t, dir, "keys.txt", "10.0.0.5\n")
		_, err := LoadConfig(writeFile(t, dir, "spec.yaml", strings.Replace(reactionsConfig, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.HasPrefix(c.want, "reactions") && !strings.Contains(err.Error(), "spec.yaml:") {
			t.Errorf("%s: error %v, want one naming %s", c.to, err, c.want)
		}
	}
}
