package model

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Step tables in the style of x/time/rate's tests: each row is a small
// hand-computed trace of offered and admitted requests per second.
func TestLimiterSteps(t *testing.T) {
	fw := func(limit int64, w int) Policy { return Policy{Algorithm: FixedWindow, Limit: limit, WindowS: w} }
	sw := func(limit int64, w int) Policy { return Policy{Algorithm: SlidingWindow, Limit: limit, WindowS: w} }
	tb := func(r float64, c int64) Policy { return Policy{Algorithm: TokenBucket, Rate: r, Capacity: c} }
	cases := []struct {
		name    string
		p       Policy
		offered []int32
		want    []int32
	}{
		// fixed window: counter resets when t % window == 0
		{"fixed fills then resets", fw(5, 3), []int32{3, 3, 3, 3, 3, 3}, []int32{3, 2, 0, 3, 2, 0}},
		{"fixed boundary burst doubles", fw(4, 2), []int32{0, 4, 4, 0}, []int32{0, 4, 4, 0}},
		{"fixed window 1 = per second", fw(2, 1), []int32{5, 1, 3}, []int32{2, 1, 2}},
		{"fixed limit 0 admits nothing", fw(0, 10), []int32{1, 2}, []int32{0, 0}},
		{"fixed partial last window", fw(3, 4), []int32{1, 1, 1, 1, 2, 2}, []int32{1, 1, 1, 0, 2, 1}},
		// sliding window: admitted in the last window seconds, rejected not counted
		{"sliding counts admitted only", sw(5, 3), []int32{3, 3, 3, 3, 3, 3}, []int32{3, 2, 0, 3, 2, 0}},
		{"sliding edge: oldest second leaves", sw(4, 2), []int32{4, 4, 4, 4}, []int32{4, 0, 4, 0}},
		{"sliding no boundary doubling", sw(4, 2), []int32{0, 4, 4, 0}, []int32{0, 4, 0, 0}},
		{"sliding window 1", sw(2, 1), []int32{5, 1, 3}, []int32{2, 1, 2}},
		{"sliding long window", sw(6, 4), []int32{2, 2, 2, 2, 2, 2, 2}, []int32{2, 2, 2, 0, 2, 2, 2}},
		{"sliding rejected do not lock out", sw(1, 2), []int32{9, 9, 9, 9}, []int32{1, 0, 1, 0}},
		// token bucket: starts full, refill then floor(tokens)
		{"bucket starts full", tb(1, 5), []int32{9, 0, 0, 9}, []int32{5, 0, 0, 3}},
		{"bucket refill capped at capacity", tb(2, 3), []int32{0, 0, 0, 9, 9}, []int32{0, 0, 0, 3, 2}},
		{"bucket steady under rate", tb(3, 3), []int32{2, 2, 2, 2}, []int32{2, 2, 2, 2}},
		{"bucket fractional rate floors", tb(0.5, 1), []int32{1, 1, 1, 1, 1}, []int32{1, 0, 1, 0, 1}},
		{"bucket drains then rate", tb(10, 30), []int32{25, 25, 25, 25}, []int32{25, 15, 10, 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			adm := make([]int32, len(c.offered))
			total := Admit(c.p, c.offered, adm)
			if !slices.Equal(adm, c.want) {
				t.Errorf("%v over %v: admitted %v, want %v", c.p, c.offered, adm, c.want)
			}
			var sum int64
			for _, x := range c.want {
				sum += int64(x)
			}
			if total != sum {
				t.Errorf("total %d, want %d", total, sum)
			}
		})
	}
}

// naiveSliding is the O(duration × window) definition of the lesson.
func naiveSliding(a []int32, limit int64, window int) []int32 {
	adm := make([]int32, len(a))
	for t := range a {
		var sum int64
		for u := max(0, t-window+1); u < t; u++ {
			sum += int64(adm[u])
		}
		adm[t] = int32(min(int64(a[t]), max(0, limit-sum)))
	}
	return adm
}

func TestSlidingWindowMatchesDefinition(t *testing.T) {
	a := make([]int32, 200)
	for i := range a {
		a[i] = int32((i*7919)%23) * int32(i%5)
	}
	for _, w := range []int{1, 2, 3, 7, 60, 199, 200, 500} {
		for _, limit := range []int64{0, 1, 5, 40, 100, 1000} {
			adm := make([]int32, len(a))
			Admit(Policy{Algorithm: SlidingWindow, Limit: limit, WindowS: w}, a, adm)
			if want := naiveSliding(a, limit, w); !slices.Equal(adm, want) {
				t.Fatalf("window %d limit %d: running sum differs from definition", w, limit)
			}
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	bad := []Policy{
		{Algorithm: FixedWindow, WindowS: 0, Limit: 1},
		{Algorithm: SlidingWindow, WindowS: 5, Limit: -1},
		{Algorithm: TokenBucket, Rate: 0, Capacity: 1},
		{Algorithm: TokenBucket, Rate: 1, Capacity: 0},
		{Algorithm: 99},
	}
	for _, p := range bad {
		if p.Validate() == nil {
			t.Errorf("%+v: no error", p)
		}
	}
	for _, p := range []Policy{LessonFixed, LessonSliding, LessonBucket} {
		if err := p.Validate(); err != nil {
			t.Errorf("%v: %v", p, err)
		}
	}
}

func BenchmarkAdmit(b *testing.B) {
	a := make([]int32, 300)
	for i := range a {
		a[i] = int32(i % 31)
	}
	adm := make([]int32, len(a))
	for _, p := range []Policy{LessonFixed, LessonSliding, LessonBucket} {
		b.Run(p.Algorithm.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Admit(p, a, adm)
			}
		})
	}
}

// Values is Value for every parameter, in the order of Params.
func TestPolicyValuesMatchValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	got := make([]float64, len(Params))
	for range 1000 {
		var p Policy
		for _, prm := range Params {
			if rng.IntN(3) > 0 {
				v := float64(rng.IntN(5))
				if !prm.Int && prm.Values == nil && !prm.Whole {
					v += 0.25
				}
				p.Set(prm.Name, v)
			}
		}
		p.Values(got)
		for i, prm := range Params {
			if want := p.Value(prm.Name); got[i] != want || p.ValueAt(i) != want {
				t.Fatalf("%+v: Values[%d] (%s) = %v, ValueAt %v, Value = %v", p, i, prm.Name, got[i], p.ValueAt(i), want)
			}
		}
	}
}
