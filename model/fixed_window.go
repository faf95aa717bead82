package model

import (
	"fmt"
	"math"
	"strconv"
)

// fixedWindowAlgorithm is fixed_window, the lesson's fixed window: a
// counter per window [phase_s + k·window_s, phase_s + (k+1)·window_s),
// reset at each boundary (the lesson's definition).
var fixedWindowAlgorithm = Descriptor{
	Name: "fixed_window", Title: "fixed window", Family: WindowFamily, Lesson: true, ColorSlot: 0,
	Example:  "fixed_window window_s=60 limit=600",
	Params:   []string{"window_s", "limit"},
	Optional: []string{"phase_s"},
	Cost:     100,
	Validate: func(p Policy) error {
		if err := validateWindow(p); err != nil {
			return err
		}
		if p.PhaseS < 0 || p.PhaseS >= p.WindowS {
			return fieldErr("phase_s", "must be in [0, window_s) = [0, %d) seconds, got %d", p.WindowS, p.PhaseS)
		}
		return nil
	},
	Label: func(p Policy) string {
		if p.PhaseS != 0 {
			return fmt.Sprintf("fixed window %d s, phase %d s", p.WindowS, p.PhaseS)
		}
		return fmt.Sprintf("fixed window %d s", p.WindowS)
	},
	Why:   windowWhy,
	Bound: func(p Policy, a []float64) string { return windowBound(p, a, true) },
	blank: func() decider { return &fixedWindowLimiter{} },
	kernel: func(p Policy, a, adm []int32) int64 {
		return fixedWindow(a, adm, p.Limit, p.WindowS, p.PhaseS)
	},
	count: func(p Policy, originNs int64) func(ts []int64, c []int32, cap int64) {
		var d fixedWindowLimiter
		d.configure(p)
		atOrigin(&d, originNs)
		return func(ts []int64, c []int32, cap int64) {
			d.Reset()
			for j, t := range ts {
				d.advance(t)
				c[j] = int32(min(d.count, cap))
				d.count++
			}
		}
	},
}

var _ decider = (*fixedWindowLimiter)(nil)

// validateWindow checks the parameters of the window algorithms.
func validateWindow(p Policy) error {
	if p.WindowS <= 0 || p.WindowS > maxWindowS {
		return fieldErr("window_s", "must be > 0 and <= %d seconds, got %d", maxWindowS, p.WindowS)
	}
	if p.Limit < 0 {
		return fieldErr("limit", "must be >= 0 requests, got %d", p.Limit)
	}
	return nil
}

// windowWhy is Why of the windows that count admitted requests per window.
func windowWhy(p Policy) string {
	return fmt.Sprintf("cut beyond %d requests in one %d s window", p.Limit, p.WindowS)
}

// windowBound is Bound of the window algorithms: a client's most requests
// in one window (aligned windows, phase_s + k·window_s, where aligned; else
// any window_s consecutive seconds) against the limit.
func windowBound(p Policy, a []float64, aligned bool) string {
	w := p.WindowS
	var peak, sum float64
	if aligned {
		for t := 0; t < len(a); {
			end := t + w - ((t-p.PhaseS)%w+w)%w
			sum = 0
			for ; t < end && t < len(a); t++ {
				sum += a[t]
			}
			peak = max(peak, sum)
		}
	} else {
		for t := range a {
			sum += a[t]
			if t >= w {
				sum -= a[t-w]
			}
			peak = max(peak, sum)
		}
	}
	return fmt.Sprintf("up to %s requests in %d s against %d", formatNum(math.Round(peak)), w, p.Limit)
}

// formatNum writes v in the shortest decimal form that reads back exactly.
func formatNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// fixedWindowLimiter is fixed_window on event times: windows
// [phase + k·window, phase + (k+1)·window); a request is admitted while fewer
// than limit were admitted in its window.
type fixedWindowLimiter struct {
	limit, windowNs, phaseNs int64
	fresh                    bool
	window                   int64 // index k of the current window
	count                    int64 // admitted in it
}

func (d *fixedWindowLimiter) configure(p Policy) {
	d.limit, d.windowNs, d.phaseNs = p.Limit, int64(p.WindowS)*secondNs, int64(p.PhaseS)*secondNs
	d.Reset()
}

func (d *fixedWindowLimiter) Reset()             { d.fresh, d.count = true, 0 }
func (d *fixedWindowLimiter) Allow(t int64) bool { return d.AllowN(t, 1) == 1 }

// countAdmitted offers the requests at times (ns, sorted) one by one and
// returns how many are admitted: admitEvents's loop with direct calls.
func (d *fixedWindowLimiter) countAdmitted(times []int64) (n int64) {
	for _, t := range times {
		if d.Allow(t) {
			n++
		}
	}
	return n
}

// countByLabel is AdmitByLabel's loop with direct calls.
func (d *fixedWindowLimiter) countByLabel(ts []int64, labels []Stage, admitted *[4]int64) {
	for j, t := range ts {
		if d.Allow(t) {
			admitted[labels[j]&3]++
		}
	}
}

func (d *fixedWindowLimiter) AllowN(t, n int64) int64 {
	d.advance(t)
	k := admitted(d.limit, d.count, n)
	d.count += k
	return k
}

// advance starts t's window when t is past the current one.
func (d *fixedWindowLimiter) advance(t int64) {
	if w := floorDiv(t-d.phaseNs, d.windowNs); d.fresh || w != d.window {
		d.fresh, d.window, d.count = false, w, 0
	}
}

// atOrigin puts the windows on the clock of times counted from originNs:
// boundaries at phase_s + k·window_s of that clock (NewDeciderAt).
func (d *fixedWindowLimiter) atOrigin(originNs int64) {
	d.phaseNs = floorMod(d.phaseNs-originNs, d.windowNs)
}

func (d *fixedWindowLimiter) peek(t int64) bool {
	c := *d
	return c.Allow(t)
}

func (d *fixedWindowLimiter) charge(t int64) {
	d.advance(t)
	d.count++
}

func (d *fixedWindowLimiter) cloneInto(dst decider) decider { return copyInto(dst, d) }

// stateSize: the window index and count.
func (d *fixedWindowLimiter) stateSize(t int64) (bool, int64) {
	return !d.fresh && d.count > 0 && floorDiv(t-d.phaseNs, d.windowNs) == d.window, 2 * wordBytes
}

// fixedWindow admits min(a, limit - counter) in each second; the counter resets
// whenever (t - phase) % window == 0 (0 <= phase < window). adm receives the
// admitted count per second.
func fixedWindow(a, adm []int32, limit int64, window, phase int) int64 {
	var total, counter int64
	for t, x := range a {
		if (t+window-phase)%window == 0 {
			counter = 0
		}
		n := min(int64(x), max(0, limit-counter))
		counter += n
		total += n
		adm[t] = int32(n)
	}
	return total
}
