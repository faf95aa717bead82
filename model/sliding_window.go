package model

import "fmt"

// slidingWindowAlgorithm is sliding_window, the lesson's sliding window: a
// request is admitted while fewer than limit requests were admitted in the
// last window_s seconds; rejected requests are not counted (SPEC.md). Its
// decider is the sliding log of admitted requests (sliding_log.go).
var slidingWindowAlgorithm = Descriptor{
	Name: "sliding_window", Title: "sliding window", Family: WindowFamily, Lesson: true, ColorSlot: 1,
	Params:   []string{"window_s", "limit"},
	Cost:     80,
	Validate: validateWindow,
	Label:    func(p Policy) string { return fmt.Sprintf("sliding window %d s", p.WindowS) },
	Why: func(p Policy) string {
		return fmt.Sprintf("cut when %d requests were admitted in the last %d s", p.Limit, p.WindowS)
	},
	Bound:      func(p Policy, a []float64) string { return windowBound(p, a, false) },
	newDecider: func() decider { return &slidingLogLimiter{} },
	kernel: func(p Policy, a, adm []int32) int64 {
		return slidingWindow(a, adm, p.Limit, p.WindowS)
	},
	lockstep: func(ps []Policy, _ int64) (Lockstep, bool) { return newWindowLockstep(ps) },
}

// slidingWindow admits min(a, limit - admitted in the previous window-1 seconds).
// Rejected requests are not counted. A running sum keeps it O(len(a)).
func slidingWindow(a, adm []int32, limit int64, window int) int64 {
	var total, inWindow int64 // inWindow = sum(adm[t-window+1 .. t-1])
	for t, x := range a {
		n := min(int64(x), max(0, limit-inWindow))
		adm[t] = int32(n)
		total += n
		inWindow += n
		if old := t - window + 1; old >= 0 {
			inWindow -= int64(adm[old])
		}
	}
	return total
}
