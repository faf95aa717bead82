package model_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/configs"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// withArrivals returns the lesson scenario under arrival process a.
func withArrivals(t testing.TB, a model.Arrivals) *model.Workload {
	t.Helper()
	sc, err := model.ParseScenario(configs.Lesson)
	if err != nil {
		t.Fatal(err)
	}
	sc.Arrivals = a
	w, err := model.NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var (
	uniform   = model.Arrivals{Process: model.Uniform}
	poisson   = model.Arrivals{Process: model.Poisson}
	clustered = model.Arrivals{Process: model.Clustered, BurstSize: 10, SpreadS: 0.1}
)

func TestArrivalsYAML(t *testing.T) {
	cases := []struct {
		line string
		want model.Arrivals
	}{
		{"", model.Arrivals{}},
		{"arrivals: fluid\n", model.Arrivals{}},
		{"arrivals: uniform\n", uniform},
		{"arrivals: poisson\n", poisson},
		{"arrivals: {process: poisson}\n", poisson},
		{"arrivals:\n  process: clustered\n  burst_size: 10\n  spread_s: 0.1\n", clustered},
	}
	for _, c := range cases {
		src := strings.Replace(okScenario, "clients:", c.line+"clients:", 1)
		sc, err := model.ParseScenario([]byte(src))
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if sc.Arrivals != c.want {
			t.Errorf("%q: arrivals %+v, want %+v", c.line, sc.Arrivals, c.want)
		}
		again, err := model.ParseScenario(sc.YAML())
		if err != nil || again.Arrivals != sc.Arrivals || again.SHA256() != sc.SHA256() {
			t.Errorf("%q: canonical YAML does not round-trip (%v):\n%s", c.line, err, sc.YAML())
		}
	}
	// Fluid is omitted from the canonical form, so lesson-era hashes stay.
	sc, _ := model.ParseScenario(configs.Lesson)
	if strings.Contains(string(sc.YAML()), "arrivals") {
		t.Errorf("fluid scenario's canonical YAML mentions arrivals:\n%s", sc.YAML())
	}
	// Fractional rates are legal for event arrivals.
	frac := strings.Replace(okScenario, "[10, 20, 9]", "[10, 20, 2.5]", 1)
	if _, err := model.ParseScenario([]byte(strings.Replace(frac, "clients:", "arrivals: poisson\nclients:", 1))); err != nil {
		t.Errorf("fractional rate with poisson arrivals: %v", err)
	}
}

func TestArrivalsYAMLBadInput(t *testing.T) {
	with := func(arrivals string) string {
		return strings.Replace(okScenario, "clients:", arrivals+"clients:", 1)
	}
	cases := []struct {
		name, yaml string
		line       int
		want       string
	}{
		{"unknown process", with("arrivals: bursty\n"), 3, `arrivals: unknown arrival process "bursty" (fluid | uniform | poisson | clustered)`},
		{"unknown process in mapping", with("arrivals: {process: weibull}\n"), 3, `arrivals.process: unknown arrival process "weibull"`},
		{"unknown key", with("arrivals: {process: poisson, rate: 3}\n"), 3, `arrivals.rate: unknown field`},
		{"missing process", with("arrivals: {burst_size: 3}\n"), 3, `arrivals.process: missing`},
		{"clustered without parameters", with("arrivals: clustered\n"), 3, `arrivals: clustered arrivals need burst_size and spread_s`},
		{"clustered without spread", with("arrivals: {process: clustered, burst_size: 4}\n"), 3, `arrivals.spread_s: missing`},
		{"burst size on poisson", with("arrivals: {process: poisson, burst_size: 4}\n"), 3, `arrivals.burst_size: only clustered arrivals take burst_size`},
		{"zero burst size", with("arrivals: {process: clustered, burst_size: 0, spread_s: 1}\n"), 3, `arrivals.burst_size: must be a whole number >= 1`},
		{"fractional burst size", with("arrivals: {process: clustered, burst_size: 2.5, spread_s: 1}\n"), 3, `arrivals.burst_size: expected a whole number`},
		{"negative spread", with("arrivals: {process: clustered, burst_size: 3, spread_s: -1}\n"), 3, `arrivals.spread_s: must be between 0 and 3600 seconds`},
		{"arrivals list", with("arrivals: [poisson]\n"), 3, `arrivals: expected a string`},
		{"too many requests for events", strings.Replace(with("arrivals: poisson\n"), "[0, 100, 4]", "[0, 100, 1000000]", 1), 5, `clients: 100000090 requests expected; poisson arrivals allow at most 50000000`},
		{"fractional rate, fluid", strings.Replace(okScenario, "[10, 20, 9]", "[10, 20, 2.5]", 1), 10, `whole number of requests per second with fluid arrivals`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := model.ParseScenario([]byte(c.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			var ye *yamlx.Error
			if !errors.As(err, &ye) {
				t.Fatalf("error %T %v is not a *yamlx.Error", err, err)
			}
			if !strings.Contains(err.Error(), c.want) || ye.Line != c.line {
				t.Errorf("error %q at line %d: want %q at line %d", err, ye.Line, c.want, c.line)
			}
		})
	}
	bad := model.Scenario{Name: "s", DurationS: 1, Arrivals: model.Arrivals{Process: 9},
		Clients: []model.Client{{Name: "a", Segments: []model.Segment{{T0: 0, T1: 1, Rate: 1}}}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "arrivals.process: unknown arrival process") {
		t.Errorf("unknown process in a Scenario value: %v", err)
	}
}

// Realisations depend only on (seed, replicate, client): common random
// numbers for every policy, simulator and order of calls.
func TestRealisationCommonRandomNumbers(t *testing.T) {
	for _, a := range []model.Arrivals{poisson, clustered} {
		w := withArrivals(t, a)
		if !w.Stochastic() {
			t.Errorf("%v: not stochastic", a.Process)
		}
		r1 := w.Realise(42, 3, nil)
		w.Realise(42, 4, nil)
		r2 := w.Realise(42, 3, nil)
		other := w.Realise(43, 3, nil)
		next := w.Realise(42, 4, nil)
		for i := range r1 {
			if !slices.Equal(r1[i], r2[i]) {
				t.Fatalf("%v client %d: same (seed, replicate) gave different requests", a.Process, i)
			}
			if !slices.IsSorted(r1[i]) {
				t.Fatalf("%v client %d: times not sorted", a.Process, i)
			}
			if len(r1[i]) > 0 && (slices.Equal(r1[i], other[i]) || slices.Equal(r1[i], next[i])) {
				t.Fatalf("%v client %d: another seed or replicate gave the same requests", a.Process, i)
			}
		}
		// Two simulators, replicates visited in different orders, agree.
		s1, s2 := w.NewSimulator(), w.NewSimulator()
		var o1, o2 model.Outcome
		s2.SetReplicate(42, 9)
		s2.Run(model.LessonSliding, &o2)
		s1.SetReplicate(42, 3)
		s1.Run(model.LessonSliding, &o1)
		s2.SetReplicate(42, 3)
		s2.Run(model.LessonSliding, &o2)
		if !slices.Equal(o1.Clients, o2.Clients) {
			t.Errorf("%v: simulators disagree on replicate 3", a.Process)
		}
	}
	for _, a := range []model.Arrivals{{}, uniform} {
		w := withArrivals(t, a)
		if w.Stochastic() {
			t.Errorf("%v: stochastic", a.Process)
		}
		r1, r2 := w.Realise(1, 1, nil), w.Realise(2, 7, nil)
		for i := range r1 {
			if !slices.Equal(r1[i], r2[i]) {
				t.Errorf("%v: realisation depends on the seed", a.Process)
			}
		}
	}
}

// Uniform arrivals put r requests evenly in each second; fluid ones put them
// at the start of the second; both offer the lesson's totals.
func TestUniformAndFluidPlacement(t *testing.T) {
	for _, a := range []model.Arrivals{{}, uniform} {
		w := withArrivals(t, a)
		for i, times := range w.Realise(0, 0, nil) {
			series := w.Offered(i)
			perSecond := make([]int32, len(series))
			for _, tNs := range times {
				perSecond[tNs/1e9]++
				if a.Process == model.Fluid && tNs%1e9 != 0 {
					t.Fatalf("fluid request at %d ns, not on a second", tNs)
				}
			}
			if !slices.Equal(perSecond, series) {
				t.Fatalf("%v client %d: requests per second differ from the series", a.Process, i)
			}
		}
	}
	sc := &model.Scenario{Name: "u", DurationS: 2, Arrivals: uniform,
		Clients: []model.Client{{Name: "a", Segments: []model.Segment{{T0: 0, T1: 2, Rate: 2}}}}}
	w, err := model.NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := w.Realise(0, 0, nil)[0], []int64{250e6, 750e6, 1250e6, 1750e6}; !slices.Equal(got, want) {
		t.Errorf("uniform times %v, want %v", got, want)
	}
}

// Poisson and clustered realisations have the right mean count; clustered
// requests come in whole bursts inside their segments.
func TestStochasticCounts(t *testing.T) {
	for _, a := range []model.Arrivals{poisson, clustered} {
		w := withArrivals(t, a)
		const reps = 200
		var sum float64
		for r := range reps {
			for i, times := range w.Realise(7, r, nil) {
				sum += float64(len(times))
				if a.Process == model.Clustered && len(times)%a.BurstSize != 0 {
					t.Fatalf("clustered client %d: %d requests, not whole bursts of %d", i, len(times), a.BurstSize)
				}
				for _, tNs := range times {
					if w.Offered(i)[tNs/1e9] == 0 {
						t.Fatalf("%v client %d: request at %d ns outside its segments", a.Process, i, tNs)
					}
				}
			}
		}
		mean, want := sum/reps, 16960.0
		// Var per replicate: poisson 16960; clustered burst_size·16960.
		sd := math.Sqrt(want * float64(max(a.BurstSize, 1)) / reps)
		if math.Abs(mean-want) > 4*sd {
			t.Errorf("%v: mean requests %.1f, want %v ± %.1f", a.Process, mean, want, 4*sd)
		}
	}
}

// Fluid runs of the new algorithms equal event runs on the fluid
// realisation (per-second batches as single requests).
func TestFluidRunMatchesEventRun(t *testing.T) {
	w := withArrivals(t, model.Arrivals{})
	times := w.Realise(0, 0, nil)
	policies := []model.Policy{
		model.LessonFixed, model.LessonSliding, model.LessonBucket,
		{Algorithm: model.FixedWindow, WindowS: 60, Limit: 600, PhaseS: 17},
		{Algorithm: model.SlidingLog, WindowS: 60, Limit: 900},
		{Algorithm: model.SlidingCounter, WindowS: 60, Limit: 600},
		{Algorithm: model.GCRA, Rate: 10, Capacity: 900},
		{Algorithm: model.Nginx, Rate: 10, Burst: 60, Delay: 10},
		{Algorithm: model.FixedWindowAnchored, WindowS: 60, Limit: 600},
		{Algorithm: model.Concurrency, Limit: 8, ServiceS: 0.5},
	}
	sim := w.NewSimulator()
	for _, p := range policies {
		var o model.Outcome
		sim.Run(p, &o)
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, ts := range times {
			d.Reset()
			var n int64
			for _, tNs := range ts {
				if d.Allow(tNs) {
					n++
				}
			}
			if n != o.Clients[i].Admitted {
				t.Errorf("%v client %d: fluid run admits %d, event run %d", p, i, o.Clients[i].Admitted, n)
			}
		}
	}
}

// nginx delays, by hand: 10 requests at once, rate 10 r/s, burst 9, delay 0
// wait 0, 100, …, 900 ms; delay 4 lets the first 5 through at once.
func TestNginxDelayMetrics(t *testing.T) {
	sc := &model.Scenario{Name: "d", DurationS: 1,
		Clients: []model.Client{{Name: "a", Segments: []model.Segment{{T0: 0, T1: 1, Rate: 10}}}}}
	w, err := model.NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	sim := w.NewSimulator()
	cases := []struct {
		p         model.Policy
		mean, p99 float64
	}{
		{model.Policy{Algorithm: model.Nginx, Rate: 10, Burst: 9}, 0.45, 0.9},
		{model.Policy{Algorithm: model.Nginx, Rate: 10, Burst: 9, Delay: 4}, 0.15, 0.5},
		{model.Policy{Algorithm: model.Nginx, Rate: 10, Burst: 9, Delay: 9}, 0, 0},
		{model.Policy{Algorithm: model.GCRA, Rate: 10, Capacity: 10}, 0, 0},
	}
	for _, c := range cases {
		var o model.Outcome
		sim.Run(c.p, &o)
		if o.Clients[0].Admitted != 10 || math.Abs(o.MeanDelayS-c.mean) > 1e-12 || o.P99DelayS != c.p99 {
			t.Errorf("%v: admitted %d, mean delay %v s, p99 %v s; want 10, %v, %v", c.p,
				o.Clients[0].Admitted, o.MeanDelayS, o.P99DelayS, c.mean, c.p99)
		}
	}
}

// allPolicies is one policy per algorithm, near the lesson's nominal limit.
var allPolicies = []model.Policy{
	model.LessonFixed, model.LessonSliding, model.LessonBucket,
	{Algorithm: model.SlidingLog, WindowS: 60, Limit: 600},
	{Algorithm: model.SlidingCounter, WindowS: 60, Limit: 600},
	{Algorithm: model.GCRA, Rate: 10, Capacity: 900},
	{Algorithm: model.Nginx, Rate: 10, Burst: 100, Delay: 20},
	{Algorithm: model.FixedWindowAnchored, WindowS: 60, Limit: 600},
	{Algorithm: model.Concurrency, Limit: 10, ServiceS: 0.5},
}

func TestRunDoesNotAllocate(t *testing.T) {
	for _, a := range []model.Arrivals{{}, uniform, poisson, clustered} {
		w := withArrivals(t, a)
		sim := w.NewSimulator()
		var o model.Outcome
		for _, p := range allPolicies { // warm up
			sim.Run(p, &o)
		}
		for _, p := range allPolicies {
			if n := testing.AllocsPerRun(5, func() { sim.Run(p, &o) }); n != 0 {
				t.Errorf("%v arrivals, %v: %v allocations per Run", a.Process, p, n)
			}
		}
	}
}

func BenchmarkRun(b *testing.B) {
	for _, a := range []model.Arrivals{{}, poisson} {
		w := withArrivals(b, a)
		sim := w.NewSimulator()
		for _, p := range allPolicies {
			b.Run(a.Process.String()+"/"+p.Algorithm.String(), func(b *testing.B) {
				var o model.Outcome
				b.ReportAllocs()
				for b.Loop() {
					sim.Run(p, &o)
				}
				// Each request offered is one limiter decision.
				decisions := float64(o.OfferedLegit+o.OfferedAbusive) * float64(b.N)
				b.ReportMetric(decisions/b.Elapsed().Seconds(), "decisions/s")
			})
		}
	}
}

func BenchmarkSetReplicate(b *testing.B) {
	for _, a := range []model.Arrivals{poisson, clustered} {
		sim := withArrivals(b, a).NewSimulator()
		b.Run(a.Process.String(), func(b *testing.B) {
			b.ReportAllocs()
			r := 0
			for b.Loop() {
				r++
				sim.SetReplicate(1, r)
			}
		})
	}
}
