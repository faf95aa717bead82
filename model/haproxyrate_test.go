package model

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// hrStep is n requests at tMs (Unix ms, origin 0) and how many are admitted.
type hrStep struct {
	tMs, n, want int64
}

func hrOne(tMs int64, ok bool) hrStep {
	if ok {
		return hrStep{tMs, 1, 1}
	}
	return hrStep{tMs, 1, 0}
}

func runHAProxySteps(t *testing.T, c HAProxyRateConfig, steps []hrStep) {
	t.Helper()
	d, err := NewHAProxyRateDecider(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		var got int64
		if s.n == 1 {
			if d.Allow(s.tMs * 1e6) {
				got = 1
			}
		} else {
			got = d.AllowN(s.tMs*1e6, s.n)
		}
		if got != s.want {
			t.Errorf("%s: step %d (%d requests at %d ms): admitted %d, want %d", c, i, s.n, s.tMs, got, s.want)
		}
	}
}

// Step tables worked out by hand from freq_ctr.c and freq_ctr.h (HAProxy 2.6).
func TestHAProxyRateSteps(t *testing.T) {
	all := func(periodS float64, limit int64) HAProxyRateConfig {
		return HAProxyRateConfig{PeriodS: periodS, Limit: limit, Counts: HAProxyCountsAll}
	}
	adm := func(periodS float64, limit int64) HAProxyRateConfig {
		return HAProxyRateConfig{PeriodS: periodS, Limit: limit, Counts: HAProxyCountsAdmitted}
	}
	cases := []struct {
		name  string
		c     HAProxyRateConfig
		steps []hrStep
	}{
		{"counts all: denied requests count, so a client that keeps trying stays locked out",
			all(1, 2),
			// 0,1: rate 1, 2. 2: rate 3. 999: curr 4. 1000: rotate, prev 4,
			// curr 1, remain 1000: 4+1. 1500: ⌊4·500/1000⌋+2. 1999: ⌊4·1/1000⌋+3.
			// 2000: prev 3, curr 1: 3+1.
			[]hrStep{hrOne(0, true), hrOne(1, true), hrOne(2, false), hrOne(999, false), hrOne(1000, false),
				hrOne(1500, false), hrOne(1999, false), hrOne(2000, false),
				// 2999: ⌊3·1/1000⌋+2 = 2. Two idle periods reset the counter:
				// 6000 is 4000 ms after the tick 2000, prev 0, tick 6000.
				hrOne(2999, true), hrOne(6000, true), hrOne(6000, true), hrOne(6000, false)}},
		{"counts all: one idle period keeps the previous count, weighted",
			all(10, 4),
			// 0..3 admitted (rate 1..4); 10000: prev 4, curr 1, remain 10000 → 5.
			// 15000: prev 4 weighted 5000/10000 → 2, curr 1 → 3 (the request
			// at 10000 counted though denied). 15001..: 2+2 = 4, then 5.
			[]hrStep{{0, 4, 4}, hrOne(10000, false), hrOne(15000, true), hrOne(15001, true), hrOne(15002, false),
				// 19999: ⌊4·1/10000⌋ = 0, curr 5 → 5. 20000: prev 5, curr 1 → 6.
				hrOne(19999, false), hrOne(20000, false)}},
		{"counts all: the period starts at the key's first request, not on the epoch",
			all(1, 2),
			// First request at 700 ms: tick 700. At 1699 still the first period
			// (curr 3 → 3 > 2); at 1700 a new one: prev 3, curr 1, remain 1000 → 4.
			// 2200: ⌊3·500/1000⌋ + 2 = 3. 2650: ⌊3·50/1000⌋ + 3 = 3. 2700: a new
			// period, prev 3, curr 1 → 4. Two idle periods after the tick 2700,
			// 4700 starts afresh: tick 4700, rate 1.
			[]hrStep{hrOne(700, true), hrOne(1200, true), hrOne(1699, false), hrOne(1700, false),
				hrOne(2200, false), hrOne(2650, false), hrOne(2700, false), hrOne(4700, true)}},
		{"counts admitted: gpc0_rate read before, incremented only on allow",
			adm(1, 2),
			// 1000: remain 0 (not yet past the period): ⌊(0 + 2·1000)/1000⌋ = 2,
			// denied. 1500: read as rotated, remain 500, prev 2, curr 0 (no
			// flapping correction with prev 2): ⌊2·500/1000⌋ = 1, admitted, and
			// the update rotates: prev 2, curr 1, tick 1000. 1501: ⌊2·499/1000⌋
			// + 1 = 1, admitted; 1502: ⌊2·498/1000⌋ + 2 = 2, denied.
			[]hrStep{hrOne(0, true), hrOne(1, true), hrOne(2, false), hrOne(999, false),
				hrOne(1000, false), hrOne(1500, true), hrOne(1501, true), hrOne(1502, false)}},
		{"counts admitted, limit 1: the flapping correction holds the rate at 1 for a whole extra period",
			adm(1, 1),
			// 700: admitted, tick 700. 1700: remain 0, curr 1 → 1. 2700: remain
			// −1000+1000 = 0 → prev 1, curr 0 → flapping: 1. 2701: remain −1 →
			// prev 0 → 0, admitted.
			[]hrStep{hrOne(700, true), hrOne(1699, false), hrOne(1700, false), hrOne(2200, false), hrOne(2700, false),
				hrOne(2701, true), hrOne(2702, false)}},
		{"the tick is rounded down to an even ms (its low bit is HAProxy's lock)",
			adm(1, 1),
			// 701: tick 700, not 701; so 2701 is past two periods (as 2701 above).
			[]hrStep{hrOne(701, true), hrOne(2700, false), hrOne(2701, true)}},
		{"limit 0 denies everything",
			all(1, 0),
			[]hrStep{hrOne(0, false), {5000, 3, 0}}},
		{"limit 0 denies everything (admitted)",
			adm(1, 0),
			[]hrStep{hrOne(0, false), {5000, 3, 0}}},
		{"batches: AllowN counts as n requests in a row",
			all(2, 5),
			// 3 then 4 at 0: rate 1..7 → 5 admitted. 1000: ⌊0⌋ + 8.. → none.
			// 2000: prev 9, curr 1..: 9+1 → none. 6000 (two idle periods): 5 of 8.
			[]hrStep{{0, 3, 3}, {0, 4, 2}, {1000, 2, 0}, {2000, 1, 0}, {6000, 8, 5}, {6000, 0, 0}, {6000, -1, 0}}},
		{"batches: admitted only",
			adm(2, 5),
			[]hrStep{{0, 3, 3}, {0, 4, 2}, {1000, 2, 0},
				// 2000: remain 0, curr 5 → 5. 2400: read as rotated, ⌊5·1600/2000⌋
				// = 4 → one admitted (prev 5, curr 1, tick 2000), then 4+1.
				// 2401: ⌊5·1599/2000⌋ + 1 = 4 → admitted; 2402: 3 + 2 = 5.
				{2000, 1, 0}, {2400, 3, 1}, {2401, 1, 1}, {2402, 1, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runHAProxySteps(t, c.c, c.steps) })
	}
}

func TestHAProxyRateValidate(t *testing.T) {
	for _, c := range []struct {
		c     HAProxyRateConfig
		field string
	}{
		{HAProxyRateConfig{PeriodS: 10, Limit: 100}, ""},
		{HAProxyRateConfig{PeriodS: 0.001, Limit: 0, Counts: HAProxyCountsAdmitted}, ""},
		{HAProxyRateConfig{PeriodS: 0, Limit: 1}, "period_s"},
		{HAProxyRateConfig{PeriodS: 1.0005, Limit: 1}, "period_s"},
		{HAProxyRateConfig{PeriodS: 2e6, Limit: 1}, "period_s"},
		{HAProxyRateConfig{PeriodS: 1, Limit: -1}, "limit"},
		{HAProxyRateConfig{PeriodS: 1, Limit: 1 << 32}, "limit"},
		{HAProxyRateConfig{PeriodS: 1, Limit: 1, Counts: 7}, "counts"},
	} {
		err := c.c.Validate()
		if c.field == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.c, err)
			}
			continue
		}
		if fe, ok := err.(*FieldError); !ok || fe.Path != c.field {
			t.Errorf("%+v: got %v, want an error on %s", c.c, err, c.field)
		}
	}
	for s, want := range map[string]HAProxyCounts{"all": HAProxyCountsAll, "admitted": HAProxyCountsAdmitted} {
		if got, err := ParseHAProxyCounts(s); err != nil || got != want || got.String() != s {
			t.Errorf("ParseHAProxyCounts(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseHAProxyCounts("denied"); err == nil {
		t.Error("ParseHAProxyCounts(denied): no error")
	}
}

// The C functions of HAProxy 2.6, transliterated line by line (single
// thread: the atomics are plain loads and stores, the CAS succeeds), on
// 32-bit unsigned ticks and counters as in C.

// cFreqCtr is struct freq_ctr (include/haproxy/freq_ctr-t.h).
type cFreqCtr struct {
	currTick uint32 // cumulated value
	currCtr  uint32 // cumulated value
	prevCtr  uint32 // value for last period
}

// cUpdateFreqCtrPeriod is update_freq_ctr_period (include/haproxy/freq_ctr.h).
func cUpdateFreqCtrPeriod(ctr *cFreqCtr, globalNowMs, period, inc uint32) uint32 {
	var currTick, nowMsTmp uint32
	for {
		currTick = ctr.currTick
		nowMsTmp = globalNowMs
		if nowMsTmp-currTick < period {
			ctr.currCtr += inc
			return ctr.currCtr
		}
		// a rotation is needed
		if currTick&0x1 == 0 && ctr.currTick == currTick {
			ctr.currTick = currTick | 0x1
			break
		}
	}
	old := ctr.currCtr // HA_ATOMIC_XCHG(&ctr->curr_ctr, inc)
	ctr.currCtr = inc
	ctr.prevCtr = old
	currTick += period
	if nowMsTmp-currTick >= period {
		// we missed at least two periods
		ctr.prevCtr = 0
		currTick = nowMsTmp
	}
	ctr.currTick = currTick &^ 1
	return inc
}

// cFreqCtrTotal is freq_ctr_total (src/freq_ctr.c).
func cFreqCtrTotal(ctr *cFreqCtr, globalNowMs, period uint32, pend int32) uint64 {
	tick := ctr.currTick
	curr := uint64(ctr.currCtr)
	past := uint64(ctr.prevCtr)
	remain := int32(tick + period - globalNowMs)
	if remain < 0 {
		// We're past the first period, check if we can still report a
		// part of last period or if we're too far away.
		remain = int32(uint32(remain) + period)
		if remain >= 0 {
			past = curr
		} else {
			past = 0
		}
		curr = 0
	}
	if pend < 0 {
		// enable flapping correction at very low rates
		pend = 0
		if curr == 0 && past <= 1 {
			return past * uint64(period)
		}
	}
	// compute the total number of confirmed events over the period
	return past*uint64(int64(remain)) + (curr+uint64(pend))*uint64(period)
}

// cReadFreqCtrPeriod is read_freq_ctr_period (include/haproxy/freq_ctr.h).
func cReadFreqCtrPeriod(ctr *cFreqCtr, globalNowMs, period uint32) uint32 {
	total := cFreqCtrTotal(ctr, globalNowMs, period, -1)
	return uint32(total / uint64(period)) // div64_32
}

// cHAProxy is one key's stick-table entry (zeroed on creation,
// stksess_new) under the frontend rules of ratesweep's export:
//
//	counts all:      http-request track-sc0 …   (http_req_rate +1)
//	                 http-request deny if { sc0_http_req_rate gt LIMIT }
//	counts admitted: http-request track-sc0 …
//	                 http-request deny if { sc0_gpc0_rate ge LIMIT }
//	                 http-request sc-inc-gpc0(0)
type cHAProxy struct {
	period uint32
	limit  int64
	all    bool
	ctr    cFreqCtr
}

func (h *cHAProxy) request(unixMs int64) bool {
	now := uint32(unixMs) // now_ms: the ms clock, wrapping at 32 bits
	if h.all {
		cUpdateFreqCtrPeriod(&h.ctr, now, h.period, 1)
		return int64(cReadFreqCtrPeriod(&h.ctr, now, h.period)) <= h.limit
	}
	if int64(cReadFreqCtrPeriod(&h.ctr, now, h.period)) >= h.limit {
		return false
	}
	cUpdateFreqCtrPeriod(&h.ctr, now, h.period, 1)
	return true
}

// hrTrace is random request times (ns after origin) for a period of p ms,
// hostile to the counter: same-ms batches, bursts a few ms apart, gaps
// next to whole periods (±2 ms), idle stretches of 2 or more periods.
func hrTrace(rng *rand.Rand, p int64, n int) (ts []int64, batch []int64) {
	var t int64
	for range n {
		var gapMs int64
		switch rng.IntN(8) {
		case 0:
			gapMs = 0
		case 1, 2:
			gapMs = rng.Int64N(9)
		case 3:
			gapMs = p + rng.Int64N(5) - 2
		case 4:
			gapMs = (2+rng.Int64N(3))*p + rng.Int64N(5) - 2
		case 5:
			gapMs = rng.Int64N(2*p + 1)
		case 6:
			gapMs = p / max(1, rng.Int64N(6)+1)
		default:
			gapMs = rng.Int64N(p/4 + 2)
		}
		t += max(0, gapMs)*1e6 + rng.Int64N(1e6) // any ns within the ms
		if len(ts) > 0 && t < ts[len(ts)-1] {
			t = ts[len(ts)-1]
		}
		k := int64(1)
		if rng.IntN(6) == 0 {
			k = 1 + rng.Int64N(6)
		}
		ts, batch = append(ts, t), append(batch, k)
	}
	return ts, batch
}

// The decider against the literal C, decision by decision, on random
// traces: periods even and odd (down to 1 ms), limits 0–12, both counts,
// origins anywhere on the 32-bit ms clock, some traces crossing its wrap,
// batches through AllowN and one by one.
func TestHAProxyRateMatchesC(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	periods := []int64{1, 2, 3, 7, 10, 99, 100, 999, 1000, 1001, 4000, 10000, 60000}
	var decisions, admittedTotal int
	for trial := range 3000 {
		p := periods[rng.IntN(len(periods))]
		c := HAProxyRateConfig{PeriodS: float64(p) / 1000, Limit: rng.Int64N(13), Counts: HAProxyCounts(rng.IntN(2))}
		ts, batch := hrTrace(rng, p, 20+rng.IntN(200))
		// The origin: a Unix time in ns, or one whose 32-bit ms clock wraps
		// within the trace. The key's first request must not be in the
		// 2·period ms after a wrap (the decider's documented corner).
		var origin int64
		for {
			if rng.IntN(4) == 0 {
				wrapMs := (1<<32)*(300+rng.Int64N(100)) - rng.Int64N(max(1, ts[len(ts)-1]/1e6+1))
				origin = wrapMs*1e6 - rng.Int64N(1e6)
			} else {
				origin = 1_600_000_000_000_000_000 + rng.Int64N(400_000_000_000_000_000)
			}
			if first := floorDiv(origin+ts[0], 1e6) & (1<<32 - 1); first >= 2*p {
				break
			}
		}
		d, err := NewHAProxyRateDecider(c, origin)
		if err != nil {
			t.Fatal(err)
		}
		h := &cHAProxy{period: uint32(p), limit: c.Limit, all: c.Counts == HAProxyCountsAll}
		useN := rng.IntN(2) == 0
		for i, at := range ts {
			var want int64
			for range batch[i] {
				if h.request(floorDiv(origin+at, 1e6)) {
					want++
				}
			}
			var got int64
			if useN {
				got = d.AllowN(at, batch[i])
			} else {
				for range batch[i] {
					if d.Allow(at) {
						got++
					}
				}
			}
			decisions += int(batch[i])
			admittedTotal += int(want)
			if got != want {
				t.Fatalf("trial %d %s origin %d: request %d (%d at %d ns, ms %d): admitted %d, C admits %d (AllowN %v)\ntrace %v\nbatches %v",
					trial, c, origin, i, batch[i], at, floorDiv(origin+at, 1e6), got, want, useN, ts[:i+1], batch[:i+1])
			}
		}
	}
	t.Logf("%d decisions agree, %d admitted", decisions, admittedTotal)
	if admittedTotal == 0 || admittedTotal == decisions {
		t.Fatal("the traces do not exercise the limit")
	}
}

// peek, charge and stateSize (the operations shared state and key
// accounting need) on random traces: peek is Allow without the change;
// charge is the C update; a counter stateSize calls dead decides the rest
// of the trace as a new key does.
func TestHAProxyRateStateOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	periods := []int64{1, 3, 10, 1000, 1001, 4000}
	for trial := range 1500 {
		p := periods[rng.IntN(len(periods))]
		c := HAProxyRateConfig{PeriodS: float64(p) / 1000, Limit: rng.Int64N(6), Counts: HAProxyCounts(rng.IntN(2))}
		ts, _ := hrTrace(rng, p, 60)
		origin := 1_700_000_000_000_000_000 + rng.Int64N(1e15)
		dd, _ := NewHAProxyRateDecider(c, origin)
		d := dd.(*haproxyRateLimiter)
		h := &cHAProxy{period: uint32(p), limit: c.Limit, all: c.Counts == HAProxyCountsAll}
		for i, at := range ts {
			now := floorDiv(origin+at, 1e6)
			if live, _ := d.stateSize(at); !live {
				a, b := *d, haproxyRateLimiter{}
				b.set(c, origin)
				for j, u := range ts[i:] {
					if x, y := a.Allow(u), b.Allow(u); x != y {
						t.Fatalf("trial %d %s: dead at request %d, yet request %d decides %v, a new key %v", trial, c, i, i+j, x, y)
					}
				}
			}
			if rng.IntN(4) == 0 {
				d.charge(at)
				cUpdateFreqCtrPeriod(&h.ctr, uint32(now), uint32(p), 1)
				continue
			}
			want := d.peek(at)
			if got := d.Allow(at); got != want {
				t.Fatalf("trial %d %s: request %d: peek %v, Allow %v", trial, c, i, want, got)
			}
			if cw := h.request(now); cw != want {
				t.Fatalf("trial %d %s: request %d after charges: admitted %v, C %v", trial, c, i, want, cw)
			}
		}
	}
}

// A new key's zeroed counter (tick 0) in the literal C: its first event
// starts a period at that event, as the decider assumes, unless the 32-bit
// clock is within 2 periods after its wrap.
func TestHAProxyRateZeroedEntry(t *testing.T) {
	for _, now := range []uint32{2000, 2001, 123456789, 1<<32 - 2} {
		var ctr cFreqCtr
		cUpdateFreqCtrPeriod(&ctr, now, 1000, 1)
		if ctr.currTick != now&^1 || ctr.prevCtr != 0 || ctr.currCtr != 1 {
			t.Errorf("first event at %d: %+v, want tick %d", now, ctr, now&^1)
		}
	}
	var ctr cFreqCtr
	cUpdateFreqCtrPeriod(&ctr, 1500, 1000, 1)
	if ctr.currTick != 1000 {
		t.Errorf("first event at 1500 ms after the wrap: tick %d, want 1000 (the documented corner)", ctr.currTick)
	}
}

func ExampleNewHAProxyRateDecider() {
	// HAProxy's usual recipe: http_req_rate(10s), deny when over 3.
	d, _ := NewHAProxyRateDecider(HAProxyRateConfig{PeriodS: 10, Limit: 3, Counts: HAProxyCountsAll}, 0)
	for _, s := range []int64{0, 1, 2, 3, 9, 12, 25, 35} {
		fmt.Print(d.Allow(s*secondNs), " ")
	}
	fmt.Println()
	// 0, 1, 2: rates 1, 2, 3. 3, 9: 4, 5, denied but counted. 12: a new
	// period (tick 10 s), prev 5 weighted 8/10 → 4, + 1. 25: past the period
	// once (tick 20 s): prev 1 weighted 5/10 → 0, + 1. 35: the same again.
	// Output: true true true false false false true true
}

func BenchmarkHAProxyRateAllow(b *testing.B) {
	for _, counts := range []HAProxyCounts{HAProxyCountsAll, HAProxyCountsAdmitted} {
		b.Run(counts.String(), func(b *testing.B) {
			d, _ := NewHAProxyRateDecider(HAProxyRateConfig{PeriodS: 10, Limit: 100, Counts: counts}, 0)
			t := int64(0)
			for b.Loop() {
				t += 37 * 1e6 // 27 requests/s against 10/s: rotations, denials and admissions
				d.Allow(t)
			}
		})
	}
}
