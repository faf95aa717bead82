package model

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ratesweep/ratesweep/configs"
)

func benchWorkload(b *testing.B) *Workload {
	sc, err := ParseScenario(configs.Lesson)
	if err != nil {
		b.Fatal(err)
	}
	w, err := NewWorkload(sc)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// benchPolicies are the kernels' benchmark points: one policy per algorithm
// for the reference, and a sweep over limits (capacities) for Run, as the
// sweep runner calls it.
var benchPolicies = []struct {
	name string
	p    Policy
	vary func(p *Policy, i int) // sets the i-th point of a sweep
}{
	{"fixed_window", LessonFixed, func(p *Policy, i int) { p.Limit = int64(1 + i%2000) }},
	{"sliding_window", LessonSliding, func(p *Policy, i int) { p.Limit = int64(1 + i%2000) }},
	{"token_bucket", LessonBucket, func(p *Policy, i int) { p.Capacity = int64(1 + i%2000) }},
}

// BenchmarkReference is the step-by-step reference kernel over the lesson's
// seven clients (one op = one policy over all clients).
func BenchmarkReference(b *testing.B) {
	w := benchWorkload(b)
	adm := make([]int32, w.Scenario.DurationS)
	for _, bp := range benchPolicies {
		b.Run(bp.name, func(b *testing.B) {
			b.ReportAllocs()
			p := bp.p
			for i := 0; b.Loop(); i++ {
				bp.vary(&p, i)
				for _, a := range w.series {
					Admit(p, a, adm)
				}
			}
		})
	}
}

// BenchmarkRun is Simulator.Run (fast paths) over the lesson's seven
// clients, sweeping the limit (capacity) at a fixed window (rate) like the
// sweep runner does; one op = one grid point.
func BenchmarkRun(b *testing.B) {
	w := benchWorkload(b)
	for _, bp := range benchPolicies {
		b.Run(bp.name, func(b *testing.B) {
			sim := w.NewSimulator()
			var o Outcome
			p := bp.p
			for i := range 4096 { // warm the tables
				bp.vary(&p, i)
				sim.Run(p, &o)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				bp.vary(&p, i)
				sim.Run(p, &o)
			}
		})
	}
}

// BenchmarkRunWindows sweeps windows 1–300 × limits 1–2000 (the large
// grid's window entries) including the table builds; one op = one point.
func BenchmarkRunWindows(b *testing.B) {
	w := benchWorkload(b)
	for _, alg := range []Algorithm{FixedWindow, SlidingWindow} {
		b.Run(alg.String(), func(b *testing.B) {
			b.ReportAllocs()
			var o Outcome
			o.Clients = make([]ClientResult, len(w.series))
			sim := w.NewSimulator()
			for i := 0; b.Loop(); i++ {
				if i%(300*2000) == 0 {
					sim = w.NewSimulator() // cold tables every full grid
				}
				p := Policy{Algorithm: alg, WindowS: 1 + i/2000%300, Limit: int64(1 + i%2000)}
				sim.Run(p, &o)
			}
		})
	}
}

// stretchedLesson is the lesson's scenario over d seconds: every segment's
// ends scaled by d/300 (the same day shape, longer), or, tiled, the 300 s
// lesson repeated d/300 times (many short runs).
func stretchedLesson(b *testing.B, d int, tiled bool) *Workload {
	sc, err := ParseScenario(configs.Lesson)
	if err != nil {
		b.Fatal(err)
	}
	k := d / sc.DurationS
	for i := range sc.Clients {
		var segs []Segment
		for _, s := range sc.Clients[i].Segments {
			if !tiled {
				segs = append(segs, Segment{T0: s.T0 * k, T1: s.T1 * k, Rate: s.Rate})
				continue
			}
			for r := range k {
				off := r * sc.DurationS
				segs = append(segs, Segment{T0: s.T0 + off, T1: s.T1 + off, Rate: s.Rate})
			}
		}
		slices.SortFunc(segs, func(a, b Segment) int { return a.T0 - b.T0 })
		sc.Clients[i].Segments = segs
	}
	sc.DurationS = d
	w, err := NewWorkload(sc)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkRunDuration is Simulator.Run for sliding_window (window 60 s,
// limits 1–2000, tables cold every 2,000 points as in a sweep's entry) over
// the lesson stretched to 300 s … one day; one op = one grid point. Linear
// in duration means ns/op at 86400 within 2 × 288 × ns/op at 300.
func BenchmarkRunDuration(b *testing.B) {
	for _, tiled := range []bool{false, true} {
		for _, d := range []int{300, 3600, 14400, 86400} {
			name := fmt.Sprintf("stretched/%d", d)
			if tiled {
				name = fmt.Sprintf("tiled/%d", d)
			}
			b.Run(name, func(b *testing.B) {
				w := stretchedLesson(b, d, tiled)
				var o Outcome
				sim := w.NewSimulator()
				for i := 0; b.Loop(); i++ {
					if i%2000 == 0 {
						sim = w.NewSimulator()
					}
					sim.Run(Policy{Algorithm: SlidingWindow, WindowS: 60, Limit: int64(1 + i%2000)}, &o)
				}
			})
		}
	}
}
