package ingest

import (
	"slices"

	"github.com/ratesweep/ratesweep/model"
)

// Profile summarises a log's traffic to help choose a sweep grid. Rates are
// requests per log second (one-second resolution, before spreading).
type Profile struct {
	Requests  int64
	Keys      int
	DurationS int
	PeakS     int64   // most requests in one second
	P99S      int64   // 99th percentile (nearest rank) of requests per second over every second of the span, empty ones included
	MeanS     float64 // requests per second over the span
	PeakW     int64   // most requests in any window of WindowS seconds
	WindowS   int
	Abusive   int64 // requests labelled abusive
	ByStage   [4]int64
	Mixed     int // keys whose requests carry more than one label
	Top       []KeyProfile
	// LegitKeysW and AbusiveKeysW are the distributions, over keys of each
	// class, of a key's most requests in a window of WindowS seconds: a
	// window limit above LegitKeysW.P99 spares 99% of legitimate keys.
	LegitKeysW, AbusiveKeysW Quantiles
}

// Quantiles summarise a distribution over keys (nearest rank).
type Quantiles struct {
	N                  int
	P50, P90, P99, Max int64
}

func quantiles(v []int64) Quantiles {
	if len(v) == 0 {
		return Quantiles{}
	}
	slices.Sort(v)
	at := func(q int) int64 { return v[(q*len(v)+99)/100-1] }
	return Quantiles{N: len(v), P50: at(50), P90: at(90), P99: at(99), Max: v[len(v)-1]}
}

// KeyProfile is one key's rates.
type KeyProfile struct {
	Key     *Key
	PeakS   int64 // most requests in one second
	P99S    int64 // 99th percentile of requests per second over the seconds in which the key sent any
	PeakW   int64 // most requests in any window of WindowS seconds
	ActiveS int   // seconds in which the key sent requests
	FirstS  int   // first and last second (since StartUnix)
	LastS   int
}

// Profile computes the profile with the top keys (by requests) and a
// sliding window of windowS seconds (>= 1).
func (t *Traffic) Profile(top, windowS int) *Profile {
	windowS = max(windowS, 1)
	p := &Profile{Requests: t.Requests(), Keys: len(t.Keys), DurationS: t.DurationS, WindowS: windowS}
	// Sparse: spans can be long (years) while requests are few.
	var ok bool
	if p.PeakS, p.P99S, p.PeakW, ok = t.wholeSecondPeaks(windowS); !ok {
		p.PeakS, p.P99S, p.PeakW = t.sortedPeaks(windowS)
	}
	p.MeanS = float64(p.Requests) / float64(t.DurationS)
	var legitW, abusiveW []int64
	for i := range t.Keys {
		k := &t.Keys[i]
		w := peakWindowTimes(t.Times(i), int64(windowS)*secondNs)
		if k.Class == model.Abusive {
			abusiveW = append(abusiveW, w)
		} else {
			legitW = append(legitW, w)
		}
		for s, c := range k.ByStage {
			p.ByStage[s] += c
		}
		if k.Mixed() {
			p.Mixed++
		}
	}
	for _, s := range model.Stages {
		p.Abusive += p.ByStage[s]
	}
	p.LegitKeysW, p.AbusiveKeysW = quantiles(legitW), quantiles(abusiveW)
	var counts []int32
	for i := range min(top, len(t.Keys)) {
		kp := KeyProfile{Key: &t.Keys[i]}
		ts := t.Times(i)
		kp.FirstS, kp.LastS = int(ts[0]/secondNs), int(ts[len(ts)-1]/secondNs)
		counts = secondCounts(ts, counts[:0])
		kp.ActiveS = len(counts)
		kp.PeakS, kp.P99S = peakP99(counts) // sorts counts: done with them
		kp.PeakW = peakWindowTimes(ts, int64(windowS)*secondNs)
		p.Top = append(p.Top, kp)
	}
	return p
}

// sortedPeaks is the whole log's peak and p99 requests per second and its
// peak in a window of windowS seconds, from every request time sorted.
func (t *Traffic) sortedPeaks(windowS int) (peakS, p99S, peakW int64) {
	all := slices.Clone(t.times)
	slices.Sort(all)
	active := secondCounts(all, nil)
	peakS, p99S = peakP99Zeros(active, t.DurationS)
	return peakS, p99S, peakWindowTimes(all, int64(windowS)*secondNs)
}

// secondCounts appends the number of requests in each second that has any
// (ts sorted, ns).
func secondCounts(ts []int64, out []int32) []int32 {
	for a := 0; a < len(ts); {
		b := a + 1
		for b < len(ts) && ts[b]/secondNs == ts[a]/secondNs {
			b++
		}
		out = append(out, int32(b-a))
		a = b
	}
	return out
}

// peakP99Zeros is peakP99 over active counts plus (seconds - len(active))
// empty seconds.
func peakP99Zeros(active []int32, seconds int) (int64, int64) {
	if len(active) == 0 {
		return 0, 0
	}
	s := slices.Clone(active)
	slices.Sort(s)
	zeros := seconds - len(s)
	rank := (99*seconds + 99) / 100 // ceil(0.99 n), 1-based over zeros then s
	if rank <= zeros {
		return int64(s[len(s)-1]), 0
	}
	return int64(s[len(s)-1]), int64(s[rank-zeros-1])
}

// peakP99 returns the maximum and the nearest-rank 99th percentile of s
// (sorted in place).
func peakP99(s []int32) (int64, int64) {
	if len(s) == 0 {
		return 0, 0
	}
	slices.Sort(s)
	rank := (99*len(s) + 99) / 100 // ceil(0.99 n)
	return int64(s[len(s)-1]), int64(s[rank-1])
}

// peakWindowTimes is the most sorted times within any window [t, t+win).
func peakWindowTimes(ts []int64, win int64) int64 {
	var best int64
	a := 0
	for b := range ts {
		for ts[b]-ts[a] >= win {
			a++
		}
		best = max(best, int64(b-a+1))
	}
	return best
}
