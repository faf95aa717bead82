package model

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestCanonicalLabel(t *testing.T) {
	cases := []struct {
		p    Policy
		want string
	}{
		{Policy{Algorithm: SlidingWindow, WindowS: 60, Limit: 600}, "sliding_window window_s=60 limit=600"},
		{Policy{Algorithm: TokenBucket, Rate: 0.5, Capacity: 1000000}, "token_bucket rate=0.5 capacity=1000000"},
		{Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 10, PhaseS: 30}, "fixed_window window_s=60 limit=10 phase_s=30"},
		{Policy{Algorithm: Nginx, Rate: 10, Burst: 5}, "nginx rate=10 burst=5"},
		{Policy{Algorithm: Nginx, Rate: 10, Burst: 5, Delay: 5, Nodes: 3, State: Shared}, "nginx rate=10 burst=5 delay=5 nodes=3 state=shared"},
		{Policy{Algorithm: SlidingCounter, WindowS: 10, Limit: 5, Key: KeyAddress, Nodes: 1}, "sliding_counter window_s=10 limit=5 key=address"},
	}
	for _, c := range cases {
		if got := c.p.Canonical(); got != c.want {
			t.Errorf("%+v: label %q, want %q", c.p, got, c.want)
		}
		back, err := ParseLabel(c.want)
		if err != nil {
			t.Fatalf("ParseLabel(%q): %v", c.want, err)
		}
		if got := back.Canonical(); got != c.want {
			t.Errorf("ParseLabel(%q) reads back as %q", c.want, got)
		}
	}
	// Order and optional parameters at their default do not matter.
	p, err := ParseLabel("sliding_window limit=600 window_s=60 nodes=1")
	if err != nil || p.Canonical() != "sliding_window window_s=60 limit=600" {
		t.Errorf("reordered label: %v %q", err, p.Canonical())
	}
	for _, bad := range []string{"", "leaky", "sliding_window window_s=60", "sliding_window window_s=60 limit=x",
		"sliding_window window_s=60 limit=600 rate=3", "sliding_window window_s=0 limit=600", "token_bucket rate=1 capacity=2.5",
		"sliding_window window_s=60 limit=600 limit=601", "sliding_window window_s"} {
		if _, err := ParseLabel(bad); err == nil {
			t.Errorf("ParseLabel(%q) accepted", bad)
		}
	}
}

// appendParam writes numbers as strconv.AppendFloat(v, 'f', -1) does, also
// where it takes its integer shortcut.
func TestAppendParamNumbers(t *testing.T) {
	prm := &Params[2] // rate: a double column
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1e-7, 1 << 52, 1<<53 - 1, 1 << 53, 1<<53 + 2, -(1<<53 - 1),
		1e15, 1e20, 1e21, 123456789012345678, math.MaxInt64, math.MinInt64, math.MaxFloat64, math.Inf(1), math.NaN()}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		vals = append(vals, float64(rng.Int64N(1<<55)-1<<54), math.Float64frombits(rng.Uint64()),
			float64(rng.IntN(20000))/float64(1+rng.IntN(8)))
	}
	for _, v := range vals {
		want := " rate=" + strconv.FormatFloat(v, 'f', -1, 64)
		if got := string(appendParam(nil, prm, v)); got != want {
			t.Fatalf("%v: %q, want %q", v, got, want)
		}
	}
}

// BenchmarkAppendCanonical is the label of one point, as the writer formats
// it for every point of a part.
func BenchmarkAppendCanonical(b *testing.B) {
	p := Policy{Algorithm: SlidingWindow, WindowS: 60, Limit: 600}
	var buf []byte
	for i := range b.N {
		p.Limit = int64(i % 2000)
		buf = p.AppendCanonical(buf[:0])
	}
}

// LabelAppender writes what AppendLabel writes, label after label, over
// sequences like a grid's (one parameter stepping, others held, algorithm
// changes, optional parameters at and off their defaults).
func TestLabelAppenderEqualsAppendLabel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	vals := make([]float64, len(Params))
	for range 300 {
		var got, next, want []byte
		var l, ln LabelAppender // ln: AppendNext, told which parameter changed
		p := randomPolicy(rng, Algorithms[rng.IntN(len(Algorithms))])
		prev := p
		for range 1 + rng.IntN(60) {
			changed := -1
			switch rng.IntN(6) {
			case 0:
				p = randomPolicy(rng, Algorithms[rng.IntN(len(Algorithms))])
			case 1:
				q := randomPolicy(rng, p.Algorithm)
				p.Limit, p.Capacity, p.Burst = q.Limit, q.Capacity, q.Burst
			case 2:
				p.Limit++
				changed = 1
			case 3:
				p.Capacity++
				changed = 3
			default:
				p.Rate += 0.5
				changed = 2
			}
			if p.Validate() != nil {
				p = prev
				continue
			}
			p.Values(vals)
			want = AppendLabel(want, p.Algorithm, vals)
			got = l.Append(got, p.Algorithm, vals)
			next = ln.AppendNext(next, p.Algorithm, vals, changed)
			if string(got) != string(want) || string(next) != string(want) {
				t.Fatalf("after %v:\n got  %q\n next %q\n want %q", p, got, next, want)
			}
			prev = p
		}
	}
}

// TestLabelAppenderCounts steps limits and capacities by one across
// decimal carries (9 to 10, 99 to 100, 999 to 1000 …), the appender's
// increment path, and compares every label with AppendLabel.
func TestLabelAppenderCounts(t *testing.T) {
	vals := make([]float64, len(Params))
	for _, p := range []Policy{
		{Algorithm: FixedWindow, WindowS: 60},
		{Algorithm: TokenBucket, Rate: 2.5, Capacity: 0},
		{Algorithm: Nginx, Rate: 10, Burst: 5, Delay: 0},
	} {
		var l, ln LabelAppender
		var got, next, want []byte
		for range 10_050 {
			var changed int
			switch p.Algorithm {
			case TokenBucket:
				p.Capacity++
				changed = 3
			case Nginx:
				p.Delay++ // optional parameter: off its default from the first step
				changed = 6
			default:
				p.Limit++
				changed = 1
			}
			p.Values(vals)
			want = AppendLabel(want, p.Algorithm, vals)
			got = l.Append(got, p.Algorithm, vals)
			next = ln.AppendNext(next, p.Algorithm, vals, changed)
			if string(got) != string(want) || string(next) != string(want) {
				t.Fatalf("after %v:\n got  %q\n next %q\n want %q", p, got[max(0, len(got)-60):], next[max(0, len(next)-60):], want[max(0, len(want)-60):])
			}
		}
	}
	for _, c := range []struct{ in, want string }{{"x=0", "x=1"}, {"x=9", "x=10"}, {"x=199", "x=200"}, {"x=9999", "x=10000"}} {
		if got := string(incrementDecimal([]byte(c.in), 0)); got != c.want {
			t.Errorf("incrementDecimal(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
