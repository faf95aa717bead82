package export

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// syntheticRun is n sliding-window and token-bucket points with made-up
// metrics (for the index's tests and benchmark: no simulation).
func syntheticRun(n int) []*Point {
	var run []*Point
	for i := range n {
		var p model.Policy
		if i%2 == 0 {
			p = model.Policy{Algorithm: model.SlidingWindow, WindowS: 10 + 10*(i%7), Limit: int64(50 + i)}
		} else {
			p = model.Policy{Algorithm: model.TokenBucket, Rate: float64(1 + i%9), Capacity: int64(10 + i)}
		}
		run = append(run, &Point{Policy: p, Label: p.Canonical(), PointID: int64(i), Replicates: 1,
			OfferedLegit: 1000, OfferedAbusive: 500, FalseCut: float64(i % 997), Missed: float64((i * 7) % 491)})
	}
	return run
}

// bruteNearest is the nearest point expressible by a plain scan (the
// definition NearestIn documents).
func bruteNearest(p model.Policy, target string, run []*Point) *Point {
	var asked, best *Point
	for _, q := range run {
		if q.Label == p.Canonical() {
			asked = q
		}
	}
	for _, c := range run {
		if ok, _ := Expressible(c.Policy, target); !ok || !sameDistribution(c.Policy, p) {
			continue
		}
		if best == nil || distance(asked, c) < distance(asked, best) {
			best = c
		}
	}
	return best
}

// NearestIn's index is reused for the same points and rebuilt for others:
// removing the nearest point from the run gives the next nearest, never a
// stale answer.
func TestNearestInIndexFollowsTheRun(t *testing.T) {
	run := syntheticRun(400)
	p := run[10].Policy // a sliding window: nginx cannot express it
	tested := 0
	for _, target := range Targets {
		cur := run
		for step := range 3 {
			res, _, exported, err := NearestIn(p, target, cur, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Fit != Nearest {
				break // the target configures the policy itself
			}
			tested++
			want := bruteNearest(p, target, cur)
			if want == nil && exported == nil {
				break // no point of the run that target expresses: the rule's translation
			}
			if exported == nil || want == nil || exported.Label != want.Label {
				t.Fatalf("%s, step %d: exported %v, want %v", target, step, exported, want)
			}
			if exported == cur[10] {
				break // expressible as asked
			}
			cur = slices.DeleteFunc(slices.Clone(cur), func(q *Point) bool { return q == exported })
		}
	}
	if tested < 6 {
		t.Fatalf("%d nearest exports checked, want several targets × steps", tested)
	}
}

// BenchmarkNearestIn is explore.html's use: every target for a frontier's
// points of one run.
func BenchmarkNearestIn(b *testing.B) {
	run := syntheticRun(25000)
	for b.Loop() {
		for _, target := range Targets {
			for i := 0; i < 100; i++ {
				if _, _, _, err := NearestIn(run[i*50].Policy, target, run, Options{}); err != nil {
					b.Fatal(fmt.Sprint(target, err))
				}
			}
		}
	}
}
