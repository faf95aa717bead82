package ingest

import "math"

// wholeSecondPeaks is the whole log's peak and p99 requests per second
// and its peak in a window of windowS seconds, as Profile computes them
// from every request time sorted, for a log whose times are whole seconds:
// the times become 4-byte seconds, sorted by radix (half the memory of
// sorted nanosecond times, a few linear passes instead of a comparison
// sort). ok is false when the log has sub-second times or spans more than
// 2³² seconds.
func (t *Traffic) wholeSecondPeaks(windowS int) (peakS, p99S, peakW int64, ok bool) {
	if t.SubSecond {
		return 0, 0, 0, false
	}
	if st := t.seconds; st != nil && st.windowS == int64(windowS) && st.requests == int64(len(t.times)) {
		return st.peakS, st.p99(t.DurationS), st.peakW, true // counted while reading
	}
	if t.DurationS > math.MaxUint32 {
		return 0, 0, 0, false
	}
	secs := make([]uint32, len(t.times))
	for i, ns := range t.times {
		secs[i] = uint32(ns / secondNs)
	}
	radixSort(secs)
	distinct := 0
	for i := range secs {
		if i == 0 || secs[i] != secs[i-1] {
			distinct++
		}
	}
	active := make([]int32, 0, distinct) // sized once: growing it copied more than the sort
	for a := 0; a < len(secs); {
		b := a + 1
		for b < len(secs) && secs[b] == secs[a] {
			b++
		}
		active = append(active, int32(b-a))
		a = b
	}
	peakS, p99S = peakP99Zeros(active, t.DurationS)
	a := 0
	for b := range secs {
		for int64(secs[b])-int64(secs[a]) >= int64(windowS) {
			a++
		}
		peakW = max(peakW, int64(b-a+1))
	}
	return peakS, p99S, peakW, true
}

// radixSort sorts s in ascending order: least significant digit first, 11
// bits a pass, skipping a pass whose digit is the same for every element.
func radixSort(s []uint32) {
	const bits = 11
	const buckets = 1 << bits
	if len(s) < 2 {
		return
	}
	var count [3][buckets]int
	for _, v := range s {
		count[0][v&(buckets-1)]++
		count[1][v>>bits&(buckets-1)]++
		count[2][v>>(2*bits)]++
	}
	src, dst := s, make([]uint32, len(s))
	for pass := range 3 {
		c := &count[pass]
		shift := uint(pass * bits)
		if c[src[0]>>shift&(buckets-1)] == len(s) {
			continue // one digit for all: already in order by it
		}
		sum := 0
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, v := range src {
			d := v >> shift & (buckets - 1)
			dst[c[d]] = v
			c[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &s[0] {
		copy(s, src)
	}
}
