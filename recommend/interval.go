package recommend

// Confidence intervals of a measure over replicates (Student's t).

import (
	"math"
)

// Interval is a mean over replicates (or runs) with its 95% confidence
// interval (Student's t). Fewer than minIntervalN values give no interval:
// Lo and Hi equal the mean.
type Interval struct {
	Mean float64 `json:"mean"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	N    int     `json:"n"`
}

// minIntervalN is the fewest values an interval is computed from: with two,
// Student's t at one degree of freedom (12.7) makes it wider than any
// metric's range.
const minIntervalN = 3

// HasInterval reports whether v carries a confidence interval.
func (v Interval) HasInterval() bool { return v.N >= minIntervalN }

// interval is the mean of counts (>= 0) with its interval, clamped at 0.
func interval(v []float64) Interval { return intervalIn(v, 0, math.Inf(1)) }

// pctInterval is the mean of percentages with its interval, clamped to
// [0, 100].
func pctInterval(v []float64) Interval { return intervalIn(v, 0, 100) }

// intervalIn is the mean of v with its 95% interval clamped to [lo, hi],
// the range the metric can take.
func intervalIn(v []float64, lo, hi float64) Interval {
	n := len(v)
	if n == 0 {
		return Interval{}
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	m := sum / float64(n)
	if n < minIntervalN {
		return Interval{m, m, m, n}
	}
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	h := tQuantile(n-1) * math.Sqrt(ss/float64(n-1)/float64(n))
	return Interval{m, max(lo, m-h), min(hi, m+h), n}
}

// tQuantile is the 0.975 quantile of Student's t with df degrees of freedom.
func tQuantile(df int) float64 {
	t := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df < len(t) {
		return t[df]
	}
	return 1.96 + 2.4/float64(df) // within 0.002 above 30
}
