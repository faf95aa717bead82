package ingest

import (
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

func decodeOverlayText(t *testing.T, text string) (*Overlay, error) {
	t.Helper()
	root, err := yamlx.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return DecodeOverlay(root.Content[1], "overlay")
}

func TestOverlayOnALog(t *testing.T) {
	// Log: key a at 0..9 s (10 requests), b at 0 and 5 s; first second 2020-01-01 00:00:00.
	var b strings.Builder
	for s := range 10 {
		b.WriteString(clfLine("a", "01/Jan/2020:00:00:0"+string(rune('0'+s)), "/"))
	}
	b.WriteString(clfLine("b", "01/Jan/2020:00:00:00", "/"))
	b.WriteString(clfLine("b", "01/Jan/2020:00:00:05", "/"))
	tr, err := build(t, b.String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ov, err := decodeOverlayText(t, `overlay:
  name: attacks
  duration_s: 120
  arrivals: uniform
  clients:
    - {name: slow, class: abusive, stage: code, segments: [[0, 100, 0.1]], addresses: 5}
    - {name: nat, class: abusive, stage: none, segments: [[0, 10, 1]]}
    - {name: edges, class: abusive, stage: code, segments: [[0, 120, 1]]}
    - {name: user, class: legit, segments: [[0, 10, 0.5]]}
  start_s: 2
  keys:
    nat: top:1
  aim:
    edges: {window_s: 60, spread_s: 1}
`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.WithOverlay(ov, SpreadEven, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Requests() != 12+10+10+120+5 || got.OverlayRequests != 145 || !got.SubSecond {
		t.Fatalf("%d requests, overlay %d", got.Requests(), got.OverlayRequests)
	}
	byName := map[string]int{}
	for i, k := range got.Keys {
		byName[k.Name] = i
	}
	// slow: 10 requests over 5 own keys, 2 each, code.
	for i := 1; i <= 5; i++ {
		k := got.Keys[byName["slow #"+string(rune('0'+i))]]
		if k.Requests != 2 || k.ByStage[model.StageCode] != 2 || k.Rule != "overlay: slow" {
			t.Errorf("slow #%d: %+v", i, k)
		}
	}
	// nat collides with the log's busiest key a: 10 legit + 10 abusive (none).
	ka := got.Keys[byName["a"]]
	if ka.Requests != 20 || ka.ByStage[model.NoStage] != 10 || ka.ByStage[model.StageNone] != 10 || !ka.Mixed() {
		t.Errorf("a: %+v", ka)
	}
	// Labels follow their requests: a's abusive requests are at 2.5..11.5 s
	// (uniform, placed at start_s 2), its log requests spread even at s+0.5.
	ts, ls := got.Times(byName["a"]), got.Labels(byName["a"])
	for j := range ts {
		isLog := ts[j]%secondNs == secondNs/2 && (ls[j] == model.NoStage)
		if !isLog && ls[j] != model.StageNone {
			t.Fatalf("a request %d at %d: label %v", j, ts[j], ls[j])
		}
	}
	// edges: 120 requests in bursts at the epoch-aligned minute boundaries
	// (the log starts on a minute, so at 60 and 120 s of the log's clock),
	// each within ±1 s.
	et := got.Times(byName["edges"])
	for _, v := range et {
		d := v % (60 * secondNs)
		if d > secondNs && d < 59*secondNs {
			t.Fatalf("edge request at %d ns, not within 1 s of a minute boundary", v)
		}
	}
	// The original traffic is untouched.
	if tr.Requests() != 12 || len(tr.Keys) != 2 {
		t.Errorf("original changed: %d requests", tr.Requests())
	}
}

func TestOverlayDecodeErrors(t *testing.T) {
	base := "overlay:\n  name: x\n  duration_s: 10\n  clients:\n    - {name: c, class: abusive, stage: code, segments: [[0, 10, 1]]}\n"
	for _, c := range []struct{ extra, want string }{
		{"  keys: {nobody: top:3}\n", `overlay.keys.nobody: no overlay client is named "nobody"`},
		{"  keys: {c: top:x}\n", "top:N needs"},
		{"  aim: {c: {window_s: 0}}\n", "overlay.aim.c.window_s: must be between 1 and 86400"},
		{"  aim: {c: {window_s: 10, spread_s: 6}}\n", "spread_s: must be a number of seconds in (0, window_s/2]"},
		{"  start_s: -1\n", "overlay.start_s: must be between 0"},
		{"  bogus: 1\n", "bogus"},
	} {
		if _, err := decodeOverlayText(t, base+c.extra); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.extra, err, c.want)
		}
	}
	// Round trip through the canonical YAML.
	ov, err := decodeOverlayText(t, base+"  start_s: 5\n  keys: {c: [k1, \"k 2\"]}\n  aim: {c: {window_s: 10, spread_s: 0.25}}\n")
	if err != nil {
		t.Fatal(err)
	}
	again, err := decodeOverlayText(t, string(ov.YAML()))
	if err != nil || string(again.YAML()) != string(ov.YAML()) {
		t.Errorf("round trip: %v\n%s\n%s", err, ov.YAML(), again.YAML())
	}
}

// A key listed under keys: that the log does not hold is an error with a
// suggestion, not a new key of its own.
func TestOverlayKeyNotInLog(t *testing.T) {
	tr, err := build(t, clfLine("10.0.0.1", "01/Jan/2020:00:00:00", "/")+clfLine("10.0.0.2", "01/Jan/2020:00:00:01", "/"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ov, err := decodeOverlayText(t, "overlay:\n  name: x\n  duration_s: 2\n  clients:\n    - {name: nat, class: abusive, stage: none, segments: [[0, 2, 1]]}\n  keys:\n    nat: [10.0.0.1, 10.0.0.3]\n")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.WithOverlay(ov, SpreadEven, 1)
	if err == nil || err.Error() != `overlay: keys: nat: "10.0.0.3" is not a key of the log; did you mean "10.0.0.1"?` {
		t.Errorf("%v", err)
	}
}
