package model

import (
	"fmt"
	"math"
)

// HAProxyCounts says which requests an HAProxy stick-table rate counts.
type HAProxyCounts uint8

const (
	// HAProxyCountsAll counts every request, denied ones too: the table
	// stores http_req_rate(<period>), which "http-request track-sc0"
	// increments before "deny if { sc0_http_req_rate gt <limit> }" reads it.
	HAProxyCountsAll HAProxyCounts = iota
	// HAProxyCountsAdmitted counts admitted requests only: the table stores
	// gpc0_rate(<period>), read by "deny if { sc0_gpc0_rate ge <limit> }"
	// and incremented by "sc-inc-gpc0(0)" after it, so only when the request
	// was not denied.
	HAProxyCountsAdmitted
)

// String is the value's name in specs and labels: "all" or "admitted".
func (c HAProxyCounts) String() string {
	if c == HAProxyCountsAdmitted {
		return "admitted"
	}
	return "all"
}

// ParseHAProxyCounts parses "all" or "admitted".
func ParseHAProxyCounts(s string) (HAProxyCounts, error) {
	switch s {
	case "all":
		return HAProxyCountsAll, nil
	case "admitted":
		return HAProxyCountsAdmitted, nil
	}
	return 0, fieldErr("counts", "must be all or admitted, got %q", s)
}

// maxHAProxyPeriodMs bounds haproxy_rate's period: HAProxy reads
// tick + period − now as a signed 32-bit int (freq_ctr_total).
const maxHAProxyPeriodMs = 1 << 30

// maxHAProxyLimit bounds haproxy_rate's limit: HAProxy's counters are
// unsigned 32-bit.
const maxHAProxyLimit = 1<<32 - 1

// HAProxyRateConfig is the configuration of haproxy_rate, an HAProxy stick table
// that counts a key's requests in a frequency counter of period PeriodS and
// denies a request once the counter's rate is over Limit.
type HAProxyRateConfig struct {
	// PeriodS is the counter's period, s: the table's
	// http_req_rate(<period>) or gpc0_rate(<period>). HAProxy counts whole
	// milliseconds, so PeriodS·1000 must be a whole number.
	PeriodS float64
	// Limit is the largest rate admitted, requests per period.
	Limit int64
	// Counts says which requests the counter counts.
	Counts HAProxyCounts
}

// PeriodMs is the period in HAProxy's ticks (ms), rounded to the nearest.
func (c HAProxyRateConfig) PeriodMs() int64 { return int64(math.Round(c.PeriodS * 1000)) }

// Validate reports a parameter out of range as a *FieldError naming it.
func (c HAProxyRateConfig) Validate() error {
	ms := c.PeriodS * 1000
	if !(ms >= 1) || ms > maxHAProxyPeriodMs || math.Abs(ms-math.Round(ms)) > 1e-6 {
		return fieldErr("period_s", "must be a whole number of milliseconds >= 0.001 and <= %d seconds, got %v", maxHAProxyPeriodMs/1000, c.PeriodS)
	}
	if c.Limit < 0 || c.Limit > maxHAProxyLimit {
		return fieldErr("limit", "must be >= 0 and <= %d requests, got %d", int64(maxHAProxyLimit), c.Limit)
	}
	if c.Counts > HAProxyCountsAdmitted {
		return fieldErr("counts", "must be all or admitted, got %d", c.Counts)
	}
	return nil
}

// NewHAProxyRateDecider returns a Decider for c in the state of a new key;
// its event times are ns since originNs, a Unix time in ns, which places
// HAProxy's millisecond ticks (now_ms is the wall clock in whole ms).
func NewHAProxyRateDecider(c HAProxyRateConfig, originNs int64) (Decider, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	d := &haproxyRateLimiter{}
	d.set(c, originNs)
	return d, nil
}

// haproxyRateAlgorithm is haproxy_rate, HAProxy's stick-table rate
// counters (http_req_rate, gpc0_rate), exactly (docs/haproxy-rate.md).
var haproxyRateAlgorithm = Descriptor{
	Name: "haproxy_rate", Title: "HAProxy rate", Family: WindowFamily, ColorSlot: 9,
	Example: "haproxy_rate period_s=10 limit=100 counts=all",
	Params:  []string{"period_s", "limit", "counts"},
	Cost:    150,
	Validate: func(p Policy) error {
		// A request the counter denies is still counted (counts all), which
		// the lagged and two-key simulations' charges do not model.
		switch {
		case p.Key == KeyBoth:
			return fieldErr("key", "haproxy_rate cannot decide on two keys at once")
		case p.SyncMs != 0:
			return fieldErr("sync_ms", "haproxy_rate cannot run on lagged shared state (HAProxy's tables are per process)")
		}
		return p.haproxyRate().Validate()
	},
	Label: func(p Policy) string {
		return fmt.Sprintf("HAProxy rate %g s (%s)", p.PeriodS, p.Counts)
	},
	Why: func(p Policy) string {
		if p.Counts == HAProxyCountsAdmitted {
			return fmt.Sprintf("cut when the admitted requests of the key's last %g s period, the previous one weighted, reach %d", p.PeriodS, p.Limit)
		}
		return fmt.Sprintf("cut when the requests of the key's last %g s period, the previous one weighted and denied ones included, exceed %d", p.PeriodS, p.Limit)
	},
	blank: func() decider { return &haproxyRateLimiter{} },
}

// haproxyRate is the policy's haproxy_rate configuration.
func (p Policy) haproxyRate() HAProxyRateConfig {
	return HAProxyRateConfig{PeriodS: p.PeriodS, Limit: p.Limit, Counts: p.Counts}
}

var _ decider = (*haproxyRateLimiter)(nil)

func (d *haproxyRateLimiter) configure(p Policy) { d.set(p.haproxyRate(), 0) }

func (d *haproxyRateLimiter) cloneInto(dst decider) decider {
	return copyInto[haproxyRateLimiter](dst, d)
}

// haproxyRateLimiter is haproxy_rate: one key's HAProxy frequency counter
// (struct freq_ctr) as HAProxy 2.6 updates and reads it, in its integer
// arithmetic on millisecond ticks:
//
//   - update (update_freq_ctr_period, include/haproxy/freq_ctr.h): an event
//     at now ms within the current period (now − tick < period) adds 1 to
//     curr; otherwise the period rotates: prev = curr, curr = 1, tick +=
//     period, and if now is still a period or more past the new tick (two
//     periods or more since the last start) prev = 0 and tick = now. The
//     tick's lowest bit is HAProxy's rotation lock, so every stored tick is
//     rounded down to an even ms. A new key's counter is zeroed (tick 0, long
//     ago), so its first event starts a period at that event.
//   - read (read_freq_ctr_period, freq_ctr.h, over freq_ctr_total,
//     src/freq_ctr.c): remain = tick + period − now; if remain < 0 the
//     counter is read as rotated once (remain += period, prev = curr if
//     remain >= 0 else 0, curr = 0); if then curr = 0 and prev <= 1 the rate
//     is prev (the flapping correction); otherwise it is
//     ⌊(prev·remain + curr·period) / period⌋, the previous period weighted
//     by the share of it still inside the sliding period.
//
// With counts all a request is counted first ("http-request track-sc0"
// increments http_req_rate, src/http_act.c http_action_track_sc) and
// denied iff the rate read after is > limit (the ACL "gt"); with counts
// admitted it is denied iff the rate read before is >= limit ("ge"), and
// counted only when admitted ("sc-inc-gpc0", src/stick_table.c
// action_inc_gpc0).
//
// HAProxy's clock is 32 bits of ms; the decider's is not, which is the same
// as long as the table's expire (more than two periods) drops idle keys, and
// as long as a key's first request does not fall in the 2·period ms after
// the 32-bit clock wraps (once every 49.7 days), where HAProxy's zeroed
// counter is not yet "long ago".
type haproxyRateLimiter struct {
	periodMs, limit  int64
	admittedOnly     bool
	originNs         int64 // Unix time of event time 0, ns
	fresh            bool  // the counter is zeroed (a new key)
	tick, curr, prev int64 // curr_tick (ms, even), curr_ctr, prev_ctr
}

var _ Decider = (*haproxyRateLimiter)(nil)

// set configures a valid c and resets the state.
func (d *haproxyRateLimiter) set(c HAProxyRateConfig, originNs int64) {
	d.periodMs, d.limit = c.PeriodMs(), c.Limit
	d.admittedOnly, d.originNs = c.Counts == HAProxyCountsAdmitted, originNs
	d.Reset()
}

// Reset returns the counter to a new key's (zeroed) state.
func (d *haproxyRateLimiter) Reset() { d.fresh, d.tick, d.curr, d.prev = true, 0, 0, 0 }

// atOrigin makes event time 0 the Unix time originNs (NewDeciderAt's
// origin): it places the millisecond ticks.
func (d *haproxyRateLimiter) atOrigin(originNs int64) { d.originNs = originNs }

// nowMs is HAProxy's now_ms for event time t: the Unix time in whole ms.
func (d *haproxyRateLimiter) nowMs(t int64) int64 { return floorDiv(d.originNs+t, 1e6) }

// update counts one event at now ms (update_freq_ctr_period).
func (d *haproxyRateLimiter) update(now int64) {
	switch {
	case d.fresh:
		d.fresh, d.tick, d.prev, d.curr = false, now&^1, 0, 1
	case now-d.tick < d.periodMs:
		d.curr++
	default:
		tick := d.tick + d.periodMs
		d.prev, d.curr = d.curr, 1
		if now-tick >= d.periodMs {
			d.prev, tick = 0, now
		}
		d.tick = tick &^ 1
	}
}

// rate is the counter's rate at now ms (read_freq_ctr_period): events per
// period, truncated.
func (d *haproxyRateLimiter) rate(now int64) int64 {
	if d.fresh {
		return 0
	}
	remain := d.tick + d.periodMs - now
	prev, curr := d.prev, d.curr
	if remain < 0 {
		remain += d.periodMs
		prev, curr = 0, 0
		if remain >= 0 {
			prev = d.curr
		}
	}
	if curr == 0 && prev <= 1 {
		return prev
	}
	return (prev*remain + curr*d.periodMs) / d.periodMs
}

// Allow reports whether a request at t ns is admitted, counting it as
// HAProxy does.
func (d *haproxyRateLimiter) Allow(t int64) bool {
	now := d.nowMs(t)
	if d.admittedOnly {
		if d.rate(now) >= d.limit {
			return false
		}
		d.update(now)
		return true
	}
	d.update(now)
	return d.rate(now) <= d.limit
}

// countAdmitted offers the requests at times (ns, sorted) one by one and
// returns how many are admitted: admitEvents's loop with direct calls.
func (d *haproxyRateLimiter) countAdmitted(times []int64) (n int64) {
	for _, t := range times {
		if d.Allow(t) {
			n++
		}
	}
	return n
}

// countByLabel is AdmitByLabel's loop with direct calls.
func (d *haproxyRateLimiter) countByLabel(ts []int64, labels []Stage, admitted *[4]int64) {
	for j, t := range ts {
		if d.Allow(t) {
			admitted[labels[j]&3]++
		}
	}
}

// AllowN is n calls Allow(t). Once two requests at t have been decided and
// the counter's period holds t, each further request adds 1 to curr and to
// the rate, which is then ⌊prev·remain/period⌋ + curr (no flapping
// correction with curr >= 1): a request is admitted while that stays
// <= limit (counts all, read after counting) or < limit (counts admitted,
// read before), which is the same count of the remaining ones.
func (d *haproxyRateLimiter) AllowN(t, n int64) int64 {
	if n <= 0 {
		return 0
	}
	var k, i int64
	last := false
	for ; i < n && i < 2; i++ {
		if last = d.Allow(t); last {
			k++
		}
	}
	if i == n || (d.admittedOnly && !last) {
		return k // a denied request leaves gpc0_rate as it was, so the rest are denied too
	}
	now := d.nowMs(t)
	if now-d.tick >= d.periodMs {
		for ; i < n; i++ { // the odd-period corner: a tick rounded down can leave t on the period's end
			if d.Allow(t) {
				k++
			}
		}
		return k
	}
	base := d.prev * (d.tick + d.periodMs - now) / d.periodMs
	m := n - i
	j := min(m, max(0, d.limit-base-d.curr))
	if d.admittedOnly {
		d.curr += j
	} else {
		d.curr += m
	}
	return k + j
}

// peek reports whether a request at t would be admitted, leaving the state
// unchanged.
func (d *haproxyRateLimiter) peek(t int64) bool {
	c := *d
	return c.Allow(t)
}

// charge counts one request at t as an admitted one is counted, whether or
// not it would be admitted (what a shared store applies).
func (d *haproxyRateLimiter) charge(t int64) { d.update(d.nowMs(t)) }

// stateSize reports whether the counter at t holds state a new key would
// not have, and its size: three numbers. From two periods after the tick
// on, the next update starts afresh and a read finds 0, as for a new key;
// the one exception is a read at exactly tick + 2·period with curr = 1
// (the flapping correction then still reads 1), which only counts admitted
// can see.
func (d *haproxyRateLimiter) stateSize(t int64) (live bool, bytes int64) {
	if d.fresh {
		return false, 0
	}
	age := d.nowMs(t) - d.tick
	live = age < 2*d.periodMs || (d.admittedOnly && age == 2*d.periodMs && d.curr == 1)
	return live, 3 * wordBytes
}

// PeriodStartMs is the start of the counter's current period (HAProxy's
// curr_tick: ms since the Unix epoch, even) and the period in ms; ok is
// false for a new key. Requests at start + k·period (k = 0, 1, 2) are where
// the counter rotates or drops its previous period: a test comparing with
// a real HAProxy reports how far a disagreement is from them.
func (d *haproxyRateLimiter) PeriodStartMs() (start, periodMs int64, ok bool) {
	return d.tick, d.periodMs, !d.fresh
}

// String describes the configuration, e.g. "haproxy_rate period_s=10
// limit=100 counts=all".
func (c HAProxyRateConfig) String() string {
	return fmt.Sprintf("haproxy_rate period_s=%v limit=%d counts=%s", c.PeriodS, c.Limit, c.Counts)
}
