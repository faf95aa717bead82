package model_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// reactRun parses a one-client scenario (YAML client fields in extra) and
// runs policy p on it, replicate 0 of seed 1.
func reactRun(t *testing.T, arrivals string, duration int, rate float64, extra string, p model.Policy) model.Outcome {
	t.Helper()
	y := fmt.Sprintf("name: r\nduration_s: %d\narrivals: %s\nclients:\n  - name: c\n    class: legit\n    segments: [[0, %d, %g]]\n%s",
		duration, arrivals, duration, rate, extra)
	sc, err := model.ParseScenario([]byte(y))
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	w, err := model.NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	s := w.NewSimulator()
	s.SetReplicate(1, 0)
	var out model.Outcome
	s.Run(p, &out)
	return out
}

var rejectAll = model.Policy{Algorithm: model.FixedWindow, WindowS: 1, Limit: 0}

// A client that retries 3 times at 100% rejection offers 4.00× its intended
// load; with a 10% retry budget, at most 1.1× plus the floor (min_per_s per
// second, and its 10 s reserve).
func TestAnchorRetriesAtFullRejection(t *testing.T) {
	for _, retry := range []string{
		"{retry: immediate, max_retries: 3}",
		"{retry: backoff, max_retries: 3, base_s: 0.01, cap_s: 0.1, jitter: full}",
		"{retry: backoff, max_retries: 3, base_s: 0.01, jitter: decorrelated}",
	} {
		out := reactRun(t, "uniform", 600, 20, "    on_reject: "+retry+"\n", rejectAll)
		r := out.Reactions
		if got := r.AmplificationLegit; math.Abs(got-4) > 0.04 {
			t.Errorf("%s: amplification %.4f, want 4.00 ± 1%%", retry, got)
		}
		if r.GaveUp != out.OfferedLegit || r.IntendedServedLegit != 0 {
			t.Errorf("%s: gave up %d of %d, served %d", retry, r.GaveUp, out.OfferedLegit, r.IntendedServedLegit)
		}
		t.Logf("%s: %d intended, %d attempts: %.4f×", retry, out.OfferedLegit, r.AttemptsLegit, r.AmplificationLegit)
	}
	const minPerS, duration = 1, 600
	out := reactRun(t, "uniform", duration, 20, "    on_reject: {retry: immediate, max_retries: 3, budget: {ratio: 0.1, min_per_s: 1}}\n", rejectAll)
	r := out.Reactions
	bound := 1.1*float64(out.OfferedLegit) + minPerS*(duration+10)
	if float64(r.AttemptsLegit) > bound || r.AmplificationLegit < 1.1 {
		t.Errorf("budget 10%%: %d attempts for %d intended (%.4f×), want <= %.0f and >= 1.1×", r.AttemptsLegit, out.OfferedLegit, r.AmplificationLegit, bound)
	}
	t.Logf("budget 10%% + 1/s: %d intended, %d attempts: %.4f× (bound %.0f)", out.OfferedLegit, r.AttemptsLegit, r.AmplificationLegit, bound)
}

// SRE adaptive throttling with K = 2: a backend that accepts a fraction a
// of the client's requests (a token bucket at a·rate, one second of burst)
// drives the client's local rejection probability to max(0, (R − K·A)/(R +
// 1)) with R, A the requests and accepts of two minutes: 1 − K·a for R
// large. Measured in steady state as the difference of a 600 s and a
// 1,200 s run (the same draws up to 600 s), with a the accepted fraction
// measured there.
func TestAnchorAdaptiveThrottling(t *testing.T) {
	const rate, k = 100.0, 2.0
	for _, a := range []float64{0.1, 0.25, 0.4, 0.6} {
		p := model.Policy{Algorithm: model.TokenBucket, Rate: a * rate, Capacity: int64(a * rate)}
		run := func(d int) model.Outcome {
			return reactRun(t, "uniform", d, rate, fmt.Sprintf("    throttle: {k: %g}\n", k), p)
		}
		short, long := run(600), run(1200)
		dThrottled := long.Reactions.Throttled - short.Reactions.Throttled
		dIntended := long.OfferedLegit - short.OfferedLegit
		got := float64(dThrottled) / float64(dIntended)
		accepted := float64(long.Reactions.IntendedServedLegit-short.Reactions.IntendedServedLegit) / float64(dIntended)
		R := rate * 120
		want := max(0, (R-k*accepted*R)/(R+1))
		if math.Abs(got-want) > 0.02 || math.Abs(accepted-a) > 0.02 {
			t.Errorf("a = %g: accepted %.4f, local rejection %.4f in steady state, formula %.4f", a, accepted, got, want)
		}
		t.Logf("a = %g: accepted %.4f, local rejection %.4f, formula %.4f", a, accepted, got, want)
	}
}

// on_reject: none is the default: every number equals the scenario's
// without the key, and no reaction is measured.
func TestOnRejectNoneIsDefault(t *testing.T) {
	p := model.Policy{Algorithm: model.TokenBucket, Rate: 5, Capacity: 10}
	for _, arr := range []string{"fluid", "poisson"} {
		a := reactRun(t, arr, 300, 8, "", p)
		b := reactRun(t, arr, 300, 8, "    on_reject: none\n", p)
		if a.Metrics != b.Metrics || a.Reactions.Measured {
			t.Errorf("%s: on_reject: none changes the metrics: %+v vs %+v", arr, a.Metrics, b.Metrics)
		}
	}
}

// Bad reactions are refused with the field's path.
func TestReactionErrors(t *testing.T) {
	for _, c := range []struct{ extra, want string }{
		{"    on_reject: {retry: sometimes}\n", "on_reject.retry"},
		{"    on_reject: {retry: backoff, max_retries: 3}\n", "on_reject.base_s"},
		{"    on_reject: {retry: immediate}\n", "on_reject.max_retries"},
		{"    on_reject: {retry: immediate, max_retries: 2, jitter: full}\n", "on_reject.jitter"},
		{"    on_reject: {retry: backoff, max_retries: 2, base_s: 1, cap_s: 0.5}\n", "on_reject.cap_s"},
		{"    on_reject: {retry: none, budget: {ratio: 0.1}}\n", "on_reject.budget"},
		{"    on_reject: {retry: immediate, max_retries: 2, honour_retry_after: yes}\n", "honour_retry_after"},
		{"    on_reject: {retry: immediate, max_retries: 2, colour: red}\n", "colour"},
		{"    throttle: {k: 0.5}\n", "throttle.k"},
		{"    on_reject: {retry: immediate, max_retries: 2}\n    addresses: 3\n", "on_reject"},
	} {
		y := "name: r\nduration_s: 10\nclients:\n  - name: c\n    class: legit\n    segments: [[0, 10, 1]]\n" + c.extra
		_, err := model.ParseScenario([]byte(y))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %s", c.extra, err, c.want)
		}
	}
}

// A scenario with reactions survives its canonical YAML.
func TestReactionYAMLRoundTrip(t *testing.T) {
	y := `name: r
duration_s: 10
clients:
  - name: c
    class: legit
    segments: [[0, 10, 1]]
    on_reject: {retry: backoff, max_retries: 4, base_s: 0.1, cap_s: 2, jitter: equal, honour_retry_after: true, budget: {ratio: 0.2, min_per_s: 10}}
    throttle: {k: 2}
`
	sc, err := model.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	again, err := model.ParseScenario(sc.YAML())
	if err != nil {
		t.Fatal(err)
	}
	if string(again.YAML()) != string(sc.YAML()) || !strings.Contains(string(sc.YAML()), "jitter: equal") {
		t.Errorf("round trip:\n%s\n%s", sc.YAML(), again.YAML())
	}
}

// scenarioRun runs p on a scenario given as YAML, replicate 0 of seed 1.
func scenarioRun(t *testing.T, y string, p model.Policy) model.Outcome {
	t.Helper()
	sc, err := model.ParseScenario([]byte(y))
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	w, err := model.NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	s := w.NewSimulator()
	s.SetReplicate(1, 0)
	var out model.Outcome
	s.Run(p, &out)
	return out
}

// The AWS Architecture Blog's result: many clients contending on one limit
// make fewer calls in all with full jitter than with plain exponential
// back-off, whose retries come back together. 100 clients send one request
// each at the same instant to one token bucket (10/s, burst 1) and retry
// with base 10 ms, cap 10 s, up to 50 times.
func TestAnchorJitterContention(t *testing.T) {
	const clients = 100
	calls := map[string]int64{}
	for _, jitter := range []string{"none", "equal", "full", "decorrelated"} {
		var b strings.Builder
		fmt.Fprintf(&b, "name: contention\nduration_s: 600\narrivals: uniform\nclients:\n")
		for i := range clients {
			fmt.Fprintf(&b, "  - {name: c%d, class: legit, segments: [[0, 1, 1]], on_reject: {retry: backoff, max_retries: 50, base_s: 0.01, cap_s: 10, jitter: %s}}\n", i, jitter)
		}
		out := scenarioRun(t, b.String(), model.Policy{Algorithm: model.TokenBucket, Rate: 10, Capacity: 1, Key: model.KeyGlobal})
		r := out.Reactions
		calls[jitter] = r.AttemptsLegit
		t.Logf("jitter %-12s %5d calls for %d requests (%.2f×), %d served, %d gave up, added latency mean %.2f s, p99 %.2f s",
			jitter, r.AttemptsLegit, out.OfferedLegit, r.AmplificationLegit, r.IntendedServedLegit, r.GaveUp, r.LegitDelayMeanS, r.LegitDelayP99S)
	}
	if !(calls["full"] < calls["none"] && calls["equal"] < calls["none"] && calls["decorrelated"] < calls["none"]) {
		t.Errorf("calls by jitter %v: each jitter should call less than none", calls)
	}
}

// The hyperbahn case: a modest overload (one client at 12/s against a
// limit of 10 a second) and the retry policies that turn it into five
// times the intended volume or more: ten retries against a limiter that
// counts rejected attempts (sliding_log: the client locks itself out,
// whatever its back-off); immediate retries against the others stay below
// (a retry at the same instant is rejected again, 1 + 10 × 1/6); a 10%
// budget keeps every policy at 1.1×.
func TestAnchorHyperbahn(t *testing.T) {
	policies := []model.Policy{
		{Algorithm: model.SlidingWindow, WindowS: 1, Limit: 10},
		{Algorithm: model.SlidingLog, WindowS: 1, Limit: 10},
		{Algorithm: model.TokenBucket, Rate: 10, Capacity: 10},
	}
	const yes, no = 1, -1 // reaches 5×, does not (0: not asserted)
	reactions := []struct {
		on   string
		want map[model.Algorithm]int
	}{
		{"{retry: immediate, max_retries: 10}", map[model.Algorithm]int{model.SlidingLog: yes, model.SlidingWindow: no, model.TokenBucket: no}},
		{"{retry: immediate, max_retries: 3}", map[model.Algorithm]int{model.SlidingLog: no, model.SlidingWindow: no, model.TokenBucket: no}},
		{"{retry: backoff, max_retries: 10, base_s: 0.1, cap_s: 5, jitter: full}", map[model.Algorithm]int{model.SlidingLog: yes}},
		{"{retry: backoff, max_retries: 10, base_s: 0.1, cap_s: 5, jitter: full, honour_retry_after: true}", map[model.Algorithm]int{model.SlidingLog: yes}},
		{"{retry: immediate, max_retries: 10, budget: {ratio: 0.1, min_per_s: 0}}", map[model.Algorithm]int{model.SlidingLog: no, model.SlidingWindow: no, model.TokenBucket: no}},
	}
	for _, rc := range reactions {
		for _, p := range policies {
			out := reactRun(t, "uniform", 600, 12, "    on_reject: "+rc.on+"\n", p)
			amp := out.Reactions.AmplificationLegit
			t.Logf("%-40v %-95s %6.2f× calls, %5.1f%% never served", p, rc.on, amp, out.LegitCutPct)
			if w := rc.want[p.Algorithm]; w != 0 && (amp >= 5) != (w == yes) {
				t.Errorf("%v %s: %.2f× calls, want 5× or more: %v", p, rc.on, amp, w == yes)
			}
			if strings.Contains(rc.on, "budget") && amp > 1.1+1e-9 {
				t.Errorf("%v %s: %.2f× with a 10%% budget", p, rc.on, amp)
			}
		}
	}
}
