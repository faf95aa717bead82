package main

import (
	"github.com/ratesweep/ratesweep/model"
)

// counting is Cloudflare's measure: at each request, does the sliding
// window counter's estimate fall on the same side of the limit as the exact
// count of the last window? Both count every request (no feedback from
// decisions: the limiter's answer does not change what is counted), so a
// request's disagreement is an interval of limits, and one pass per key
// gives the whole curve.
//
//   - exact: requests before this one in (t - W, t] (a sliding log);
//   - counter: int64(prev·(W - (t - start))/W) + curr, with windows
//     [start, start + W) on the Unix epoch, prev the requests of the window
//     before, curr those of this window before this request (ratesweep's
//     sliding_counter estimate, RussellLuo's arithmetic).
//
// A request is admitted when the count is below the limit L. For L in
// (counter, exact] the counter wrongly allows it; for L in (exact, counter]
// it wrongly limits it.
type counting struct {
	maxL int
	// Per limit 0..maxL+1 (difference arrays until finish): requests the
	// counter wrongly allows, wrongly limits, and that the exact log rejects.
	allowed, limits, rejected []int64
	requests                  int64
}

func newCounting(maxL int) *counting {
	return &counting{maxL: maxL, allowed: make([]int64, maxL+2), limits: make([]int64, maxL+2), rejected: make([]int64, maxL+2)}
}

// add measures one key's requests: times sorted, ns since originNs (a Unix
// time, ns).
func (c *counting) add(times []int64, originNs, windowNs int64) {
	lo := 0
	var win, prev, curr int64
	fresh := true
	for i, t := range times {
		for times[lo] <= t-windowNs {
			lo++
		}
		exact := int64(i - lo)
		abs := originNs + t
		w := floorDiv(abs, windowNs)
		switch {
		case fresh:
			fresh, win, prev, curr = false, w, 0, 0
		case w == win+1:
			win, prev, curr = w, curr, 0
		case w > win+1:
			win, prev, curr = w, 0, 0
		}
		start := w * windowNs
		weight := float64(windowNs-(abs-start)) / float64(windowNs)
		est := int64(weight*float64(prev)) + curr
		curr++
		c.requests++
		c.mark(c.rejected, 0, exact)
		switch {
		case est < exact:
			c.mark(c.allowed, est, exact)
		case exact < est:
			c.mark(c.limits, exact, est)
		}
	}
}

// mark counts one request for every limit L with lo < L <= hi.
func (c *counting) mark(diff []int64, lo, hi int64) {
	if lo >= int64(c.maxL) || hi <= lo {
		return
	}
	diff[lo+1]++
	diff[min(hi, int64(c.maxL))+1]--
}

// finish turns the difference arrays into counts per limit.
func (c *counting) finish() {
	for l := 1; l <= c.maxL+1; l++ {
		c.allowed[l] += c.allowed[l-1]
		c.limits[l] += c.limits[l-1]
		c.rejected[l] += c.rejected[l-1]
	}
}

// differ is how many requests the two limiters a and b decide differently
// on one key's times (ns since originNs), each limiter on its own state:
// the decisions feed back into what each counts.
func differ(a, b model.Policy, times []int64, originNs int64) (allowedByA, limitedByA int64) {
	da, err := model.NewDeciderAt(a, originNs)
	if err != nil {
		panic(err)
	}
	db, err := model.NewDeciderAt(b, originNs)
	if err != nil {
		panic(err)
	}
	for _, t := range times {
		x, y := da.Allow(t), db.Allow(t)
		switch {
		case x && !y:
			allowedByA++
		case y && !x:
			limitedByA++
		}
	}
	return allowedByA, limitedByA
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
