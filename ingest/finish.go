package ingest

// The builder's last steps: the span, the keys' order, placing and sorting
// requests by key, the rate rules and the labels.

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	"github.com/ratesweep/ratesweep/internal/hugemem"
	"github.com/ratesweep/ratesweep/model"
)

// finish sorts the requests by key and time, applies rate rules and labels.
func (b *builder) finish() *Traffic {
	t := &Traffic{SubSecond: b.subSec, Stats: b.stats}
	n := b.n()
	t.Stats.Requests = int64(n) + b.others
	if b.sec != nil && !b.subSec {
		t.seconds = b.sec.finish()
	}
	start := b.span(t)
	count, order := b.keyOrder()
	dest, start := b.place(t, n, count, order, start)
	b.sortByKey(t, n, dest, start)
	b.applyRateRules(t, order)
	b.label(t, n, count, order)
	return t
}

// span sets the traffic's first Unix second and duration (s) and returns
// the start in the times' unit (ns).
func (b *builder) span(t *Traffic) int64 {
	var minT, maxT int64
	if b.wide {
		minT, maxT = slices.Min(b.times), slices.Max(b.times)
	} else {
		minT, maxT = (b.secBase+int64(slices.Min(b.secs)))*secondNs, (b.secBase+int64(slices.Max(b.secs)))*secondNs
	}
	minT, maxT = min(minT, b.otherMin), max(maxT, b.otherMax)
	start := minT - (minT % secondNs)
	t.StartUnix = start / secondNs
	t.DurationS = int((maxT-start)/secondNs) + 1
	return start
}

// keyOrder returns each key id's request count and the key ids in key
// order: requests descending, then name.
func (b *builder) keyOrder() (count []int64, order []int32) {
	nk := len(b.names)
	count = make([]int64, nk)
	for _, k := range b.keys {
		count[k]++
	}
	order = make([]int32, nk)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int {
		if c := cmp.Compare(count[y], count[x]); c != 0 {
			return c
		}
		return strings.Compare(b.names[x], b.names[y])
	})
	return count, order
}

// place sets the keys' offsets and moves the n requests' times to their
// key's place (a counting sort by key rank, stable). It returns each
// request's destination where the other columns have yet to follow it
// (wide times), and the start still to subtract from the times (ns; 0 once
// subtracted).
//
// Whole-second times alone, up to placeMax requests, go to their places in
// one pass, into the kept column (at the peak 16 bytes a request: 4 of
// seconds, 4 of key ids, 8 of times). With other columns, or more
// requests, the key ids become each request's destination and the
// columns, seconds included, follow the permutation's cycles in place,
// then the seconds become times in order (12 bytes and the other columns'
// at the peak). Times in ns (wide) follow the cycles with the other
// columns.
func (b *builder) place(t *Traffic, n int, count []int64, order []int32, start int64) ([]int32, int64) {
	nk := len(b.names)
	t.offsets = make([]int64, nk+1)
	for r, k := range order {
		t.offsets[r+1] = t.offsets[r] + count[k]
	}
	next := make([]int64, nk) // by key: where its next request goes
	for r, k := range order {
		next[k] = t.offsets[r]
	}
	dest := b.keys
	if b.wide {
		for i, k := range dest {
			dest[i] = int32(next[k])
			next[k]++
		}
		return dest, start
	}
	off := b.secBase*secondNs - start // ns since start of secs' 0
	secs := b.secs[:n]
	alone := b.reqPrec == nil && b.rateBits == nil && b.resp == nil
	if alone && n <= placeMax && !b.opt.large {
		times := b.timesRoom(n)
		// Times alone: a time earlier than its key's last goes back
		// among the key's few latest (a log is written nearly in
		// order), so most keys come out sorted; further back it
		// stays, and the sort below finds the key unsorted.
		first := slices.Clone(next)
		for i, k := range dest[:n] {
			d := next[k]
			next[k]++
			v := int64(secs[i])*secondNs + off
			for lo := max(first[k], d-insertBack); d > lo && times[d-1] > v; d-- {
				times[d] = times[d-1]
			}
			times[d] = v
		}
	} else {
		// Other columns, or a large log: the seconds follow the
		// permutation (with the other columns), then become times.
		for i, k := range dest[:n] {
			dest[i] = int32(next[k])
			next[k]++
		}
		columns{secs: secs, prec: b.reqPrec, stage: b.reqStage, rate: b.rateBits, resp: b.resp}.permute(dest)
		hugemem.Free(b.keys)
		b.keys = nil
		times := b.timesRoom(n) // made now, most often: the key ids are gone
		if !alone {
			for i, s := range secs {
				times[i] = int64(s)*secondNs + off
			}
		} else {
			for r := range nk {
				first, end := t.offsets[r], t.offsets[r+1]
				for d := first; d < end; d++ {
					v := int64(secs[d])*secondNs + off
					j := d
					for lo := max(first, j-insertBack); j > lo && times[j-1] > v; j-- {
						times[j] = times[j-1]
					}
					times[j] = v
				}
			}
		}
	}
	hugemem.Free(b.secs)
	b.secs = nil
	return dest, 0 // subtracted already
}

// sortByKey moves the other columns to their places (wide times), sorts
// each key's requests by time, subtracts start (ns) and hands the n
// times and responses to t.
func (b *builder) sortByKey(t *Traffic, n int, dest []int32, start int64) {
	cols := columns{times: b.times, prec: b.reqPrec, stage: b.reqStage, rate: b.rateBits, resp: b.resp}
	if b.wide {
		cols.permute(dest)
	}
	hugemem.Free(b.keys)
	b.keys = nil
	for r := range len(b.names) {
		seg := cols.slice(int(t.offsets[r]), int(t.offsets[r+1]))
		switch {
		case slices.IsSorted(seg.times):
		case seg.prec == nil && seg.rate == nil && seg.resp == nil:
			slices.Sort(seg.times) // times alone: equal ones are alike
		default:
			sort.Stable(seg) // ties keep their lines' order (and labels)
		}
	}
	if start != 0 {
		for i := range b.times {
			b.times[i] -= start
		}
	}
	t.times = b.times[:n:n]
	b.times = nil
	t.resp, b.resp = b.resp, nil
}

// applyRateRules marks the keys whose matching requests reach a rate
// rule's rate.
func (b *builder) applyRateRules(t *Traffic, order []int32) {
	for j, ri := range b.rateRule {
		rule := &b.opt.Rules[ri]
		win := rule.Rate.WindowS * secondNs
		var ts []int64
		for r, k := range order {
			if p := b.keyPrec[k]; p != 0 && p <= uint8(ri+1) {
				continue
			}
			ts = ts[:0]
			for i := t.offsets[r]; i < t.offsets[r+1]; i++ {
				if b.rateBits[i]&(1<<j) != 0 {
					ts = append(ts, t.times[i])
				}
			}
			if reachesRate(ts, rule.Rate.Requests, win) {
				b.keyPrec[k] = uint8(ri + 1)
			}
		}
	}
}

// label sets each of the n requests' label (the first rule that marks the
// request or its key) and the keys' rows in key order.
func (b *builder) label(t *Traffic, n int, count []int64, order []int32) {
	t.labels = hugemem.Make[model.Stage](n, n)
	t.Keys = make([]Key, len(b.names))
	ruleCount := map[uint8]int64{}
	for r, k := range order {
		key := &t.Keys[r]
		key.Name, key.Requests = b.names[k], count[k]
		kp := b.keyPrec[k]
		if kp == 0 && b.reqPrec == nil {
			// No rule marked the key or its requests: every request is
			// legitimate (labels are zero, model.NoStage).
			key.ByStage[model.NoStage] = count[k]
			key.Class, key.Stage = majority(key.ByStage)
			continue
		}
		clear(ruleCount)
		for i := t.offsets[r]; i < t.offsets[r+1]; i++ {
			p, st := uint8(noPrec), model.NoStage
			if kp != 0 {
				p, st = kp, b.opt.Rules[kp-1].Stage
			}
			if b.reqPrec != nil {
				if rp := b.reqPrec[i]; rp < p {
					p, st = rp, b.reqStage[i]
				}
			}
			t.labels[i] = st
			key.ByStage[st]++
			if st != model.NoStage && p != 0 {
				ruleCount[p]++
			}
		}
		key.Class, key.Stage = majority(key.ByStage)
		var best uint8
		for p, c := range ruleCount {
			if best == 0 || c > ruleCount[best] || (c == ruleCount[best] && p < best) {
				best = p
			}
		}
		if best != 0 {
			key.Rule = b.opt.Rules[best-1].Name
		} else if key.Class == model.Abusive {
			key.Rule = "label column"
		}
	}
}

// reachesRate reports whether some window of win ns holds at least n of the
// sorted times ts.
func reachesRate(ts []int64, n int64, win int64) bool {
	if int64(len(ts)) < n {
		return false
	}
	for i := int(n - 1); i < len(ts); i++ {
		if ts[i]-ts[i-int(n-1)] < win {
			return true
		}
	}
	return false
}

// majority is the label of most requests; abusive wins a tie with legit, and
// among stages the earlier one (design, code, none) wins a tie.
func majority(by [4]int64) (model.Class, model.Stage) {
	best := model.StageDesign
	for _, s := range model.Stages {
		if by[s] > by[best] {
			best = s
		}
	}
	var abusive int64
	for _, s := range model.Stages {
		abusive += by[s]
	}
	if abusive == 0 || by[model.NoStage] > by[best] {
		return model.Legit, model.NoStage
	}
	return model.Abusive, best
}
