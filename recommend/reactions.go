package recommend

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ratesweep/ratesweep/model"
)

// Constraints on runs whose clients react to rejections (docs/retries.md):
// how many times its intended requests the legitimate traffic sends, and
// the 99th percentile of the latency retries add to legitimate requests
// that were eventually served.

// reactionColumns are the points columns the reaction constraints read.
var reactionColumns = []string{"amplification_legit", "legit_added_delay_p99_s"}

// reacts reports whether o has a constraint on reactions.
func (o *Options) reacts() bool { return o.MaxAmplification != nil || o.MaxLegitDelayP99S != nil }

// reactAcc gathers one point's reaction measures over its replicates.
type reactAcc struct{ amp, p99 []float64 }

func (a *reactAcc) add(r *model.Metrics) {
	a.amp = append(a.amp, r.Reactions.AmplificationLegit)
	a.p99 = append(a.p99, r.Reactions.LegitDelayP99S)
}

func (a *reactAcc) reset() { a.amp, a.p99 = a.amp[:0], a.p99[:0] }

// fill sets m's reaction measures when the run measured them.
func (a *reactAcc) fill(m *Measure) {
	if len(a.amp) == 0 {
		return
	}
	amp, p99 := interval(a.amp), interval(a.p99)
	m.AmplificationLegit, m.LegitDelayP99S = &amp, &p99
}

// reactionChecks appends the checks of the reaction constraints on m.
func (o *Options) reactionChecks(out []Check, m *Measure, named bool) []Check {
	add := func(name, unit string, bound *float64, v *Interval) {
		if bound == nil {
			return
		}
		if v == nil { // a run without reactions: nothing amplifies or waits
			v = &Interval{Mean: map[bool]float64{true: 1, false: 0}[unit == "x"], N: 1}
			v.Lo, v.Hi = v.Mean, v.Mean
		}
		c := Check{Value: v.Mean, Unit: unit, Bound: *bound, Margin: *bound - v.Mean}
		c.Crosses = c.Margin >= 0 && v.Hi > *bound
		if named {
			c.Constraint = fmt.Sprintf("%s <= %s%s", name, strconv.FormatFloat(*bound, 'f', -1, 64), map[string]string{"x": "×", "s": " s"}[unit])
		}
		out = append(out, c)
	}
	add("legitimate amplification", "x", o.MaxAmplification, m.AmplificationLegit)
	add("added latency p99 of legitimate requests", "s", o.MaxLegitDelayP99S, m.LegitDelayP99S)
	return out
}

// checkReactionBounds validates the reaction bounds.
func (o *Options) checkReactionBounds() error {
	if b := o.MaxAmplification; b != nil && !(*b >= 1 && !math.IsInf(*b, 0)) {
		return fmt.Errorf("the amplification bound must be a number >= 1 (attempts per intended request), not %v", *b)
	}
	if b := o.MaxLegitDelayP99S; b != nil && !(*b >= 0 && !math.IsInf(*b, 0)) {
		return fmt.Errorf("the added-latency bound must be a number of seconds >= 0, not %v", *b)
	}
	return nil
}
