package report

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

func TestEdgesOfRange(t *testing.T) {
	spec, err := sweep.ParseSpec([]byte(`name: edges
scenario:
  name: s
  duration_s: 300
  clients:
    - {name: a, class: legit, segments: [[0, 300, 2]]}
sweep:
  - algorithm: fixed_window
    window_s: [60, 300]
    limit: [10, 20, 30]
  - algorithm: nginx
    rate: 5
    burst: [0, 10]
  - algorithm: nginx
    rate: 5
    burst: 10
    delay: [0, 4, 20]
  - algorithm: nginx
    rate: 5
    burst: [5, 50]
    delay: [2, 20]
  - algorithm: concurrency
    limit: 5
    service_s: [0.5, 1, 2]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		id   int64
		want []string // param=value and a word of the hint
	}{
		{0, []string{"window_s=60 smallest", "limit=10 smallest"}},
		{1, []string{"window_s=60 smallest"}}, // limit 20 is inside its range
		{4, []string{"window_s=300 largest"}},
		{5, []string{"window_s=300 largest", "limit=30 largest"}},
		{6, nil}, // rate is a single value: not a range; burst 0 is the least possible
		{7, []string{"burst=10 largest"}},
		{8, nil},  // delay 0 is the least possible
		{9, nil},  // delay 4 is inside its range
		{10, nil}, // delay 20 at burst 10 is nodelay: a larger delay is the same setting
		{11, []string{"burst=5 smallest", "delay=2 smallest"}},
		{12, []string{"burst=5 smallest"}}, // delay 20 at burst 5 is nodelay
		{13, []string{"burst=50 largest", "delay=2 smallest"}},
		{14, []string{"burst=50 largest", "delay=20 largest"}}, // below burst 50: a larger delay differs
		{15, []string{"service_s=0.5 smallest"}},
		{16, nil},
		{17, []string{"service_s=2 largest"}},
		{99, nil},
	}
	for _, c := range cases {
		got := EdgesOfRange(spec, c.id)
		if len(got) != len(c.want) {
			t.Errorf("point %d: %v, want %d edges %v", c.id, got, len(c.want), c.want)
			continue
		}
		for i, e := range got {
			if !strings.HasPrefix(e.String(), c.want[i]) {
				t.Errorf("point %d: edge %d is %q, want %q…", c.id, i, e, c.want[i])
			}
		}
	}
	// A window as long as the scenario says so.
	if e := EdgesOfRange(spec, 5)[0]; !strings.Contains(e.Hint, "300 s scenario") || e.Low {
		t.Errorf("window_s 300 of a 300 s scenario: %+v", e)
	}
	// A property of the system is to be measured, not extended.
	if e := EdgesOfRange(spec, 17)[0]; !strings.Contains(e.Hint, "property of the system") || strings.Contains(e.Hint, "try") {
		t.Errorf("service_s 2: %+v", e)
	}
}

// Ticks of a log-spaced axis sit at 1, 2, 5 × 10^k, in order and apart;
// a linear axis gets round multiples.
func TestBinTicks(t *testing.T) {
	logVals := make([]float64, 40)
	for i := range logVals {
		logVals[i] = float64(int(10*math.Pow(300, float64(i)/39) + 0.5))
	}
	if !geometric(logVals) {
		t.Fatalf("not geometric: %v", logVals)
	}
	ts := binTicks{logVals, len(logVals), nil}.Ticks(0, 0)
	var labels []string
	for i, tk := range ts {
		labels = append(labels, tk.Label)
		if i > 0 && tk.Value-ts[i-1].Value < 2 {
			t.Errorf("ticks %q and %q only %.2f cells apart", ts[i-1].Label, tk.Label, tk.Value-ts[i-1].Value)
		}
	}
	if !slices.Equal(labels, []string{"10", "20", "50", "100", "200", "500", "1,000", "2,000"}) {
		t.Errorf("log axis ticks %v", labels)
	}
	lin := make([]float64, 391)
	for i := range lin {
		lin[i] = 50 + 5*float64(i)
	}
	if geometric(lin) {
		t.Fatal("a linear axis taken for geometric")
	}
	labels = nil
	for _, tk := range (binTicks{lin, len(lin), nil}).Ticks(0, 0) {
		labels = append(labels, tk.Label)
		// 500 is value index 90: its cell is centred on 90.
		if tk.Label == "500" && tk.Value != 90 {
			t.Errorf("500 at %g, want 90", tk.Value)
		}
	}
	if !slices.Equal(labels, []string{"500", "1,000", "1,500", "2,000"}) {
		t.Errorf("linear axis ticks %v", labels)
	}
}

// A third swept parameter gets one heat map per value, named by it (nginx's
// delay at or beyond every burst is "nodelay"), and concurrency's limit axis
// says in-flight requests.
func TestHeatPerThirdValue(t *testing.T) {
	dir := runSpec(t, `name: third
scenario:
  name: s
  duration_s: 60
  clients:
    - {name: a, class: legit, segments: [[0, 60, 4]]}
    - {name: b, class: abusive, stage: none, segments: [[0, 60, 20]]}
sweep:
  - algorithm: nginx
    rate: [5, 10, 15]
    burst: [0, 10, 50, 100]
    delay: [0, 1000000]
  - algorithm: concurrency
    limit: [1, 2, 5]
    service_s: [0.5, 1]
`)
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range mustFigures(t, r) {
		if strings.HasPrefix(f.Name, "heatmap-") {
			names = append(names, f.Name)
		}
	}
	want := []string{"heatmap-1-nginx-delay0", "heatmap-2-nginx-nodelay", "heatmap-3-concurrency"}
	if !slices.Equal(names, want) {
		t.Fatalf("heat maps %v, want %v", names, want)
	}
	// Every cell of both nginx maps holds its one point.
	for _, h := range r.Heats[:2] {
		for y := range h.NY {
			for x := range h.NX {
				if _, _, ok := h.Cell(x, y); !ok {
					t.Errorf("%v: cell (%d, %d) empty", h.Fixed, x, y)
				}
			}
		}
	}
	if l := heatAxisLabel(r.Heats[2].Algorithm, "limit", nil, 3); l != "limit (requests in flight)" {
		t.Errorf("concurrency limit axis: %q", l)
	}
}

// Only a setting gets "try smaller/larger" advice: at an end of its range a
// deployment choice (nodes) or a property of the system (lag_s, sync_ms)
// says what the pick assumes, and each parameter's role in the registry
// decides which.
func TestEdgesOfRangeAdviseSettingsOnly(t *testing.T) {
	spec, err := sweep.ParseSpec([]byte(`name: roles
scenario:
  name: s
  duration_s: 300
  clients:
    - {name: a, class: legit, segments: [[0, 300, 2]]}
sweep:
  - algorithm: fixed_window
    window_s: 60
    limit: [10, 20]
    nodes: [2, 4]
    state: shared
    sync_ms: [10, 100]
  - algorithm: aws_waf_rate
    window_s: 60
    limit: 100
    lag_s: [10, 30]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for id := range int64(10) {
		for _, e := range EdgesOfRange(spec, id) {
			seen = append(seen, e.Param)
			prm, _ := model.LookupParam(e.Param)
			advises := strings.Contains(e.Hint, "try ")
			if advises != (prm.Role == model.Setting) {
				t.Errorf("point %d: %s (%s) hint %q", id, e.Param, prm.Role, e.Hint)
			}
			if says := map[model.Role]string{model.System: "property of the system", model.Deployment: "how the limiter is deployed"}[prm.Role]; !strings.Contains(e.Hint, says) {
				t.Errorf("point %d: %s hint %q does not say it is a %s", id, e.Param, e.Hint, prm.Role)
			}
		}
	}
	for _, p := range []string{"limit", "nodes", "sync_ms", "lag_s"} {
		if !slices.Contains(seen, p) {
			t.Errorf("no edge on %s (edges on %v)", p, seen)
		}
	}
}
