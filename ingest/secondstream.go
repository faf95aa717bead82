package ingest

import "math/bits"

// secondStream counts a log's requests per whole second while it is read,
// in constant memory, for Profile's whole-log peaks (Options.ProfileWindowS):
// no sort of every request's time afterwards, and no column as long as the
// log for it.
//
// A line's time goes back at most max_backwards_s behind the latest before
// it (further back it is refused), so the counts of a few such spans are
// kept in a ring from base on, every second before base is final, and when
// a time reaches past the ring the older half of the ring becomes final at
// once (a request costs a counter and a bit; the walk is shared by
// thousands). Final seconds come out in increasing order and feed the peak,
// the distribution of per-second counts (for the p99) and a sliding window
// of windowS seconds.
type secondStream struct {
	ring     []int64  // request counts, second s at s & mask
	occupied []uint64 // bit s & mask set when ring holds a count for s
	mask     int64
	base     int64 // the ring holds seconds base .. base+mask; earlier ones are final
	started  bool
	broken   bool // a time went back beyond the ring (ALB's started times)

	windowS int64
	stats   secondStats
	queue   []secondCount // final seconds within windowS of the last, oldest first
	head    int
	winSum  int64
}

type secondCount struct{ sec, n int64 }

// secondStats are the whole-log per-second figures a secondStream found.
type secondStats struct {
	windowS  int64
	requests int64   // requests counted (Profile checks it against the Traffic's)
	peakS    int64   // most requests in one second
	peakW    int64   // most requests in any windowS seconds
	active   int64   // seconds with requests
	freq     []int64 // freq[c]: seconds with c requests (c ≥ 1)
}

// newSecondStream returns a stream for times going back at most maxBackS
// seconds (≥ 0) and a window of windowS seconds (≥ 1).
func newSecondStream(maxBackS, windowS int64) *secondStream {
	size := int64(128)
	for size < 2*(maxBackS+2) { // a sub-second time may be maxBackS+1 seconds back, and half the ring is kept
		size *= 2
	}
	return &secondStream{ring: make([]int64, size), occupied: make([]uint64, size/64), mask: size - 1, windowS: windowS,
		stats: secondStats{windowS: windowS}}
}

// add counts a request in second sec.
func (s *secondStream) add(sec int64) {
	d := sec - s.base
	if uint64(d) > uint64(s.mask) {
		if !s.started {
			s.base, s.started = sec-(s.mask+1)/2, true
		} else if d < 0 {
			s.broken = true
			return
		} else {
			// Past the ring: what is more than half a ring behind sec is final.
			to := sec - (s.mask+1)/2
			s.flush(to - 1)
			s.base = to
		}
	}
	i := sec & s.mask
	s.ring[i]++
	s.occupied[i>>6] |= 1 << (i & 63)
	s.stats.requests++
}

// flush finalises the seconds in the ring up to and including upTo, in
// increasing order.
func (s *secondStream) flush(upTo int64) {
	upTo = min(upTo, s.base+s.mask)
	for sec := s.base; sec <= upTo; {
		// the next occupied slot at or after sec's, within this word
		i := sec & s.mask
		w := s.occupied[i>>6] >> (i & 63)
		if w == 0 {
			sec += 64 - i&63 // the rest of the word is empty
			continue
		}
		sec += int64(bits.TrailingZeros64(w))
		if sec > upTo {
			break
		}
		i = sec & s.mask
		s.final(sec, s.ring[i])
		s.ring[i] = 0
		s.occupied[i>>6] &^= 1 << (i & 63)
		sec++
	}
}

// final takes second sec's count n (≥ 1), seconds arriving in increasing
// order.
func (s *secondStream) final(sec, n int64) {
	st := &s.stats
	st.active++
	st.peakS = max(st.peakS, n)
	for int64(len(st.freq)) <= n {
		st.freq = append(st.freq, 0)
	}
	st.freq[n]++
	for s.head < len(s.queue) && s.queue[s.head].sec <= sec-s.windowS {
		s.winSum -= s.queue[s.head].n
		s.head++
	}
	if s.head > 1024 && s.head*2 > len(s.queue) {
		s.queue = s.queue[:copy(s.queue, s.queue[s.head:])]
		s.head = 0
	}
	s.queue = append(s.queue, secondCount{sec, n})
	s.winSum += n
	st.peakW = max(st.peakW, s.winSum)
}

// finish finalises every second and returns the figures, or nil when a
// time went back beyond the ring.
func (s *secondStream) finish() *secondStats {
	if s.broken {
		return nil
	}
	if s.started {
		s.flush(s.base + s.mask)
	}
	return &s.stats
}

// p99 is the nearest-rank 99th percentile of requests per second over
// seconds seconds (the empty ones included), as peakP99Zeros computes it.
func (st *secondStats) p99(seconds int) int64 {
	zeros := int64(seconds) - st.active
	rank := (99*int64(seconds) + 99) / 100 // ceil(0.99 n), 1-based over zeros then counts
	if rank <= zeros {
		return 0
	}
	rank -= zeros
	for c, f := range st.freq {
		if rank <= f {
			return int64(c)
		}
		rank -= f
	}
	return st.peakS
}
