package model

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// step is one request (or a batch of n > 1 requests) at tMs and how many
// are admitted; delayMs is the delay of the last one admitted (shapers only).
type step struct {
	tMs     float64
	n, want int64
	delayMs float64
}

// Step tables in the style of x/time/rate's tests: small hand-computed traces.
func TestDeciderSteps(t *testing.T) {
	one := func(tMs float64, ok bool) step {
		if ok {
			return step{tMs: tMs, n: 1, want: 1}
		}
		return step{tMs: tMs, n: 1}
	}
	cases := []struct {
		name  string
		p     Policy
		steps []step
	}{
		{"sliding_log: attempts count, a client that keeps trying is locked out",
			Policy{Algorithm: SlidingLog, WindowS: 2, Limit: 2},
			[]step{one(0, true), one(500, true), one(1000, false), one(1500, false), one(2000, false),
				one(2600, false), one(4100, true), one(4200, false), one(6300, true)}},
		{"sliding_window on events: only admitted requests count",
			Policy{Algorithm: SlidingWindow, WindowS: 2, Limit: 2},
			[]step{one(0, true), one(500, true), one(1000, false), one(1500, false), one(2000, true),
				one(2600, true), one(2700, false), one(4100, true)}},
		{"sliding_window on events: (t-W, t] excludes t-W",
			Policy{Algorithm: SlidingWindow, WindowS: 1, Limit: 1},
			[]step{one(0, true), one(999.999999, false), one(1000, true)}},
		{"sliding_counter: RussellLuo replay 10/s",
			Policy{Algorithm: SlidingCounter, WindowS: 1, Limit: 10},
			[]step{{tMs: 900, n: 12, want: 10}, {tMs: 1000, n: 10, want: 0}, {tMs: 1500, n: 10, want: 5},
				{tMs: 2000, n: 10, want: 5}, {tMs: 2999, n: 10, want: 5}, {tMs: 4000, n: 20, want: 10}}},
		{"sliding_counter: floor of the weighted previous window",
			Policy{Algorithm: SlidingCounter, WindowS: 10, Limit: 3},
			[]step{{tMs: 0, n: 3, want: 3}, one(10000, false), one(13000, true), one(13300, false), one(13400, true),
				one(16600, false), one(16700, true)}},
		{"gcra: throttled PerSec(10) MaxBurst 5 replay (capacity 6)",
			Policy{Algorithm: GCRA, Rate: 10, Capacity: 6},
			[]step{{tMs: 0, n: 10, want: 6}, {tMs: 100, n: 10, want: 1}, one(150, false), one(200, true), one(200, false)}},
		{"gcra: capacity 1 spaces requests by 1/rate",
			Policy{Algorithm: GCRA, Rate: 4, Capacity: 1},
			[]step{one(0, true), one(249, false), one(250, true), one(1000, true), one(1000, false)}},
		{"gcra: idle refills to capacity, no more",
			Policy{Algorithm: GCRA, Rate: 1, Capacity: 3},
			[]step{{tMs: 0, n: 3, want: 3}, {tMs: 1000, n: 3, want: 1}, {tMs: 60000, n: 9, want: 3}}},
		{"token_bucket on events: x/time/rate r=10 b=5 replay",
			Policy{Algorithm: TokenBucket, Rate: 10, Capacity: 5},
			[]step{{tMs: 0, n: 10, want: 5}, {tMs: 100, n: 10, want: 1}, one(150, false), one(250, true)}},
		{"nginx: rate=10r/s burst=5 replay, delay 0 shapes everything",
			Policy{Algorithm: Nginx, Rate: 10, Burst: 5},
			[]step{{tMs: 0, n: 1, want: 1}, {tMs: 0, n: 1, want: 1, delayMs: 100}, {tMs: 0, n: 3, want: 3, delayMs: 400},
				{tMs: 0, n: 1, want: 1, delayMs: 500}, one(0, false), {tMs: 100, n: 2, want: 1, delayMs: 500},
				{tMs: 1000, n: 1, want: 1, delayMs: 0}}},
		{"nginx: delay=2 passes 3 at once, then waits",
			Policy{Algorithm: Nginx, Rate: 10, Burst: 5, Delay: 2},
			[]step{{tMs: 0, n: 3, want: 3}, {tMs: 0, n: 1, want: 1, delayMs: 100}, {tMs: 0, n: 5, want: 2, delayMs: 300}}},
		{"nginx: nodelay (delay >= burst)",
			Policy{Algorithm: Nginx, Rate: 10, Burst: 5, Delay: 5},
			[]step{{tMs: 0, n: 9, want: 6}, {tMs: 100, n: 9, want: 1}}},
		{"nginx: 1r/m is 16 milli-r/s, the second request passes at 62.5 s",
			Policy{Algorithm: Nginx, Rate: NginxRate(1, true), Burst: 0},
			[]step{one(0, true), one(60000, false), one(62499, false), one(62500, true)}},
		{"nginx: the clock is whole milliseconds",
			Policy{Algorithm: Nginx, Rate: 1000, Burst: 0},
			[]step{one(0.1, true), one(0.9, false), one(1.0, true)}},
		{"fixed_window on events: boundary at 2 s lets 2·limit through",
			Policy{Algorithm: FixedWindow, WindowS: 2, Limit: 2},
			[]step{{tMs: 1900, n: 3, want: 2}, {tMs: 2000, n: 3, want: 2}, one(3999, false), one(4000, true)}},
		{"fixed_window phase 1 s: boundaries at 1, 3, 5 s",
			Policy{Algorithm: FixedWindow, WindowS: 2, Limit: 2, PhaseS: 1},
			[]step{{tMs: 0, n: 3, want: 2}, {tMs: 999, n: 3, want: 0}, {tMs: 1000, n: 3, want: 2}, {tMs: 2000, n: 1, want: 0}, {tMs: 3000, n: 1, want: 1}}},
		{"fixed_window_anchored: the first hit opens the window",
			Policy{Algorithm: FixedWindowAnchored, WindowS: 2, Limit: 2},
			[]step{one(500, true), one(1000, true), one(1500, false), one(2400, false), one(2500, true), one(2600, true), one(2700, false)}},
		{"concurrency: 2 in flight, 1.5 s service",
			Policy{Algorithm: Concurrency, Limit: 2, ServiceS: 1.5},
			[]step{one(0, true), one(100, true), one(200, false), one(1500, true), one(1550, false), one(1600, true)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewDecider(c.p)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range c.steps {
				tNs := int64(s.tMs * float64(ms))
				var got int64
				if s.n == 1 {
					if d.Allow(tNs) {
						got = 1
					}
				} else {
					got = d.AllowN(tNs, s.n)
				}
				if got != s.want {
					t.Fatalf("step %d (%v ms, %d requests): admitted %d, want %d", i, s.tMs, s.n, got, s.want)
				}
				if sh, ok := d.(Shaper); ok && s.want > 0 && s.n == 1 {
					if gotMs := float64(sh.DelayNs()) / float64(ms); gotMs != s.delayMs {
						t.Fatalf("step %d (%v ms): delay %v ms, want %v ms", i, s.tMs, gotMs, s.delayMs)
					}
				}
			}
		})
	}
}

// Per-second (fluid) step tables for the algorithms that run their Decider
// on batches.
func TestFluidSteps(t *testing.T) {
	cases := []struct {
		name    string
		p       Policy
		offered []int32
		want    []int32
	}{
		{"sliding_log locks out a client above the limit", Policy{Algorithm: SlidingLog, WindowS: 3, Limit: 5},
			[]int32{3, 3, 3, 3, 3, 3}, []int32{3, 2, 0, 0, 0, 0}},
		{"sliding_log: after a quiet window, attempts lock out again", Policy{Algorithm: SlidingLog, WindowS: 2, Limit: 2},
			[]int32{3, 0, 0, 2, 2, 2}, []int32{2, 0, 0, 2, 0, 0}},
		{"fixed_window phase 1", Policy{Algorithm: FixedWindow, WindowS: 3, Limit: 2, PhaseS: 1},
			[]int32{2, 2, 2, 2, 2, 2}, []int32{2, 2, 0, 0, 2, 0}},
		{"fixed_window phase 2", Policy{Algorithm: FixedWindow, WindowS: 3, Limit: 3, PhaseS: 2},
			[]int32{2, 2, 2, 2, 2, 2}, []int32{2, 1, 2, 1, 0, 2}},
		{"anchored window opens at the first hit", Policy{Algorithm: FixedWindowAnchored, WindowS: 2, Limit: 2},
			[]int32{0, 3, 3, 3, 0, 1}, []int32{0, 2, 0, 2, 0, 1}},
		{"gcra = token bucket on whole rates", Policy{Algorithm: GCRA, Rate: 10, Capacity: 30},
			[]int32{25, 25, 25, 25}, []int32{25, 15, 10, 10}},
		{"sliding_counter", Policy{Algorithm: SlidingCounter, WindowS: 2, Limit: 4},
			[]int32{3, 3, 3, 3, 3}, []int32{3, 1, 0, 2, 2}},
		{"nginx nodelay = gcra capacity burst+1", Policy{Algorithm: Nginx, Rate: 10, Burst: 29, Delay: 29},
			[]int32{25, 25, 25, 25}, []int32{25, 15, 10, 10}},
		{"concurrency 3 in flight, 2 s service", Policy{Algorithm: Concurrency, Limit: 3, ServiceS: 2},
			[]int32{5, 5, 5, 5}, []int32{3, 0, 3, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			adm := make([]int32, len(c.offered))
			Admit(c.p, c.offered, adm)
			if !slices.Equal(adm, c.want) {
				t.Errorf("%v over %v: admitted %v, want %v", c.p, c.offered, adm, c.want)
			}
		})
	}
}

// The lesson's per-second kernels and the Deciders the event mode uses agree
// on per-second batches, dyadic rates and not.
func TestKernelsMatchDeciders(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 3000 {
		a := make([]int32, 1+rng.IntN(120))
		for i := range a {
			if rng.IntN(3) > 0 {
				a[i] = int32(rng.IntN(12))
			}
		}
		w := 1 + rng.IntN(15)
		var p Policy
		switch trial % 3 {
		case 0:
			p = Policy{Algorithm: FixedWindow, WindowS: w, Limit: int64(rng.IntN(30)), PhaseS: rng.IntN(w)}
		case 1:
			p = Policy{Algorithm: SlidingWindow, WindowS: w, Limit: int64(rng.IntN(30))}
		case 2:
			rates := []float64{0.1, 0.25, 0.3, 0.5, 1, 1.5, 2, 2.7, 3, 7, 10, 1.0 / 3}
			p = Policy{Algorithm: TokenBucket, Rate: rates[rng.IntN(len(rates))], Capacity: 1 + int64(rng.IntN(40))}
		}
		kernel, dec := make([]int32, len(a)), make([]int32, len(a))
		n1 := Admit(p, a, kernel)
		n2 := admitBatches(newDecider(p), a, dec, nil)
		if !slices.Equal(kernel, dec) || n1 != n2 {
			t.Fatalf("%v over %v:\nkernel  %v\ndecider %v", p, a, kernel, dec)
		}
	}
}

// randomPolicy returns a valid policy of algorithm a with small parameters.
func randomPolicy(rng *rand.Rand, a Algorithm) Policy {
	if a == AllOf {
		return randomStack(rng)
	}
	w := 1 + rng.IntN(5)
	p := Policy{Algorithm: a, WindowS: w, Limit: int64(rng.IntN(12))}
	switch a {
	case FixedWindow:
		p.PhaseS = rng.IntN(w)
	case TokenBucket, GCRA:
		p.Rate, p.Capacity = 0.5+rng.Float64()*20, 1+int64(rng.IntN(10))
	case Nginx:
		p.Rate, p.Burst, p.Delay = 0.5+rng.Float64()*20, int64(rng.IntN(10)), int64(rng.IntN(12))
	case Traefik: // average per period, whole seconds
		p.Rate, p.Capacity = float64(1+rng.IntN(40))/float64(1+rng.IntN(8)), 1+int64(rng.IntN(10))
	case Concurrency:
		p.ServiceS = 0.01 + rng.Float64()*3
	case HAProxyRate:
		p.PeriodS, p.Counts = float64(1+rng.IntN(5000))/1000, HAProxyCounts(rng.IntN(2))
	case AWSWAFRate, CloudflareRule, FastlyERL:
		p = randomManagedPolicy(rng, a)
	case Fail2ban:
		p.Limit, p.MitigationTimeoutS = 1+int64(rng.IntN(8)), 1+rng.IntN(30)
	}
	return p
}

// randomBatches returns non-decreasing times (ns) with batch sizes.
func randomBatches(rng *rand.Rand, n int) (times, sizes []int64) {
	var t int64
	for range n {
		switch rng.IntN(4) {
		case 0: // same instant
		case 1:
			t += rng.Int64N(int64(time.Millisecond))
		case 2:
			t += rng.Int64N(int64(time.Second))
		case 3:
			t += rng.Int64N(int64(8 * time.Second))
		}
		times = append(times, t)
		sizes = append(sizes, int64(rng.IntN(6)))
	}
	return times, sizes
}

// AllowN(t, n) is n calls Allow(t), for every algorithm.
func TestAllowNIsRepeatedAllow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, a := range Algorithms {
		for range 300 {
			p := randomPolicy(rng, a)
			if err := p.Validate(); err != nil {
				t.Fatalf("%v: %v", p, err)
			}
			batch, single := newDecider(p), newDecider(p)
			times, sizes := randomBatches(rng, 80)
			for i, tNs := range times {
				var want int64
				for range sizes[i] {
					if single.Allow(tNs) {
						want++
					}
				}
				if got := batch.AllowN(tNs, sizes[i]); got != want {
					t.Fatalf("%v: step %d AllowN(%d, %d) = %d, %d calls to Allow admit %d", p, i, tNs, sizes[i], got, sizes[i], want)
				}
			}
		}
	}
}

// Reset gives a decider back the behaviour of a new one, also after
// reconfiguration (the Simulator reuses deciders).
func TestDeciderReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, a := range Algorithms {
		reused := newDecider(randomPolicy(rng, a))
		for range 100 {
			p := randomPolicy(rng, a)
			reused.configure(p)
			fresh := newDecider(p)
			times, _ := randomBatches(rng, 60)
			for i, tNs := range times {
				if g, w := reused.Allow(tNs), fresh.Allow(tNs); g != w {
					t.Fatalf("%v: step %d: reused decider says %v, new one %v", p, i, g, w)
				}
			}
		}
	}
}

func TestDelayQuantile(t *testing.T) {
	var s delayStats
	for i := range 1000 {
		s.add(int64(i) * int64(time.Millisecond)) // 0, 1, …, 999 ms
	}
	if got := s.meanS(); got != 0.4995 {
		t.Errorf("mean %v s, want 0.4995", got)
	}
	if got := s.quantileS(0.99); got != 0.989 { // 990th smallest
		t.Errorf("p99 %v s, want 0.989", got)
	}
	s.reset()
	for range 99 {
		s.add(0)
	}
	s.add(5e9)
	if got := s.quantileS(0.99); got != 0 {
		t.Errorf("p99 of 99 zeros and one 5 s = %v, want 0", got)
	}
	if got := s.quantileS(1); got != 5 {
		t.Errorf("max = %v, want 5", got)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		xs := make([]int64, 1+rng.IntN(50))
		for i := range xs {
			xs[i] = rng.Int64N(10)
		}
		sorted := slices.Sorted(slices.Values(xs))
		k := rng.IntN(len(xs))
		if got := nthSmallest(xs, k); got != sorted[k] {
			t.Fatalf("nthSmallest(%v, %d) = %d, want %d", sorted, k, got, sorted[k])
		}
	}
}

func TestPolicyValidateZoo(t *testing.T) {
	cases := []struct {
		p     Policy
		field string
	}{
		{Policy{Algorithm: GCRA, Rate: 0, Capacity: 1}, "rate"},
		{Policy{Algorithm: GCRA, Rate: -1, Capacity: 1}, "rate"},
		{Policy{Algorithm: GCRA, Rate: 1, Capacity: 0}, "capacity"},
		{Policy{Algorithm: GCRA, Rate: 1e-9, Capacity: 1e12}, "capacity"},
		{Policy{Algorithm: TokenBucket, Rate: 2e9, Capacity: 1}, "rate"},
		{Policy{Algorithm: Nginx, Rate: 0, Burst: 1}, "rate"},
		{Policy{Algorithm: Nginx, Rate: 0.0001, Burst: 1}, "rate"},
		{Policy{Algorithm: Nginx, Rate: 1, Burst: -1}, "burst"},
		{Policy{Algorithm: Nginx, Rate: 1, Burst: 1, Delay: -1}, "delay"},
		{Policy{Algorithm: SlidingLog, WindowS: 0, Limit: 1}, "window_s"},
		{Policy{Algorithm: SlidingCounter, WindowS: -5, Limit: 1}, "window_s"},
		{Policy{Algorithm: SlidingCounter, WindowS: 5, Limit: -1}, "limit"},
		{Policy{Algorithm: FixedWindowAnchored, WindowS: 0, Limit: 1}, "window_s"},
		{Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 1, PhaseS: 60}, "phase_s"},
		{Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 1, PhaseS: -1}, "phase_s"},
		{Policy{Algorithm: Concurrency, Limit: 1, ServiceS: 0}, "service_s"},
		{Policy{Algorithm: Concurrency, Limit: -1, ServiceS: 1}, "limit"},
	}
	for _, c := range cases {
		err := c.p.Validate()
		if err == nil {
			t.Errorf("%+v: no error", c.p)
			continue
		}
		if fe, ok := err.(*FieldError); !ok || fe.Path != c.field {
			t.Errorf("%+v: error %q, want one naming %s", c.p, err, c.field)
		}
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, a := range Algorithms {
		if err := randomPolicy(rng, a).Validate(); err != nil {
			t.Errorf("%v: %v", a, err)
		}
	}
}

// Every parameter is registered, settable and gettable, and every algorithm
// names only registered parameters.
func TestParamRegistry(t *testing.T) {
	for _, prm := range Params {
		var p Policy
		if !p.Set(prm.Name, 3) || p.Get(prm.Name) != 3 {
			t.Errorf("parameter %s: Set/Get do not round-trip", prm.Name)
		}
	}
	for _, a := range Algorithms {
		if a.String() == "" || strings.HasPrefix(a.String(), "Algorithm(") {
			t.Errorf("algorithm %d has no name", a)
		}
		if b, ok := ParseAlgorithm(a.String()); !ok || b != a {
			t.Errorf("%s does not parse back", a)
		}
		if len(a.Params()) == 0 && a != AllOf { // all_of requires its components instead
			t.Errorf("%s: no required parameters", a)
		}
		for _, name := range append(a.Params(), a.OptionalParams()...) {
			if _, ok := LookupParam(name); !ok {
				t.Errorf("%s: parameter %s not in Params", a, name)
			}
		}
	}
	if got := (Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 600}).String(); got != "fixed_window limit=600 window_s=60" {
		t.Errorf("String without phase: %q", got)
	}
	if got := (Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 600, PhaseS: 7}).String(); got != "fixed_window limit=600 window_s=60 phase_s=7" {
		t.Errorf("String with phase: %q", got)
	}
	if got := (Policy{Algorithm: Nginx, Rate: 10, Burst: 20, Delay: 20}).Label(); got != "nginx 10 r/s burst 20 nodelay" {
		t.Errorf("nginx label %q", got)
	}
}

func TestAdapters(t *testing.T) {
	cases := []struct {
		got, want Policy
	}{
		{GCRAFromXTimeRate(10, 5), Policy{Algorithm: GCRA, Rate: 10, Capacity: 5}},
		{GCRAFromRedisRate(30, 17, 30*time.Second), Policy{Algorithm: GCRA, Rate: 1, Capacity: 17}},
		{GCRAFromThrottled(10, time.Second, 5), Policy{Algorithm: GCRA, Rate: 10, Capacity: 6}},
		{GCRAFromNginx(NginxRate(120, true), 5), Policy{Algorithm: GCRA, Rate: 2, Capacity: 6}},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %+v, want %+v", c.got, c.want)
		}
	}
	for _, c := range []struct {
		rate float64
		want int64
	}{{3, 333333333}, {7, 142857142}, {10, 1e8}, {1.0 / 60, 60e9}, {1e9, 1}, {1e9 / 1234567, 1234567}} {
		if got := emissionNs(ratioOf(c.rate)); got != c.want {
			t.Errorf("emissionNs(%v) = %d, want %d", c.rate, got, c.want)
		}
	}
}

// TestCountAdmittedEqualsAllow checks each decider's own event loops
// (countAdmitted, countByLabel) against the same decisions made one Allow at
// a time through the interface.
func TestCountAdmittedEqualsAllow(t *testing.T) {
	policies := []Policy{
		LessonFixed, LessonSliding, LessonBucket,
		{Algorithm: SlidingLog, WindowS: 3, Limit: 7},
		{Algorithm: SlidingCounter, WindowS: 2, Limit: 5},
		{Algorithm: GCRA, Rate: 3, Capacity: 4},
		{Algorithm: FixedWindowAnchored, WindowS: 2, Limit: 3},
		{Algorithm: Concurrency, Limit: 2, ServiceS: 0.25},
		{Algorithm: HAProxyRate, PeriodS: 2, Limit: 4},
	}
	rng := rand.New(rand.NewPCG(7, 36))
	for _, p := range policies {
		d := newDecider(p)
		c, ok := d.(eventCounter)
		if _, byLabel := d.(labelCounter); !ok || !byLabel {
			t.Errorf("%v: no countAdmitted or countByLabel", p)
			continue
		}
		for trial := range 50 {
			times := make([]int64, rng.IntN(200))
			var at int64
			for i := range times {
				at += rng.Int64N(400 * ms)
				times[i] = at
			}
			d.Reset()
			var want int64
			for _, at := range times {
				if d.Allow(at) {
					want++
				}
			}
			d.Reset()
			if got := c.countAdmitted(times); got != want {
				t.Fatalf("%v, trial %d: countAdmitted = %d, Allow one by one = %d", p, trial, got, want)
			}
			labels := make([]Stage, len(times))
			for i := range labels {
				labels[i] = Stage(rng.IntN(4))
			}
			var byLabel, wantBy [4]int64
			d.Reset()
			for i, at := range times {
				if d.Allow(at) {
					wantBy[labels[i]]++
				}
			}
			d.Reset()
			AdmitByLabel(d, times, labels, &byLabel)
			if byLabel != wantBy {
				t.Fatalf("%v, trial %d: AdmitByLabel = %v, Allow one by one = %v", p, trial, byLabel, wantBy)
			}
		}
	}
}
