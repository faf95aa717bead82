package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ratesweep/ratesweep/configs"
)

// randomWorkload returns a random piecewise-constant scenario: 1–4 clients,
// 1–400 seconds (sometimes up to 1200), segments with rates 0–60 (sometimes
// up to 3000), gaps of no traffic between them.
func randomWorkload(t testing.TB, rng *rand.Rand) *Workload {
	d := 1 + rng.IntN(400)
	if rng.IntN(10) == 0 {
		d = 1 + rng.IntN(1200)
	}
	sc := &Scenario{Name: "random", DurationS: d}
	for c := range 1 + rng.IntN(4) {
		cl := Client{Name: fmt.Sprint("c", c), Class: Class(rng.IntN(2))}
		if cl.Class == Abusive {
			cl.Stage = Stages[rng.IntN(len(Stages))]
		}
		maxRate := 60
		if rng.IntN(8) == 0 {
			maxRate = 3000
		}
		for t0 := 0; t0 < d; {
			t1 := min(d, t0+1+rng.IntN(max(1, d/2)))
			if rng.IntN(4) > 0 || len(cl.Segments) == 0 {
				cl.Segments = append(cl.Segments, Segment{T0: t0, T1: t1, Rate: float64(rng.IntN(maxRate + 1))})
			}
			t0 = t1
		}
		sc.Clients = append(sc.Clients, cl)
	}
	w, err := NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// randomFastPolicy draws parameters in the ranges the property tests cover:
// windows 1–300, limits 0–3000, capacities 1–3000, rates whole, dyadic
// (x/2^j) and other fractions.
func randomFastPolicy(rng *rand.Rand, alg Algorithm) Policy {
	p := Policy{Algorithm: alg, WindowS: 1 + rng.IntN(300), Limit: int64(rng.IntN(3001))}
	if rng.IntN(6) == 0 {
		p.WindowS = 1 + rng.IntN(10)
	}
	if rng.IntN(6) == 0 {
		p.Limit = int64(rng.IntN(40))
	}
	if alg == FixedWindow && rng.IntN(3) == 0 {
		p.PhaseS = rng.IntN(p.WindowS)
	}
	if alg == TokenBucket {
		p.Capacity = 1 + int64(rng.IntN(3000))
		if rng.IntN(4) == 0 {
			p.Capacity = 1 + int64(rng.IntN(60))
		}
		switch rng.IntN(4) {
		case 0:
			p.Rate = float64(1 + rng.IntN(100))
		case 1:
			p.Rate = float64(1+rng.IntN(400)) / float64(int(1)<<(1+rng.IntN(6)))
		case 2:
			p.Rate = float64(1+rng.IntN(1000)) / 10
		default:
			p.Rate = 0.01 + rng.Float64()*60
		}
	}
	return p
}

// reference returns each client's admitted total by the step-by-step kernels.
func reference(w *Workload, p Policy) []int64 {
	out := make([]int64, len(w.series))
	adm := make([]int32, w.Scenario.DurationS)
	for i, a := range w.series {
		out[i] = Admit(p, a, adm)
	}
	return out
}

// TestFastEqualsReference runs the closed forms (tables built at once, and
// through Simulator.Run with its caching) against Admit on 12,000 random
// piecewise-constant workloads.
func TestFastEqualsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 2026))
	const workloads = 12_000
	var checked [4]int
	defer func(c int64) { cheapBuild = c }(cheapBuild)
	for n := range workloads {
		cheapBuild = int64(n%2) << 22 // odd: build on the second use; even: ski rental only
		w := randomWorkload(t, rng)
		f := newFastSim(w)
		sim := w.NewSimulator()
		var o Outcome
		for _, alg := range []Algorithm{FixedWindow, SlidingWindow, TokenBucket} {
			for range 2 {
				p := randomFastPolicy(rng, alg)
				want := reference(w, p)
				// Tables built at once, queried at this limit and two more
				// that share the window.
				if alg != TokenBucket {
					e := &fastEntry{}
					f.build(e, alg, p.WindowS, p.PhaseS)
					for _, lim := range []int64{p.Limit, 0, int64(rng.IntN(200))} {
						q := p
						q.Limit = lim
						wantQ := want
						if lim != p.Limit {
							wantQ = reference(w, q)
						}
						for i := range w.series {
							var got int64
							if e.fixed != nil {
								got = e.fixed[i].admitted(min(lim, w.offered[i]))
							} else {
								got = e.hulls[i].admitted(lim)
							}
							if got != wantQ[i] {
								t.Fatalf("workload %d %v client %d (%v): table %d, reference %d",
									n, q, i, w.Scenario.Clients[i].Segments, got, wantQ[i])
							}
						}
						checked[alg]++
					}
				}
				// Simulator.Run: the dispatch, caching and fallbacks.
				for range 3 {
					sim.Run(p, &o)
					for i, r := range o.Clients {
						if r.Admitted != want[i] || r.Offered != w.offered[i] {
							t.Fatalf("workload %d %v client %d (%v): Run admitted %d of %d, reference %d of %d",
								n, p, i, w.Scenario.Clients[i].Segments, r.Admitted, r.Offered, want[i], w.offered[i])
						}
					}
					checked[0]++
				}
			}
		}
	}
	t.Logf("%d workloads; checks: %d fixed tables, %d sliding tables, %d Run", workloads, checked[FixedWindow], checked[SlidingWindow], checked[0])
}

// phasedFixedWindow is the fixed window with boundaries at phase + k·window
// (0 <= phase < window), second by second; phase 0 is Admit's fixed window.
func phasedFixedWindow(a, adm []int32, limit int64, window, phase int) {
	var counter int64
	for t, x := range a {
		if (t+window-phase)%window == 0 {
			counter = 0
		}
		n := min(int64(x), max(0, limit-counter))
		counter += n
		adm[t] = int32(n)
	}
}

// TestFixedWindowSums checks the per-window view: each window admits
// min(window sum, limit), second by second as the reference does (Admit for
// phase 0, and a phased variant of it).
func TestFixedWindowSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for range 10_000 {
		w := randomWorkload(t, rng)
		f := newFastSim(w)
		p := randomFastPolicy(rng, FixedWindow)
		phase := 0
		if rng.IntN(2) == 0 {
			phase = rng.IntN(p.WindowS)
		}
		p.PhaseS = phase
		adm := make([]int32, w.Scenario.DurationS)
		for i, a := range w.series {
			if phase == 0 {
				Admit(p, a, adm)
			} else {
				phasedFixedWindow(a, adm, p.Limit, p.WindowS, phase)
			}
			sums := windowSums(f.runs[i], p.WindowS, phase, nil)
			var bounds []int // window starts
			for t := range len(a) {
				if t == 0 || (t+p.WindowS-phase)%p.WindowS == 0 {
					bounds = append(bounds, t)
				}
			}
			if len(sums) != len(bounds) {
				t.Fatalf("%v phase %d over %d s: %d window sums, want %d", p, phase, len(a), len(sums), len(bounds))
			}
			var total int64
			for k, s := range sums {
				lo, hi := bounds[k], len(a)
				if k+1 < len(bounds) {
					hi = bounds[k+1]
				}
				var off, got int64
				for t := lo; t < hi; t++ {
					off += int64(a[t])
					got += int64(adm[t])
				}
				if s != off || got != min(s, p.Limit) {
					t.Fatalf("%v phase %d window %d: sum %d (offered %d), reference admitted %d, closed form %d", p, phase, k, s, off, got, min(s, p.Limit))
				}
				total += min(s, p.Limit)
			}
			if tbl := newFixedTable(slices.Clone(sums)); tbl.admitted(min(p.Limit, w.offered[i])) != total {
				t.Fatalf("%v phase %d: table %d, want %d", p, phase, tbl.admitted(p.Limit), total)
			}
		}
	}
}

// TestFastFallsBackForOtherFields: a policy with a field the closed forms do
// not read (here: a fixed window that also sets Rate) takes the reference.
func TestFastFallsBackForOtherFields(t *testing.T) {
	w := randomWorkload(t, rand.New(rand.NewPCG(1, 1)))
	f := newFastSim(w)
	out := make([]ClientResult, len(w.series))
	for _, p := range []Policy{
		{Algorithm: FixedWindow, WindowS: 10, Limit: 5, Rate: 1},
		{Algorithm: SlidingWindow, WindowS: 10, Limit: 5, Capacity: 3},
		{Algorithm: TokenBucket, Rate: 2, Capacity: 5, WindowS: 4},
	} {
		if f.admitAll(p, out) {
			t.Errorf("%+v: the fast path took a policy with a foreign field", p)
		}
	}
	if !f.admitAll(Policy{Algorithm: TokenBucket, Rate: 2, Capacity: 5}, out) {
		t.Error("the fast path refused a plain token bucket")
	}
}

// TestBucketRunBoundaries checks the token bucket's closed form second by
// second at every run boundary (cumulative admitted), for every kind of rate
// (whole, dyadic, decimal, any float) and capacities up to 2^62.
func TestBucketRunBoundaries(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	checked := 0
	for n := range 10_000 {
		w := randomWorkload(t, rng)
		f := newFastSim(w)
		p := randomFastPolicy(rng, TokenBucket)
		if n%10 == 0 {
			p.Capacity = maxCapacity - int64(rng.IntN(3))
		}
		r := ratioOf(p.Rate)
		adm := make([]int32, w.Scenario.DurationS)
		for i, a := range w.series {
			Admit(p, a, adm)
			rs := f.runs[i]
			var cum, end int64
			for j := range rs {
				end += rs[j].n
				for t := end - rs[j].n; t < end; t++ {
					cum += int64(adm[t])
				}
				if got := bucketRuns(rs[:j+1], p.Capacity, r); got != cum {
					t.Fatalf("%v runs %v: after %d s closed form %d, reference %d", p, rs[:j+1], end, got, cum)
				}
				checked++
			}
		}
	}
	if checked < 10_000 {
		t.Fatalf("only %d boundaries checked", checked)
	}
}

// TestRatioOf: decimals as written, quotients as the fraction they round
// from, and the bounds.
func TestRatioOf(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want ratio
	}{
		{10, ratio{10, 1}}, {0.5, ratio{1, 2}}, {2.75, ratio{11, 4}}, {0.1, ratio{1, 10}},
		{0.3, ratio{3, 10}}, {99.99, ratio{9999, 100}}, {0.123456789, ratio{123456789, 1e9}},
		{1e-9, ratio{1, 1e9}}, {1e9, ratio{1e9, 1}}, {1.0 / 60, ratio{1, 60}}, {7.0 / 3, ratio{7, 3}},
		{1000.0 / 4999, ratio{1000, 4999}}, {1e9 / 1234567.0, ratio{1e9, 1234567}},
		{0.1 + 0.2, ratio{3, 10}}, // 0.30000000000000004: within 1 ulp of 3/10
	} {
		if got := ratioOf(c.rate); got != c.want {
			t.Errorf("ratioOf(%v) = %v, want %v", c.rate, got, c.want)
		}
	}
	// Any float in range: the fraction is within 1/(den·10^9) of it (and
	// float rounding).
	rng := rand.New(rand.NewPCG(3, 3))
	for range 2000 {
		x := math.Exp(rng.Float64()*math.Log(1e18)) * 1e-9
		r := ratioOf(x)
		if r.num < 1 || r.den < 1 || r.den > maxDen ||
			math.Abs(float64(r.num)/float64(r.den)-x) > 1/(float64(r.den)*maxDen)+4e-16*x {
			t.Fatalf("ratioOf(%v) = %v", x, r)
		}
	}
}

// TestFastLesson checks the lesson's workload on every grid point of the
// peers' bench grid shape (windows 10–300, limits 1–2000 step 7, rates
// 1–20, capacities step 13).
func TestFastLesson(t *testing.T) {
	sc, err := ParseScenario(configs.Lesson)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	sim := w.NewSimulator()
	var o Outcome
	var ps []Policy
	for _, alg := range []Algorithm{FixedWindow, SlidingWindow} {
		for _, win := range []int{1, 10, 30, 60, 120, 300} {
			for lim := int64(0); lim <= 2000; lim += 7 {
				ps = append(ps, Policy{Algorithm: alg, WindowS: win, Limit: lim})
			}
		}
	}
	for r := 1.0; r <= 20; r += 0.5 {
		for c := int64(1); c <= 2000; c += 13 {
			ps = append(ps, Policy{Algorithm: TokenBucket, Rate: r, Capacity: c})
		}
	}
	for _, p := range ps {
		sim.Run(p, &o)
		want := reference(w, p)
		got := make([]int64, len(o.Clients))
		for i, r := range o.Clients {
			got[i] = r.Admitted
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%v: admitted %v, reference %v", p, got, want)
		}
	}
}

// TestRunAllocationFreeAfterWarmUp: two runs of a policy build its tables;
// later runs of it do not allocate.
func TestRunAllocationFreeAfterWarmUp(t *testing.T) {
	sc, err := ParseScenario(configs.Lesson)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	sim := w.NewSimulator()
	var o Outcome
	for _, p := range []Policy{LessonFixed, LessonSliding, LessonBucket, {Algorithm: SlidingWindow, WindowS: 2, Limit: 30}} {
		sim.Run(p, &o)
		sim.Run(p, &o)
		if n := testing.AllocsPerRun(20, func() { sim.Run(p, &o) }); n != 0 {
			t.Errorf("%v: %v allocations per Run after warm-up", p, n)
		}
	}
}

// The hull found by parametric search (slidingHull) answers every limit as
// the programme over k does (slidingHullRows), on random series with few and
// with many hull vertices (noise, spikes), the latter past the search's
// budget and so through its fallback.
func TestSlidingHullSearchEqualsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 2027))
	vertices := map[bool]int{}
	for n := range 3000 {
		d := 1 + rng.IntN(600)
		a := make([]int32, d)
		var offered int64
		kind := n % 3
		for i := range a {
			switch kind {
			case 0: // noise
				a[i] = int32(rng.IntN(20))
			case 1: // rare spikes
				if rng.IntN(30) == 0 {
					a[i] = int32(rng.IntN(500))
				}
			default: // runs
				if i == 0 || rng.IntN(40) == 0 {
					a[i] = int32(rng.IntN(50))
				} else {
					a[i] = a[i-1]
				}
			}
			offered += int64(a[i])
		}
		window := 1 + rng.IntN(min(d, 60))
		w := &Workload{Scenario: &Scenario{DurationS: d}}
		f := &fastSim{w: w, safe: true}
		got, want := f.slidingHull(a, offered, window), f.slidingHullRows(a, offered, window)
		vertices[len(got.k) > 16] = vertices[len(got.k) > 16] + 1
		for lim := int64(0); lim <= min(offered, 3000)+1; lim++ {
			if g, w := got.admitted(lim), want.admitted(lim); g != w {
				t.Fatalf("series %d (%v, window %d), limit %d: search %d, rows %d (hulls %v %v and %v %v)",
					n, a, window, lim, g, w, got.k, got.g, want.k, want.g)
			}
		}
	}
	if vertices[true] < 100 || vertices[false] < 100 {
		t.Errorf("hull sizes not varied enough: %v", vertices)
	}
}
