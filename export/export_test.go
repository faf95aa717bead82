package export

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./export -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./export -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// The golden policies: one exact for each family, and a sliding window,
// which only Redis expresses.
var goldenPolicies = []string{
	"nginx rate=10 burst=5",
	"nginx rate=0.5 burst=20 delay=4",
	"token_bucket rate=10 capacity=900",
	"sliding_counter window_s=10 limit=50",
	"fixed_window window_s=60 limit=600",
	"sliding_window window_s=60 limit=600",
	"haproxy_rate limit=50 period_s=10 counts=all",
	"haproxy_rate limit=5 period_s=0.25 counts=admitted",
	"traefik rate=1.6666666666666667 capacity=100",
}

func TestGolden(t *testing.T) {
	for _, target := range Targets {
		for _, label := range goldenPolicies {
			p, err := model.ParseLabel(label)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Export(p, target, Options{})
			if err != nil {
				t.Fatalf("%s %s: %v", target, label, err)
			}
			var b bytes.Buffer
			if err := Write(&b, r, nil, nil, ""); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", target, strings.ReplaceAll(label, " ", "_")+".txt"), b.Bytes())
		}
	}
	// A header key over three replicas.
	p, _ := model.ParseLabel("token_bucket rate=30 capacity=90")
	for _, target := range []string{"nginx", "traefik", "envoy"} {
		q := p
		if target == "envoy" {
			q, _ = model.ParseLabel("fixed_window window_s=1 limit=30")
		}
		r, err := Export(q, target, Options{Key: "header:X-Api-Key", Nodes: 3, Zone: "api"})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		Write(&b, r, nil, nil, "")
		golden(t, filepath.Join("testdata", target, "nodes3_header.txt"), b.Bytes())
	}
}

func TestFit(t *testing.T) {
	cases := []struct {
		label, target string
		fit           Fit
		exported      string
	}{
		{"nginx rate=10 burst=5", "nginx", Exact, "nginx rate=10 burst=5"},
		{"token_bucket rate=10 capacity=900", "nginx", Equivalent, "nginx rate=10 burst=899 delay=899"},
		{"gcra rate=2 capacity=3", "go", Equivalent, "token_bucket rate=2 capacity=3"},
		{"nginx rate=2 burst=3 delay=3", "traefik", Nearest, "traefik rate=2 capacity=4"}, // Traefik delays
		{"token_bucket rate=2 capacity=4", "traefik", Nearest, "traefik rate=2 capacity=4"},
		{"traefik rate=2 capacity=4", "traefik", Exact, "traefik rate=2 capacity=4"},
		{"traefik rate=1.6666666666666667 capacity=100", "traefik", Exact, "traefik rate=1.6666666666666667 capacity=100"},
		{"fixed_window window_s=60 limit=600", "traefik", Nearest, "traefik rate=10 capacity=600"},
		{"traefik rate=2 capacity=4", "go", Nearest, "token_bucket rate=2 capacity=4"},
		{"sliding_counter window_s=3000000 limit=50", "haproxy", Nearest, "haproxy_rate limit=18 period_s=1073741 counts=admitted"},
		{"haproxy_rate limit=50 period_s=10 counts=all", "haproxy", Exact, "haproxy_rate limit=50 period_s=10 counts=all"},
		{"haproxy_rate limit=5 period_s=0.25 counts=admitted", "haproxy", Exact, "haproxy_rate limit=5 period_s=0.25 counts=admitted"},
		{"nginx rate=2 burst=3", "go", Nearest, "token_bucket rate=2 capacity=4"},                                         // delays: not a token bucket
		{"sliding_counter window_s=10 limit=50", "haproxy", Nearest, "haproxy_rate limit=50 period_s=10 counts=admitted"}, // periods from a key's first request
		{"sliding_window window_s=10 limit=50", "haproxy", Nearest, "haproxy_rate limit=50 period_s=10 counts=admitted"},
		{"fixed_window window_s=60 limit=600", "envoy", Exact, "fixed_window window_s=60 limit=600"},
		{"fixed_window window_s=60 limit=600 phase_s=30", "envoy", Nearest, "fixed_window window_s=60 limit=600"},
		{"fixed_window window_s=90 limit=600", "kong", Nearest, "fixed_window window_s=60 limit=400"},
		{"token_bucket rate=0.5 capacity=3", "nginx", Nearest, "nginx rate=0.5 burst=2 delay=2"}, // nginx truncates its refill
		{"token_bucket rate=5 capacity=3", "nginx", Equivalent, "nginx rate=5 burst=2 delay=2"},
		{"token_bucket rate=0.3 capacity=3", "traefik", Nearest, "traefik rate=0.3 capacity=3"},
		{"token_bucket rate=0.123456789 capacity=3", "traefik", Nearest, "traefik rate=0.12333333333333334 capacity=3"}, // no whole average per period up to a day: 444 per hour
		{"token_bucket rate=0.001 capacity=3", "nginx", Nearest, "nginx rate=0.016666666666666666 burst=2 delay=2"},
		{"sliding_log window_s=60 limit=5", "redis", Exact, "sliding_log window_s=60 limit=5"},
		{"gcra rate=1 capacity=5", "redis", Nearest, "token_bucket rate=1 capacity=5"},
	}
	for _, c := range cases {
		p, err := model.ParseLabel(c.label)
		if err != nil {
			t.Fatal(err)
		}
		q, fit, why, err := Translate(p, c.target)
		if err != nil {
			t.Fatalf("%s → %s: %v", c.label, c.target, err)
		}
		if fit != c.fit || q.Canonical() != c.exported {
			t.Errorf("%s → %s: %s %q, want %s %q", c.label, c.target, fit, q.Canonical(), c.fit, c.exported)
		}
		if (fit == Nearest) != (why != "") {
			t.Errorf("%s → %s: fit %s with reason %q", c.label, c.target, fit, why)
		}
		if ok, _ := Expressible(q, c.target); !ok {
			t.Errorf("%s → %s: the exported %s is not expressible", c.label, c.target, q.Canonical())
		}
	}
	if _, err := Export(model.Policy{Algorithm: model.SlidingWindow, WindowS: 1, Limit: 1}, "caddy", Options{}); err == nil {
		t.Error("an unknown target was accepted")
	}
	if _, err := Export(model.Policy{Algorithm: model.SlidingWindow, WindowS: 1, Limit: 1}, "nginx", Options{Key: "header:a b"}); err == nil {
		t.Error("a bad key was accepted")
	}
}

// An inexpressible policy measured in a run is exported as the run's
// expressible point closest in metrics, with both points' metrics.
func TestNearestInRun(t *testing.T) {
	spec, err := sweep.ParseSpec([]byte(`name: nearest
scenario: {name: s, duration_s: 300, clients: [
  {name: steady, class: legit, segments: [[0, 300, 4]]},
  {name: bursty, class: legit, segments: [[0, 20, 1], [20, 30, 25], [30, 300, 1]]},
  {name: scraper, class: abusive, stage: none, segments: [[40, 200, 12]]}]}
sweep:
  - {algorithm: sliding_window, window_s: 60, limit: [300, 600]}
  - {algorithm: sliding_counter, window_s: [10, 60], limit: {from: 50, to: 800, step: 50}}
  - {algorithm: fixed_window, window_s: [1, 60], limit: {from: 5, to: 800, step: 5}}
  - {algorithm: token_bucket, rate: [5, 6, 8, 10], capacity: {from: 50, to: 800, step: 50}}
  - {algorithm: aws_waf_rate, window_s: 60, limit: [300, 600, 900]}
  - {algorithm: fastly_erl, window_s: 60, rate: [10, 20], penalty_box_s: 60}
  - {algorithm: fail2ban, window_s: 60, limit: [300, 600], mitigation_timeout_s: 60}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	run := runSpec(t, spec)
	p, _ := model.ParseLabel("sliding_window window_s=60 limit=600")
	for _, target := range Targets {
		res, asked, exported, err := NearestIn(p, target, run, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if asked == nil || asked.Label != p.Canonical() {
			t.Fatalf("%s: asked point %v", target, asked)
		}
		if target == "redis" {
			if res.Fit != Exact || exported != nil && exported != asked {
				t.Errorf("redis: fit %s", res.Fit)
			}
			continue
		}
		if res.Fit != Nearest || exported == nil {
			t.Fatalf("%s: fit %s, exported %v", target, res.Fit, exported)
		}
		if ok, _ := Expressible(exported.Policy, target); !ok {
			t.Errorf("%s: exported %s, which it cannot express", target, exported.Label)
		}
		if q, _, _, _ := Translate(exported.Policy, target); q.Canonical() != res.Exported.Canonical() {
			t.Errorf("%s: config of %s for the run's point %s", target, res.Exported.Canonical(), exported.Label)
		}
		for _, c := range run { // no expressible point of the run is closer
			if ok, _ := Expressible(c.Policy, target); ok && distance(asked, c) < distance(asked, exported) {
				t.Errorf("%s: %s (distance %g) is closer than %s (%g)", target, c.Label, distance(asked, c), exported.Label, distance(asked, exported))
			}
		}
		var b bytes.Buffer
		if err := Write(&b, res, asked, exported, "RUN"); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"nearest", asked.Label, exported.Label, "the translation costs"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s: output lacks %q:\n%s", target, want, b.String())
			}
		}
		if target == "nginx" {
			golden(t, filepath.Join("testdata", "nearest_nginx.txt"), b.Bytes())
		}
	}
}

// --nodes with a run that swept nodes states the over-admission from it.
func TestNodesFromRun(t *testing.T) {
	spec, err := sweep.LoadSpec("embedded:nodes-sweep.yaml")
	if err != nil {
		t.Fatal(err)
	}
	run := runSpec(t, spec)
	var many *Point
	for _, p := range run {
		if p.Label == "fixed_window window_s=60 limit=600 nodes=4" {
			many = p
		}
	}
	if many == nil {
		t.Fatal("no nodes=4 point in the run")
	}
	p, _ := model.ParseLabel("fixed_window window_s=60 limit=600")
	res, _, _, err := NearestIn(p, "kong", run, Options{Nodes: 4})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(res.Notes, "\n")
	want := fmt.Sprintf("%s (4 replicas each enforcing the whole limit: the over-admission): false cut %.2f%%", many.Label, many.LegitCutPct())
	if !strings.Contains(notes, want) || !strings.Contains(notes, "minute: 150") && !strings.Contains(res.Config, "minute: 150") {
		t.Errorf("notes:\n%s\nconfig:\n%s", notes, res.Config)
	}
}

// runSpec runs spec into a temporary directory and reads its points back.
func runSpec(t *testing.T, spec *sweep.Spec) []*Point {
	t.Helper()
	dir := t.TempDir()
	if _, err := sweep.Run(context.Background(), spec, sweep.Options{OutDir: dir, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	run, err := ReadRun(context.Background(), dir, sweep.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// The fit labels mean the same for every target: exact exports the policy
// asked, equivalent one that decides every request as the policy asked
// (checked by the model on random arrivals), and anything else is nearest,
// with what differs.
func TestFitsDecide(t *testing.T) {
	policies := append([]string{
		"token_bucket rate=0.5 capacity=3", "gcra rate=2 capacity=3", "nginx rate=2 burst=3 delay=3",
		"nginx rate=2 burst=3 delay=1", "nginx rate=1.5 burst=3", "sliding_log window_s=10 limit=5",
		"fixed_window window_s=60 limit=600 phase_s=30", "fixed_window_anchored window_s=10 limit=5",
	}, goldenPolicies...)
	rng := rand.New(rand.NewPCG(1, 27))
	for _, target := range Targets {
		for _, label := range policies {
			p, _ := model.ParseLabel(label)
			q, fit, why, err := Translate(p, target)
			if err != nil {
				t.Fatalf("%s → %s: %v", label, target, err)
			}
			switch fit {
			case Exact:
				if q.Canonical() != p.Canonical() || why != "" {
					t.Errorf("%s → %s: exact, but exports %s (%q)", label, target, q.Canonical(), why)
				}
			case Equivalent:
				for trial := range 20 {
					if i, ok := sameDecisions(p, q, rng); !ok {
						t.Errorf("%s → %s: equivalent %s decides request %d of trial %d otherwise", label, target, q.Canonical(), i, trial)
						break
					}
				}
			case Nearest:
				if why == "" {
					t.Errorf("%s → %s: nearest without a reason", label, target)
				}
			}
		}
	}
}

// sameDecisions replays random arrivals (bursts and gaps over a minute)
// through deciders for p and q and returns the first request they decide
// differently.
func sameDecisions(p, q model.Policy, rng *rand.Rand) (int, bool) {
	a, _ := model.NewDecider(p)
	b, _ := model.NewDecider(q)
	now := int64(0)
	for i := range 400 {
		now += int64(rng.ExpFloat64()*float64(rng.IntN(3)+1)*100) * 1e6 // whole ms: nginx's clock
		if a.Allow(now) != b.Allow(now) {
			return i, false
		}
	}
	return 0, true
}
