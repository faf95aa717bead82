package model

// CountFunc returns, for the count-based algorithms, a function that fills
// c[j] with the count request j of one key's event times ts (ns, not
// decreasing) is compared with: the policy admits request j at limit L iff
// c[j] < L, and c does not depend on L. It caps counts at cap (so that
// c[j] >= cap means "rejected at every limit <= cap"); cap must fit int32.
// ok is false for the other algorithms, whose state depends on their
// decisions.
//
//   - fixed_window: requests admitted earlier in the request's window; the
//     first L of a window are admitted, so it is the request's rank in its
//     window, min(rank, L) at limit L.
//   - fixed_window_anchored: hits (every attempt) earlier in the window the
//     hits open, which depends on the times alone.
//   - sliding_log: attempts logged in (t − window, t] before this one.
//
// The windows are the Deciders' own (advance, expire), placed as
// NewDeciderAt(p, originNs) places them, so the counts follow them exactly;
// p's limit is ignored.
func CountFunc(p Policy, originNs int64) (count func(ts []int64, c []int32, cap int64), ok bool) {
	switch p.Algorithm {
	case FixedWindow:
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
		}, true
	case FixedWindowAnchored:
		var d anchoredWindowLimiter
		d.configure(p)
		atOrigin(&d, originNs)
		return func(ts []int64, c []int32, cap int64) {
			d.Reset()
			for j, t := range ts {
				d.advance(t)
				c[j] = int32(min(d.hits, cap))
				d.hits++
			}
		}, true
	case SlidingLog:
		var d slidingLogLimiter
		d.configure(p)
		atOrigin(&d, originNs)
		return func(ts []int64, c []int32, cap int64) {
			d.Reset()
			for j, t := range ts {
				d.log.expire(t - d.windowNs)
				c[j] = int32(min(d.log.total, cap))
				d.log.add(t, 1)
			}
		}, true
	}
	return nil, false
}
