package report

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// pt makes a point whose legit cut % is x and missed % is y (offered 100 of
// each class, so counts equal percentages).
func pt(id int64, x, y int64) Point {
	var p Point
	p.ID = id
	p.Policy = model.Policy{Algorithm: model.SlidingWindow, WindowS: 60, Limit: id}
	p.add(&model.Metrics{OfferedLegit: 100, OfferedAbusive: 100, FalseCut: x, Missed: y, Caught: 100 - y})
	return p
}

func frontierIDs(f *Frontier) []string {
	var out []string
	for _, q := range f.Points() {
		s := fmt.Sprint(q.ID)
		if q.Ties > 0 {
			s += fmt.Sprintf("+%d", q.Ties)
		}
		out = append(out, s)
	}
	return out
}

func TestFrontierHandMade(t *testing.T) {
	pts := []Point{
		pt(1, 0, 90),  // frontier: no false cut
		pt(2, 10, 60), // frontier
		pt(3, 10, 70), // dominated by 2 (same x, more missed)
		pt(4, 20, 60), // dominated by 2 (more cut, same missed)
		pt(5, 30, 20), // frontier
		pt(6, 15, 65), // dominated by 2 (worse on both)
		pt(7, 10, 60), // tie of 2
		pt(8, 50, 20), // dominated by 5
		pt(9, 60, 5),  // frontier
		pt(10, 0, 95), // dominated by 1
	}
	var f Frontier
	for _, p := range pts {
		f.Add(p)
	}
	want := []string{"1", "2+1", "5", "9"}
	if got := frontierIDs(&f); !slices.Equal(got, want) {
		t.Fatalf("frontier = %v, want %v", got, want)
	}
	// A new point that dominates several removes them all.
	f.Add(pt(11, 5, 15))
	if got, want := frontierIDs(&f), []string{"1", "11", "9"}; !slices.Equal(got, want) {
		t.Fatalf("after a dominating point: %v, want %v", got, want)
	}
	// Same x, better y replaces the point at that x.
	f.Add(pt(12, 0, 80))
	if got, want := frontierIDs(&f), []string{"12", "11", "9"}; !slices.Equal(got, want) {
		t.Fatalf("after a better point at x=0: %v, want %v", got, want)
	}
}

func TestFrontierTieKeepsFirst(t *testing.T) {
	var f Frontier
	f.Add(pt(3, 10, 10))
	f.Add(pt(1, 10, 10))
	f.Add(pt(2, 10, 10))
	ps := f.Points()
	if len(ps) != 1 || ps[0].ID != 3 || ps[0].Ties != 2 {
		t.Fatalf("ties: %+v, want the first point (3) with 2 ties", ps)
	}
}

// The frontier does not depend on the order points arrive in, and matches a
// brute-force check of dominance.
func TestFrontierOrderIndependentAndBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var pts []Point
	for i := range 400 {
		pts = append(pts, pt(int64(i), rng.Int64N(60), rng.Int64N(60)))
	}
	var want []string
	for _, p := range pts {
		dominated := false
		for _, q := range pts {
			if q.X() <= p.X() && q.Y() <= p.Y() && (q.X() < p.X() || q.Y() < p.Y()) {
				dominated = true
			}
		}
		if !dominated {
			want = append(want, fmt.Sprintf("%g,%g", p.X(), p.Y()))
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	for trial := range 3 {
		rng.Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
		var f Frontier
		for _, p := range pts {
			f.Add(p)
		}
		var got []string
		for i, q := range f.Points() {
			got = append(got, fmt.Sprintf("%g,%g", q.X(), q.Y()))
			if i > 0 && !(q.X() > f.Points()[i-1].X() && q.Y() < f.Points()[i-1].Y()) {
				t.Fatalf("trial %d: frontier not sorted by x with y descending at %d", trial, i)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: frontier %v, want %v", trial, got, want)
		}
	}
}

func TestFrontierBest(t *testing.T) {
	var f Frontier
	for _, p := range []Point{pt(1, 0, 90), pt(2, 10, 50), pt(3, 30, 20), pt(4, 60, 5)} {
		f.Add(p)
	}
	for _, c := range []struct {
		target float64
		id     int64
		ok     bool
	}{{100, 1, true}, {50, 2, true}, {49.9, 3, true}, {10, 4, true}, {5, 4, true}, {4, 0, false}} {
		b, ok := f.Best(c.target)
		if ok != c.ok || (ok && b.ID != c.id) {
			t.Errorf("Best(%g) = %d, %v; want %d, %v", c.target, b.ID, ok, c.id, c.ok)
		}
	}
}

func TestFrontierKnees(t *testing.T) {
	// An L-shaped frontier bends at (10, 10); a smaller bend at (40, 4).
	var f Frontier
	for i, xy := range [][2]int64{{0, 100}, {2, 60}, {5, 30}, {10, 10}, {25, 6}, {40, 4}, {70, 3}, {100, 2}} {
		f.Add(pt(int64(i), xy[0], xy[1]))
	}
	k := f.Knees(1)
	if len(k) != 1 || k[0].X() != 10 {
		t.Fatalf("Knees(1) = %+v, want the point at x=10", k)
	}
	k = f.Knees(2)
	if len(k) != 2 || k[0].X() > k[1].X() || !slices.ContainsFunc(k, func(p FrontierPoint) bool { return p.X() == 10 }) {
		t.Fatalf("Knees(2) = %v, want two points sorted by x including x=10", k)
	}
	// A straight frontier has no knee; a short one neither.
	var line Frontier
	for i := range int64(5) {
		line.Add(pt(i, 10*i, 40-10*i))
	}
	if k := line.Knees(2); len(k) != 0 {
		t.Fatalf("straight frontier: knees %v, want none", k)
	}
	var two Frontier
	two.Add(pt(1, 0, 10))
	two.Add(pt(2, 10, 0))
	if k := two.Knees(2); len(k) != 0 {
		t.Fatalf("two-point frontier: knees %v, want none", k)
	}
}
