package model

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// randomManagedPolicy returns a valid policy of a managed rule with small
// parameters, so that random traces reach their limits.
func randomManagedPolicy(rng *rand.Rand, a Algorithm) Policy {
	p := Policy{Algorithm: a}
	switch a {
	case AWSWAFRate:
		p.WindowS, p.Limit = AWSWindows[rng.IntN(len(AWSWindows))], int64(10+rng.IntN(40))
		p.LagS = []float64{0, 0.5, 3, 10, 20, 37.5}[rng.IntN(6)]
	case CloudflareRule:
		p.PeriodS = float64(CloudflarePeriods[rng.IntN(3)])
		p.RequestsPerPeriod = int64(1 + rng.IntN(30))
		p.MitigationTimeoutS = CloudflareTimeouts[rng.IntN(4)]
		p.Counts = HAProxyCounts(rng.IntN(2))
	case FastlyERL:
		p.WindowS, p.Rate = FastlyWindows[rng.IntN(len(FastlyWindows))], float64(10+rng.IntN(5))
		p.PenaltyBoxS, p.UndercountPct = 60*(1+rng.IntN(2)), float64([]int{0, 0, 3, 10}[rng.IntN(4)])
	}
	return p
}

// managedTrace returns non-decreasing times (ns) with batch sizes: bursts
// of requests ms apart, pauses of seconds and idle gaps of minutes.
func managedTrace(rng *rand.Rand, n int) (times, sizes []int64) {
	var t int64
	for range n {
		switch rng.IntN(10) {
		case 0, 1: // same instant
		case 2, 3, 4:
			t += rng.Int64N(int64(20 * time.Millisecond))
		case 5, 6, 7:
			t += rng.Int64N(int64(2 * time.Second))
		case 8:
			t += rng.Int64N(int64(30 * time.Second))
		case 9:
			t += rng.Int64N(int64(5 * time.Minute))
		}
		times = append(times, t)
		sizes = append(sizes, int64(1+rng.IntN(8)))
	}
	return times, sizes
}

// managedRef is a managed rule written from its documentation over a log
// of every request, independently of the deciders' buckets and rings.
type managedRef interface{ allow(t int64) bool }

// awsRef: blocked iff the last check acting at t, at c·10 s with c·10 s +
// lag <= t, found more than limit requests in [c·10 s − window, c·10 s).
type awsRef struct {
	p   Policy
	log []int64
}

func (r *awsRef) allow(t int64) bool {
	lag := int64(awsLagS(r.p) * 1e9)
	var c int64
	for (c+1)*10*secondNs+lag <= t { // the last check acting at t
		c++
	}
	for c*10*secondNs+lag > t {
		c--
	}
	end := c * 10 * secondNs
	n := 0
	for _, u := range r.log {
		if u >= end-int64(r.p.WindowS)*secondNs && u < end {
			n++
		}
	}
	r.log = append(r.log, t)
	return int64(n) <= r.p.Limit
}

// cloudflareRef: the rate with this request is prev·(P − e)/P + curr + 1 in
// exact rationals, over the counted requests of the log.
type cloudflareRef struct {
	p     Policy
	log   []int64 // counted requests
	until int64   // block end (-1: none)
}

func (r *cloudflareRef) allow(t int64) bool {
	size := int64(r.p.PeriodS) * secondNs
	if r.until > t {
		if r.p.Counts == HAProxyCountsAll {
			r.log = append(r.log, t)
		}
		return false
	}
	start := t / size * size
	var prev, curr int64
	for _, u := range r.log {
		switch {
		case u >= start:
			curr++
		case u >= start-size:
			prev++
		}
	}
	rate := big.NewRat(prev*(size-(t-start)), size)
	rate.Add(rate, big.NewRat(curr+1, 1))
	if rate.Cmp(big.NewRat(r.p.RequestsPerPeriod, 1)) > 0 {
		if r.p.MitigationTimeoutS > 0 {
			r.until = t + int64(r.p.MitigationTimeoutS)*secondNs
		}
		if r.p.Counts == HAProxyCountsAll {
			r.log = append(r.log, t)
		}
		return false
	}
	r.log = append(r.log, t)
	return true
}

// fastlyRef: counted requests in seconds s − window + 1 … s, this one
// included, less undercount_pct (rounded down), against rate·window.
type fastlyRef struct {
	p     Policy
	log   []int64
	until int64
}

func (r *fastlyRef) allow(t int64) bool {
	if r.until > t {
		return false
	}
	r.log = append(r.log, t)
	from := (t/secondNs - int64(r.p.WindowS) + 1) * secondNs
	n := int64(0)
	for _, u := range r.log {
		if u >= from {
			n++
		}
	}
	counted := new(big.Rat).SetFrac64(n*(100-int64(r.p.UndercountPct)), 100)
	q := new(big.Int).Quo(counted.Num(), counted.Denom()) // rounded down (positive)
	if q.Cmp(big.NewInt(int64(r.p.Rate)*int64(r.p.WindowS))) > 0 {
		r.until = t + int64(r.p.PenaltyBoxS)*secondNs
		return false
	}
	return true
}

func newManagedRef(p Policy) managedRef {
	switch p.Algorithm {
	case AWSWAFRate:
		return &awsRef{p: p}
	case CloudflareRule:
		return &cloudflareRef{p: p, until: -1}
	}
	return &fastlyRef{p: p, until: -1}
}

var managedAlgorithms = []Algorithm{AWSWAFRate, CloudflareRule, FastlyERL}

// Each managed rule decides as its reference, request by request, on random
// traces, through Allow and through AllowN's batches.
func TestManagedRulesMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	for _, a := range managedAlgorithms {
		t.Run(a.String(), func(t *testing.T) {
			cut := 0
			for trial := range 150 {
				p := randomManagedPolicy(rng, a)
				times, sizes := managedTrace(rng, 300)
				d, err := NewDecider(p)
				if err != nil {
					t.Fatal(err)
				}
				batched, _ := NewDecider(p)
				ref := newManagedRef(p)
				for i, tm := range times {
					want := int64(0)
					for range sizes[i] {
						got, w := d.Allow(tm), ref.allow(tm)
						if got != w {
							t.Fatalf("trial %d %v: batch %d at %v: Allow %v, reference %v", trial, p, i, time.Duration(tm), got, w)
						}
						if w {
							want++
						} else {
							cut++
						}
					}
					if got := batched.AllowN(tm, sizes[i]); got != want {
						t.Fatalf("trial %d %v: batch %d at %v: AllowN(%d) = %d, want %d", trial, p, i, time.Duration(tm), sizes[i], got, want)
					}
				}
			}
			if cut == 0 {
				t.Error("no request was cut: the traces do not test the limit")
			}
		})
	}
}

// peek is Allow without the change, and a clone decides as the original.
func TestManagedRulesStateOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 4))
	for _, a := range managedAlgorithms {
		for range 40 {
			p := randomManagedPolicy(rng, a)
			d := newDecider(p)
			times, sizes := managedTrace(rng, 200)
			for i, tm := range times {
				if i == len(times)/2 {
					c := d.cloneInto(nil)
					for j := i; j < len(times); j++ {
						if x, y := c.AllowN(times[j], sizes[j]), d.cloneInto(nil).AllowN(times[j], sizes[j]); j == i && x != y {
							t.Fatalf("%v: clone decides otherwise", p)
						}
					}
				}
				want := d.cloneInto(nil).Allow(tm)
				if got := d.peek(tm); got != want {
					t.Fatalf("%v: peek at %v = %v, Allow %v", p, time.Duration(tm), got, want)
				}
				if got := d.peek(tm); got != want {
					t.Fatalf("%v: a second peek at %v = %v, Allow %v", p, time.Duration(tm), got, want)
				}
				d.AllowN(tm, sizes[i])
			}
		}
	}
}

// A decider whose state is not live decides the rest of a trace as a new key.
func TestManagedRulesStateSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 5))
	for _, a := range managedAlgorithms {
		for range 60 {
			p := randomManagedPolicy(rng, a)
			d := newDecider(p)
			times, sizes := managedTrace(rng, 200)
			for i, tm := range times {
				if live, _ := d.stateSize(tm); !live {
					fresh := newDecider(p)
					a, b := d.cloneInto(nil), fresh
					for j := i; j < len(times); j++ {
						if x, y := a.AllowN(times[j], sizes[j]), b.AllowN(times[j], sizes[j]); x != y {
							t.Fatalf("%v: not live at %v, but decides %d where a new key decides %d at %v", p, time.Duration(tm), x, y, time.Duration(times[j]))
						}
					}
				}
				d.AllowN(tm, sizes[i])
			}
		}
	}
}

type mStep struct {
	tMs, n, want int64
}

func runManagedSteps(t *testing.T, p Policy, steps []mStep) {
	t.Helper()
	d, err := NewDecider(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		if got := d.AllowN(s.tMs*1e6, s.n); got != s.want {
			t.Errorf("%v: step %d (%d requests at %d ms): admitted %d, want %d", p, i, s.n, s.tMs, got, s.want)
		}
	}
}

// Step tables worked out by hand from the vendors' documentation.
func TestManagedRuleSteps(t *testing.T) {
	aws := func(w int, limit int64, lag float64) Policy {
		return Policy{Algorithm: AWSWAFRate, WindowS: w, Limit: limit, LagS: lag}
	}
	cf := func(period float64, n int64, timeout int, c HAProxyCounts) Policy {
		return Policy{Algorithm: CloudflareRule, PeriodS: period, RequestsPerPeriod: n, MitigationTimeoutS: timeout, Counts: c}
	}
	fastly := func(w int, rate float64, box int, under float64) Policy {
		return Policy{Algorithm: FastlyERL, WindowS: w, Rate: rate, PenaltyBoxS: box, UndercountPct: under}
	}
	cases := []struct {
		name  string
		p     Policy
		steps []mStep
	}{
		{"aws: 11 requests over a limit of 10 pass until the next check, 20 s later",
			aws(60, 10, 0), []mStep{{1000, 11, 11}, {29_999, 5, 5}, {30_000, 1, 0}, {70_000, 1, 0}}},
		// The check at 60 s counts [0, 60 s): 16, acting from 80 s; the check at
		// 90 s counts [30 s, 90 s): the request at 81 s only, acting from 110 s.
		{"aws: blocked while the checked count is over, released a check after it falls",
			aws(60, 10, 0), []mStep{{1000, 11, 11}, {29_999, 5, 5}, {81_000, 1, 0}, {110_000, 1, 1}}},
		{"aws: lag 1 s acts a second after the check",
			aws(60, 10, 1), []mStep{{0, 11, 11}, {10_000, 1, 1}, {10_999, 1, 1}, {11_000, 1, 0}}},
		{"aws: exactly the limit is not over",
			aws(60, 10, 1), []mStep{{0, 10, 10}, {11_000, 1, 1}, {21_000, 1, 0}}},
		{"cloudflare: 1 per 10 s blocks the second request for the mitigation timeout (the docs' example)",
			cf(10, 1, 600, HAProxyCountsAll), []mStep{{0, 1, 1}, {5000, 1, 0}, {15_000, 1, 0}, {585_000, 1, 0}, {604_999, 0, 0}, {605_000, 1, 1}}},
		{"cloudflare: throttle admits the rate, the previous period weighted",
			// 10 admitted in [0, 10 s); at 15 s the weight is 0.5: 5 + curr + 1 <= 10 admits 5;
			// at 19.999 s 10·0.0001 + 5 + 4 <= 10 admits 4 of 5.
			cf(10, 10, 0, HAProxyCountsAdmitted), []mStep{{0, 12, 10}, {15_000, 8, 5}, {19_999, 5, 4}}},
		{"cloudflare: throttle counting blocked requests keeps a flood out",
			// 12 counted in [0, 10 s); at 15 s 6 + curr + 1 <= 10 admits 4, all 8 counted;
			// at 19.999 s ⌈0.0012⌉ + 8 + 1 <= 10 admits 1 of 2; at 25 s 10·0.5 + curr + 1 <= 10 admits 5 of 6.
			cf(10, 10, 0, HAProxyCountsAll), []mStep{{0, 12, 10}, {15_000, 8, 4}, {19_999, 2, 1}, {25_000, 6, 5}}},
		{"cloudflare: the weighted previous period is not rounded down",
			// prev 3: at 15 s 1.5 + 1 + 1 > 3 blocks the second request, at 16 s 1.2 + 1 + 1 > 3
			// (sliding_counter's floor would admit both); at 18 s 0.6 + 1 + 1 <= 3.
			cf(10, 3, 0, HAProxyCountsAdmitted), []mStep{{9000, 3, 3}, {15_000, 2, 1}, {16_000, 1, 0}, {18_000, 1, 1}}},
		{"cloudflare: requests blocked during the timeout count with counts all, and renew it",
			// [0, 10 s) counts 7: at 10 s 7 + 1 > 2 blocks to 20 s; [10, 20 s) counts 2: at 20 s
			// 2 + 1 > 2 blocks to 30 s; [20, 30 s) counts 1: at 30 s 1 + 1 <= 2.
			cf(10, 2, 10, HAProxyCountsAll), []mStep{{0, 3, 2}, {5000, 4, 0}, {10_000, 1, 0}, {16_000, 1, 0}, {20_000, 1, 0}, {30_000, 1, 1}}},
		{"fastly: 1 s window, 10/s: the 11th request in a second penalizes for a minute",
			fastly(1, 10, 60, 0), []mStep{{0, 10, 10}, {999, 1, 0}, {1000, 5, 0}, {59_999, 1, 0}, {60_999, 10, 10}, {61_000, 11, 10}}},
		{"fastly: 10 s window sums ten 1 s buckets",
			fastly(10, 10, 120, 0), []mStep{{0, 60, 60}, {9000, 40, 40}, {9999, 1, 0}, {129_998, 1, 0}, {129_999, 1, 1}}},
		{"fastly: the previous seconds' buckets stay in the window",
			fastly(10, 10, 60, 0), []mStep{{0, 100, 100}, {9999, 1, 0}, {69_999, 1, 1}, {70_000, 100, 99}}},
		{"fastly: a 10% undercount lets 12 requests in a second count as 10",
			fastly(1, 10, 60, 10), []mStep{{0, 12, 12}, {500, 1, 0}, {60_500, 12, 12}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runManagedSteps(t, c.p, c.steps) })
	}
}

// Values outside the vendors' documented ranges are refused, naming the
// parameter.
func TestManagedRulesValidate(t *testing.T) {
	ok := []Policy{
		{Algorithm: AWSWAFRate, WindowS: 300, Limit: 10},
		{Algorithm: AWSWAFRate, WindowS: 60, Limit: 2_000_000_000, LagS: 600},
		{Algorithm: CloudflareRule, PeriodS: 3600, RequestsPerPeriod: 1, MitigationTimeoutS: 86400},
		{Algorithm: FastlyERL, WindowS: 60, Rate: 70_000_000, PenaltyBoxS: 3600, UndercountPct: 10},
	}
	for _, p := range ok {
		if err := p.Validate(); err != nil {
			t.Errorf("%v: %v", p, err)
		}
	}
	bad := []struct {
		p     Policy
		field string
	}{
		{Policy{Algorithm: AWSWAFRate, WindowS: 30, Limit: 100}, "window_s"},
		{Policy{Algorithm: AWSWAFRate, WindowS: 60, Limit: 9}, "limit"},
		{Policy{Algorithm: AWSWAFRate, WindowS: 60, Limit: 2_000_000_001}, "limit"},
		{Policy{Algorithm: AWSWAFRate, WindowS: 60, Limit: 10, LagS: -1}, "lag_s"},
		{Policy{Algorithm: AWSWAFRate, WindowS: 60, Limit: 10, LagS: 601}, "lag_s"},
		{Policy{Algorithm: AWSWAFRate, WindowS: 60, Limit: 10, Key: KeyBoth}, "key"},
		{Policy{Algorithm: CloudflareRule, PeriodS: 30, RequestsPerPeriod: 1}, "period_s"},
		{Policy{Algorithm: CloudflareRule, PeriodS: 10.5, RequestsPerPeriod: 1}, "period_s"},
		{Policy{Algorithm: CloudflareRule, PeriodS: 10, RequestsPerPeriod: 0}, "requests_per_period"},
		{Policy{Algorithm: CloudflareRule, PeriodS: 10, RequestsPerPeriod: 1, MitigationTimeoutS: 30}, "mitigation_timeout_s"},
		{Policy{Algorithm: CloudflareRule, PeriodS: 10, RequestsPerPeriod: 1, SyncMs: 5}, "sync_ms"},
		{Policy{Algorithm: FastlyERL, WindowS: 5, Rate: 10, PenaltyBoxS: 60}, "window_s"},
		{Policy{Algorithm: FastlyERL, WindowS: 1, Rate: 9, PenaltyBoxS: 60}, "rate"},
		{Policy{Algorithm: FastlyERL, WindowS: 1, Rate: 10.5, PenaltyBoxS: 60}, "rate"},
		{Policy{Algorithm: FastlyERL, WindowS: 1, Rate: 10, PenaltyBoxS: 90}, "penalty_box_s"},
		{Policy{Algorithm: FastlyERL, WindowS: 1, Rate: 10, PenaltyBoxS: 7200}, "penalty_box_s"},
		{Policy{Algorithm: FastlyERL, WindowS: 1, Rate: 10, PenaltyBoxS: 60, UndercountPct: 11}, "undercount_pct"},
		{Policy{Algorithm: FastlyERL, WindowS: 1, Rate: 10, PenaltyBoxS: 60, UndercountPct: 2.5}, "undercount_pct"},
	}
	for _, c := range bad {
		err := c.p.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != c.field {
			t.Errorf("%+v: error %v, want one naming %s", c.p, err, c.field)
		}
	}
}

// The labels name the product and its settings; the canonical label lists
// every parameter, lag_s only when not its default.
func TestManagedRuleLabels(t *testing.T) {
	for _, c := range []struct {
		p                Policy
		label, canonical string
	}{
		{Policy{Algorithm: AWSWAFRate, WindowS: 300, Limit: 100}, "AWS WAF 300 s", "aws_waf_rate window_s=300 limit=100"},
		{Policy{Algorithm: AWSWAFRate, WindowS: 60, Limit: 10, LagS: 5}, "AWS WAF 60 s", "aws_waf_rate window_s=60 limit=10 lag_s=5"},
		{Policy{Algorithm: CloudflareRule, PeriodS: 60, RequestsPerPeriod: 100, MitigationTimeoutS: 600},
			"Cloudflare 60 s, block 600 s (all)", "cloudflare_rule period_s=60 counts=all requests_per_period=100 mitigation_timeout_s=600"},
		{Policy{Algorithm: CloudflareRule, PeriodS: 10, RequestsPerPeriod: 5, Counts: HAProxyCountsAdmitted},
			"Cloudflare 10 s throttle (admitted)", "cloudflare_rule period_s=10 counts=admitted requests_per_period=5 mitigation_timeout_s=0"},
		{Policy{Algorithm: FastlyERL, WindowS: 10, Rate: 100, PenaltyBoxS: 120}, "Fastly ERL 100/s over 10 s, box 2 min", "fastly_erl window_s=10 rate=100 penalty_box_s=120"},
	} {
		if got := c.p.Algorithm.Describe().Label(c.p); got != c.label {
			t.Errorf("Label = %q, want %q", got, c.label)
		}
		if got := c.p.Canonical(); got != c.canonical {
			t.Errorf("Canonical = %q, want %q", got, c.canonical)
		}
	}
	a := []float64{0, 5, 30, 30, 2, 0}
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{Policy{Algorithm: AWSWAFRate, WindowS: 60, Limit: 10}, "up to 67 requests in 60 s against 10"},
		{Policy{Algorithm: CloudflareRule, PeriodS: 10, RequestsPerPeriod: 50}, "up to 67 requests in 10 s against 50"},
		{Policy{Algorithm: FastlyERL, WindowS: 1, Rate: 20, PenaltyBoxS: 60}, "up to 30 requests in 1 s against 20"},
	} {
		if got := c.p.Algorithm.Describe().Bound(c.p, a); got != c.want {
			t.Errorf("%v: Bound = %q, want %q", c.p, got, c.want)
		}
	}
	if !slices.Contains(Algorithms, FastlyERL) {
		t.Error("fastly_erl is not registered")
	}
}

// A Cloudflare rule of 1 request per 10 s that blocks for 10 minutes (the
// example of Cloudflare's documentation): the second request starts the
// block, which holds whatever the rate, and the rule counts again after it.
func ExampleNewDecider_cloudflareRule() {
	p := Policy{Algorithm: CloudflareRule, PeriodS: 10, RequestsPerPeriod: 1, MitigationTimeoutS: 600, Counts: HAProxyCountsAdmitted}
	d, err := NewDecider(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range []int64{0, 5, 300, 604, 605} {
		fmt.Printf("%3d s: %v\n", s, d.Allow(s*secondNs))
	}
	// Output:
	//   0 s: true
	//   5 s: false
	// 300 s: false
	// 604 s: false
	// 605 s: true
}
