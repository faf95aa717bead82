package model_test

// Oracle tests: the Deciders that the event simulation runs agree, decision
// by decision, with the real limiter libraries on random request traces
// (virtual clocks, non-decreasing times; docs/algorithms.md); so do the
// log replay's Locksteps of token_bucket, gcra and sliding_counter
// (withLockstep).

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/RussellLuo/slidingwindow"

	"github.com/ratesweep/ratesweep/model"
)

const oracleTraces = 1200 // per library

// base is the virtual clock's origin (time 0 of a trace).
var base = time.Unix(1_700_000_000, 0)

// randomTrace returns n non-decreasing request times, ns from 0, mixing
// simultaneous requests, sub-period gaps and idle spells around period ns.
// With grid > 1 every time is a multiple of grid.
func randomTrace(rng *rand.Rand, n int, period, grid int64) []int64 {
	times := make([]int64, n)
	var t int64
	for i := range times {
		var gap int64
		switch rng.IntN(8) {
		case 0, 1: // same instant
		case 2, 3:
			gap = rng.Int64N(max(1, period/4))
		case 4:
			gap = rng.Int64N(2 * period)
		case 5:
			gap = period + rng.Int64N(3) - 1 // exactly one period, ±1 ns
		case 6:
			gap = rng.Int64N(max(1, period/1000))
		case 7:
			gap = rng.Int64N(20 * period)
		}
		t += gap
		if grid > 1 {
			t -= t % grid
		}
		times[i] = t
	}
	return times
}

// agree runs decider d and the oracle allow over times and reports the first
// disagreement.
func agree(t *testing.T, what string, d model.Decider, allow func(time.Time) bool, times []int64) (allowed int) {
	t.Helper()
	for i, tNs := range times {
		want := allow(onClock(tNs))
		if got := d.Allow(tNs); got != want {
			t.Fatalf("%s: request %d at %d ns: decider says %v, library %v (trace %v)", what, i, tNs, got, want, times[:i+1])
		}
		if want {
			allowed++
		}
	}
	return allowed
}

// Event-mode token_bucket vs golang.org/x/time/rate Limiter.AllowN(t, 1) on
// rates a user writes (whole, decimals, n per period). The decider is exact;
// the library's float64 tokens are not, so where the exact wait is exactly
// 1 ns (a trace that lands on the boundary, which randomTrace provokes), the
// library decides by the sign of its rounding error. Every decision must
// equal an exact-fraction mirror of the library's rule, and the library's
// too, except at such a boundary (counted; the trace ends there, the two
// states having parted).
func TestOracleTokenBucketXTimeRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	nice := []float64{1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000}
	var decisions, allowed, boundaries int
	for trace := range oracleTraces {
		r := nice[rng.IntN(len(nice))]
		switch trace % 3 {
		case 1: // a decimal as written, e.g. 0.1 or 123.457 (docs/algorithms.md: token_bucket's exact arithmetic)
			r = float64(50+rng.IntN(300_000)) / 1000
		case 2: // n per period, e.g. 7 per 3 s
			r = float64(1+rng.IntN(100)) / float64(1+rng.IntN(60))
		}
		b := 1 + rng.IntN(20)
		p := model.Policy{Algorithm: model.TokenBucket, Rate: r, Capacity: int64(b)}
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		d = withLockstep(t, rand.New(rand.NewPCG(17, uint64(trace))), d, p)
		lim := newXRate(r, b)
		mirror := newRatBucket(r, int64(b))
		for i, tNs := range randomTrace(rng, 250, int64(1e9/r), 1) {
			got, exact := d.Allow(tNs), mirror.allow(tNs)
			if got != exact {
				t.Fatalf("%v: request %d at %d ns: decider says %v, exact fractions %v", p, i, tNs, got, exact)
			}
			decisions++
			if lib := lim.allow(tNs, 1); lib != got {
				if !mirror.onBoundary {
					t.Fatalf("%v: request %d at %d ns: decider says %v, library %v (not at a 1 ns boundary)", p, i, tNs, got, lib)
				}
				boundaries++
				break
			}
			if got {
				allowed++
			}
		}
	}
	if boundaries > oracleTraces/20 {
		t.Errorf("%d of %d traces ended on a boundary: too many to be rounding", boundaries, oracleTraces)
	}
	t.Logf("x/time/rate: %d traces, %d decisions (%d allowed), all agree but %d exact 1 ns boundaries the library rounds", oracleTraces, decisions, allowed, boundaries)
}

// ratBucket is x/time/rate's rule in exact fractions: continuous refill at
// rate capped at capacity, starting full; a request is admitted iff the
// deficit it leaves is below 1 ns of refill (the library's wait truncated to
// whole ns is 0); a rejection changes nothing.
type ratBucket struct {
	rate, capacity, tokens *big.Rat
	fresh                  bool
	last                   int64
	onBoundary             bool // the last decision had a wait of exactly 1 ns
}

// newRatBucket reads r as the test wrote it: n/m with m <= 60, else a
// decimal.
func newRatBucket(r float64, capacity int64) *ratBucket {
	rr, _ := new(big.Rat).SetString(strconv.FormatFloat(r, 'g', -1, 64))
	for m := int64(1); m <= 60; m++ {
		if n := math.Round(r * float64(m)); n/float64(m) == r {
			rr = big.NewRat(int64(n), m)
			break
		}
	}
	return &ratBucket{rate: rr, capacity: new(big.Rat).SetInt64(capacity), fresh: true}
}

func (b *ratBucket) allow(t int64) bool {
	tokens := new(big.Rat).Set(b.capacity)
	if !b.fresh {
		e := new(big.Rat).SetFrac64(t-b.last, 1e9)
		tokens.Add(b.tokens, e.Mul(e, b.rate))
		if tokens.Cmp(b.capacity) > 0 {
			tokens.Set(b.capacity)
		}
	}
	tokens.Sub(tokens, big.NewRat(1, 1))
	oneNs := new(big.Rat).Mul(b.rate, big.NewRat(1, 1e9))
	deficit := new(big.Rat).Neg(tokens)
	b.onBoundary = deficit.Cmp(oneNs) == 0
	if deficit.Cmp(oneNs) >= 0 {
		return false
	}
	b.fresh, b.tokens, b.last = false, tokens, t
	return true
}

// The minimal case of issue 13: one client at 1 request/s for 300 s,
// token_bucket rate 0.1 capacity 1. SPEC's rule in exact arithmetic admits
// 30 (a token every 10 s, the first from the full bucket); so does
// x/time/rate replaying the same whole-second requests on its own clock. The
// fluid fast path, the per-second kernel and the event decider all give 30
// (float64 tokens summed 0.1 ten times to 0.9999999999999999 and gave 28).
func TestTokenBucketMinimalCase(t *testing.T) {
	p := model.Policy{Algorithm: model.TokenBucket, Rate: 0.1, Capacity: 1}
	lim := newXRate(0.1, 1)
	library := 0
	for s := range int64(300) {
		if lim.allow(s*int64(time.Second), 1) {
			library++
		}
	}
	sc, err := model.ParseScenario([]byte("name: minimal\nduration_s: 300\nclients:\n  - {name: one, class: legit, segments: [[0, 300, 1]]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	var o model.Outcome
	w.NewSimulator().Run(p, &o)
	adm := make([]int32, 300)
	kernel := model.Admit(p, w.Offered(0), adm)
	d, err := model.NewDecider(p)
	if err != nil {
		t.Fatal(err)
	}
	var events int64
	for s := range int64(300) {
		if d.Allow(s * 1e9) {
			events++
		}
	}
	if library != 30 || o.Clients[0].Admitted != 30 || kernel != 30 || events != 30 {
		t.Errorf("admitted: x/time/rate %d, fast path %d, kernel %d, events %d; want 30 each", library, o.Clients[0].Admitted, kernel, events)
	}
}

// gcra vs github.com/throttled/throttled/v2 GCRA with a memstore on a
// virtual clock, through the GCRAFromThrottled adapter (capacity =
// MaxBurst+1, emission interval period/n truncated to whole ns).
func TestOracleGCRAThrottled(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	var decisions, allowed int
	for trace := range oracleTraces {
		n := 1 + rng.IntN(1000)
		period := time.Second
		switch trace % 3 {
		case 1:
			period = time.Minute
		case 2:
			n = 1 + rng.IntN(50)
			period = time.Duration(1+rng.IntN(5000)) * time.Millisecond
		}
		maxBurst := rng.IntN(20)
		lim := newThrottledGCRA(t, n, period, maxBurst)
		p := model.GCRAFromThrottled(n, period, maxBurst)
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		d = withLockstep(t, rand.New(rand.NewPCG(17, uint64(trace))), d, p)
		times := randomTrace(rng, 250, int64(period)/int64(n), 1)
		allowed += agree(t, fmt.Sprintf("%v (throttled %d per %v, MaxBurst %d)", p, n, period, maxBurst), d, func(at time.Time) bool {
			limited, _ := lim.rateLimitAt(at, 1)
			return !limited
		}, times)
		decisions += len(times)
	}
	t.Logf("throttled: %d traces, %d decisions (%d allowed), all agree", oracleTraces, decisions, allowed)
}

// dayWindows are window lengths, seconds, that divide a day. RussellLuo's
// LocalWindow starts windows at time.Truncate, which counts from Go's zero
// time (year 1); that lies a whole number of days before the Unix epoch, so
// its windows sit on the epoch exactly when the window divides a day (every
// window anyone deploys; a 7 s window would not).
var dayWindows = []int{1, 2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 20, 30, 60, 120, 300, 3600}

// sliding_counter vs github.com/RussellLuo/slidingwindow with a LocalWindow
// on its own clock (the request's Unix time, not shifted): the decider runs
// on the same times as ns since an origin that is on no window boundary,
// with its windows on the Unix epoch (NewDeciderAt), as a log replay runs it.
func TestOracleSlidingCounterRussellLuo(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 1))
	var decisions, allowed int
	for range oracleTraces {
		w := dayWindows[rng.IntN(len(dayWindows))]
		limit := rng.IntN(30)
		size := time.Duration(w) * time.Second
		origin := base.Add(time.Duration(rng.Int64N(int64(24 * time.Hour)))) // any instant of a day
		lim, _ := slidingwindow.NewLimiter(size, int64(limit), func() (slidingwindow.Window, slidingwindow.StopFunc) {
			return slidingwindow.NewLocalWindow()
		})
		p := model.Policy{Algorithm: model.SlidingCounter, WindowS: w, Limit: int64(limit)}
		d, err := model.NewDeciderAt(p, origin.UnixNano())
		if err != nil {
			t.Fatal(err)
		}
		d = withLockstepAt(t, rand.New(rand.NewPCG(17, uint64(decisions))), d, p, origin.UnixNano())
		times := randomTrace(rng, 250, int64(size)/int64(max(limit, 1)), 1)
		for i, tNs := range times {
			want := lim.AllowN(origin.Add(time.Duration(tNs)), 1)
			if got := d.Allow(tNs); got != want {
				t.Fatalf("%v from %v: request %d at +%d ns: decider says %v, library %v", p, origin, i, tNs, got, want)
			}
			if want {
				allowed++
			}
		}
		decisions += len(times)
	}
	t.Logf("RussellLuo/slidingwindow: %d traces, %d decisions (%d allowed), all agree", oracleTraces, decisions, allowed)
}

// The minimal case of issue 13: window 60 s, limit 10, one key; 10 requests
// at 00:00:30.000, 10 at 00:01:00.500, 10 at 00:01:30.500. RussellLuo on its
// own clock admits 10 + 3 + 3 = 16 (the 00:01 window weighs the first ten by
// 59.5/60 and 29.5/60). A replay aligned to the epoch admits 16 too; windows
// started at the first request's second (the old replay) admitted 11.
func TestSlidingCounterMinimalCase(t *testing.T) {
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var times []time.Time
	for _, at := range []time.Duration{30 * time.Second, 60500 * time.Millisecond, 90500 * time.Millisecond} {
		for range 10 {
			times = append(times, day.Add(at))
		}
	}
	lim, _ := slidingwindow.NewLimiter(time.Minute, 10, func() (slidingwindow.Window, slidingwindow.StopFunc) {
		return slidingwindow.NewLocalWindow()
	})
	p := model.Policy{Algorithm: model.SlidingCounter, WindowS: 60, Limit: 10}
	origin := times[0] // the log's first second: time 0 of the replay
	epoch, err := model.NewDeciderAt(p, origin.UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	start, _ := model.NewDecider(p)
	var library, aligned, fromStart int
	for _, at := range times {
		tNs := int64(at.Sub(origin))
		library += b2i(lim.AllowN(at, 1))
		aligned += b2i(epoch.Allow(tNs))
		fromStart += b2i(start.Allow(tNs))
	}
	if library != 16 || aligned != 16 || fromStart != 11 {
		t.Errorf("admitted: RussellLuo %d, epoch-aligned %d, from the first second %d; want 16, 16, 11", library, aligned, fromStart)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fixed_window on the epoch: a request is admitted while fewer than limit
// were admitted in its window [phase_s + k·window_s, …) of Unix time,
// counted here by window index, from any origin.
func TestFixedWindowOnTheEpoch(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	for range oracleTraces {
		w := 1 + rng.IntN(120)
		p := model.Policy{Algorithm: model.FixedWindow, WindowS: w, Limit: int64(rng.IntN(20)), PhaseS: rng.IntN(w)}
		origin := base.Add(time.Duration(rng.Int64N(int64(24 * time.Hour)))).UnixNano()
		d, err := model.NewDeciderAt(p, origin)
		if err != nil {
			t.Fatal(err)
		}
		count := map[int64]int64{}
		for i, tNs := range randomTrace(rng, 250, int64(w)*1e9/int64(p.Limit+1), 1) {
			k := (origin + tNs - int64(p.PhaseS)*1e9) / (int64(w) * 1e9) // Unix times are positive here
			want := count[k] < p.Limit
			if want {
				count[k]++
			}
			if got := d.Allow(tNs); got != want {
				t.Fatalf("%v from %d: request %d at +%d ns: decider says %v, epoch windows %v", p, origin, i, tNs, got, want)
			}
		}
	}
}

// The gcra adapter for x/time/rate: gcra with capacity b decides as
// rate.NewLimiter(r, b) when 1e9/r is whole and times are on a ms grid.
func TestOracleGCRAXTimeRateAdapter(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	rates := []float64{1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000}
	for range oracleTraces {
		r, b := rates[rng.IntN(len(rates))], 1+rng.IntN(20)
		d, err := model.NewDecider(model.GCRAFromXTimeRate(r, b))
		if err != nil {
			t.Fatal(err)
		}
		lim := newXRate(r, b)
		times := randomTrace(rng, 250, int64(1e9/r), int64(time.Millisecond))
		agree(t, fmt.Sprintf("gcra adapter of x/time/rate r=%v b=%d", r, b), d,
			func(at time.Time) bool { return lim.AllowN(at, 1) }, times)
	}
}

// nginx nodelay is gcra with capacity burst+1 (GCRAFromNginx) when nginx's
// integer leak is exact: whole rates dividing 1e9, times on a ms grid.
func TestNginxNodelayIsGCRA(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 1))
	rates := []int{1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000}
	for range oracleTraces {
		r, burst := rates[rng.IntN(len(rates))], rng.IntN(20)
		ng, err := model.NewDecider(model.Policy{Algorithm: model.Nginx, Rate: model.NginxRate(r, false), Burst: int64(burst), Delay: int64(burst)})
		if err != nil {
			t.Fatal(err)
		}
		g, err := model.NewDecider(model.GCRAFromNginx(float64(r), burst))
		if err != nil {
			t.Fatal(err)
		}
		times := randomTrace(rng, 250, int64(1e9)/int64(r), int64(time.Millisecond))
		agree(t, fmt.Sprintf("nginx rate=%dr/s burst=%d nodelay vs gcra", r, burst), ng,
			func(at time.Time) bool { return g.Allow(int64(at.Sub(base))) }, times)
	}
}

// The event decider equals the exact-fraction rule on decimal rates
// 0.001–100 with capacities up to 300, and where x/time/rate's float64
// cannot follow: capacities up to 2^62 (a float64 count of 2^50 tokens is
// only good to 1/8 token), which must admit every request of a trace.
func TestTokenBucketEventsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2))
	for trace := range 600 {
		r := float64(1+rng.IntN(100_000)) / 1000
		c := 1 + rng.Int64N(300)
		if trace%4 == 0 {
			c = 1<<40 + rng.Int64N(1<<62-1<<40)
		}
		p := model.Policy{Algorithm: model.TokenBucket, Rate: r, Capacity: c}
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		mirror := newRatBucket(r, c)
		for i, tNs := range randomTrace(rng, 250, int64(1e9/r), 1) {
			if got, want := d.Allow(tNs), mirror.allow(tNs); got != want {
				t.Fatalf("%v: request %d at %d ns: decider says %v, exact fractions %v", p, i, tNs, got, want)
			}
		}
	}
}

// Algorithms without window boundaries decide the same from any origin:
// NewDeciderAt equals NewDecider on random traces and random Unix origins.
func TestUnwindowedIgnoreOrigin(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 2))
	for trace := range 600 {
		var p model.Policy
		switch trace % 6 {
		case 0:
			p = model.Policy{Algorithm: model.SlidingWindow, WindowS: 1 + rng.IntN(60), Limit: int64(rng.IntN(20))}
		case 1:
			p = model.Policy{Algorithm: model.SlidingLog, WindowS: 1 + rng.IntN(60), Limit: int64(rng.IntN(20))}
		case 2:
			p = model.Policy{Algorithm: model.FixedWindowAnchored, WindowS: 1 + rng.IntN(60), Limit: int64(rng.IntN(20))}
		case 3:
			p = model.Policy{Algorithm: model.TokenBucket, Rate: float64(1+rng.IntN(5000)) / 100, Capacity: 1 + rng.Int64N(20)}
		case 4:
			p = model.Policy{Algorithm: model.GCRA, Rate: float64(1+rng.IntN(5000)) / 100, Capacity: 1 + rng.Int64N(20)}
		case 5:
			p = model.Policy{Algorithm: model.Nginx, Rate: float64(1 + rng.IntN(50)), Burst: rng.Int64N(10), Delay: rng.Int64N(12)}
		}
		a, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := model.NewDeciderAt(p, base.Add(time.Duration(rng.Int64N(int64(24*time.Hour)))).Truncate(time.Second).UnixNano())
		if err != nil {
			t.Fatal(err)
		}
		for i, tNs := range randomTrace(rng, 250, 1e9, 1) {
			if x, y := a.Allow(tNs), b.Allow(tNs); x != y {
				t.Fatalf("%v: request %d at %d ns: %v from 0, %v from a Unix origin", p, i, tNs, x, y)
			}
		}
	}
}
