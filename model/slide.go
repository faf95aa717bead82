package model

// slidingRuns is slidingWindow (limiter.go) over one client's runs of
// constant offered requests, in O(min(n, 2W) + W) per run of n seconds rather
// than O(n), so a day-long scenario costs what its runs cost, not what its
// seconds cost. It returns the total admitted and the reference-equivalent
// steps it took (for the table cache's ski rental).
//
// Why it is exact: let n_t be the admitted count in second t and
// P_t = n_{t-W} + … + n_{t-1} <= L (the window holds at most L). The
// reference admits n_t = min(x, L − P_t + n_{t-W}). Inside a run of constant x
// that began W or more seconds ago, n_{t-W} <= x, so n_t >= n_{t-W}, and P
// never falls. In the run's second W seconds either some second admits less
// than x, which fills the window (P = L) and from then on n_t = n_{t-W}; or
// every second admits x, and then n_t = x = n_{t-W} too. So from the run's
// 2W-th second on, the admitted series repeats with period W: the rest of the
// run admits P per W seconds, and the ring of the last W seconds (indexed by
// t mod W) is the same when the run ends.
//
// ring is scratch of at least W entries.
func slidingRuns(rs []run, limit int64, window int, ring []int64) (admitted, steps int64) {
	w := int64(window)
	ring = ring[:window]
	clear(ring)
	var pos, sum int64 // t mod W, Σ ring = P_t
	for _, r := range rs {
		x := r.x
		stepped := min(r.n, 2*w)
		for range stepped {
			old := ring[pos]
			n := min(x, max(0, limit-(sum-old)))
			ring[pos] = n
			sum += n - old
			admitted += n
			if pos++; pos == w {
				pos = 0
			}
		}
		steps += stepped
		rest := r.n - stepped
		if rest == 0 {
			continue
		}
		// Periodic: rest/W whole periods of sum, then the next rest%W slots.
		admitted += rest / w * sum
		for k := rest % w; k > 0; k-- {
			admitted += ring[pos]
			if pos++; pos == w {
				pos = 0
			}
		}
		steps += rest % w
	}
	return admitted, steps
}
