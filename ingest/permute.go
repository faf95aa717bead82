package ingest

// Putting the request columns in key order: a permutation applied in place, cycle by cycle.

import (
	"github.com/ratesweep/ratesweep/model"
)

// columns are the per-request columns of a build, in the same order: times
// (nil when placed already) and, when rules need them, request-rule
// precedence and stage and rate-rule bits (nil when absent).
type columns struct {
	times []int64
	secs  []uint32 // whole-second times (builder.secs), in their place
	prec  []uint8
	stage []model.Stage
	rate  []uint16
	resp  []uint32 // cost and status (cost.go), when asked for
}

func (c columns) slice(i, j int) columns {
	var out columns
	if c.times != nil {
		out.times = c.times[i:j]
	}
	if c.secs != nil {
		out.secs = c.secs[i:j]
	}
	if c.prec != nil {
		out.prec, out.stage = c.prec[i:j], c.stage[i:j]
	}
	if c.rate != nil {
		out.rate = c.rate[i:j]
	}
	if c.resp != nil {
		out.resp = c.resp[i:j]
	}
	return out
}

// Len, Less and Swap sort the columns by time (sort.Stable keeps ties in
// their order).
func (c columns) Len() int { return len(c.times) }

func (c columns) Less(i, j int) bool { return c.times[i] < c.times[j] }

func (c columns) Swap(i, j int) {
	if c.times != nil {
		c.times[i], c.times[j] = c.times[j], c.times[i]
	}
	if c.secs != nil {
		c.secs[i], c.secs[j] = c.secs[j], c.secs[i]
	}
	if c.prec != nil {
		c.prec[i], c.prec[j] = c.prec[j], c.prec[i]
		c.stage[i], c.stage[j] = c.stage[j], c.stage[i]
	}
	if c.rate != nil {
		c.rate[i], c.rate[j] = c.rate[j], c.rate[i]
	}
	if c.resp != nil {
		c.resp[i], c.resp[j] = c.resp[j], c.resp[i]
	}
}

// permute moves element i of every column to position dest[i], in place;
// dest is consumed. A large permutation goes in two steps that keep memory
// access local: an in-place partition into regions of consecutive
// destinations (American flag sort: one write head per region, each moving
// forward through its region), then each region's own permutation within
// it, a region small enough for the cache. Followed cycle by cycle across the
// whole array, every step was a cache miss (1.6 s for 10M requests).
func (c columns) permute(dest []int32) {
	const regionBits = 15 // 32,768 requests per region: 400 KB of columns
	n := len(dest)
	if n <= 2<<regionBits {
		c.permuteCycles(dest, 0)
		return
	}
	shift := uint(regionBits)
	for n>>shift > 4096 { // at most 4096 heads: 512 KB of cache lines
		shift++
	}
	size := 1 << shift
	heads := make([]int, (n+size-1)/size)
	for r := range heads {
		heads[r] = r * size
	}
	for r := range heads {
		end := min((r+1)*size, n)
		for i := heads[r]; i < end; i = heads[r] {
			to := int(dest[i]) >> shift
			if to == r {
				heads[r]++
				continue
			}
			// the element at i belongs to region to: swap it to that
			// region's head, and look at what comes back
			j := heads[to]
			heads[to]++
			dest[i], dest[j] = dest[j], dest[i]
			c.Swap(i, j)
		}
	}
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		c.slice(lo, hi).permuteCycles(dest[lo:hi], int32(lo))
	}
}

// permuteCycles moves element i of every column to position dest[i] − base,
// in place, cycle by cycle; dest is consumed (every entry becomes -1).
func (c columns) permuteCycles(dest []int32, base int32) {
	for i := range dest {
		if dest[i] < 0 {
			continue
		}
		// Carry element i along its cycle until the cycle closes at i.
		var t int64
		if c.times != nil {
			t = c.times[i]
		}
		var sec uint32
		if c.secs != nil {
			sec = c.secs[i]
		}
		var p uint8
		var st model.Stage
		var rb uint16
		var rs uint32
		if c.prec != nil {
			p, st = c.prec[i], c.stage[i]
		}
		if c.rate != nil {
			rb = c.rate[i]
		}
		if c.resp != nil {
			rs = c.resp[i]
		}
		pos := dest[i] - base
		dest[i] = -1
		for int(pos) != i {
			if c.times != nil {
				c.times[pos], t = t, c.times[pos]
			}
			if c.secs != nil {
				c.secs[pos], sec = sec, c.secs[pos]
			}
			if c.prec != nil {
				c.prec[pos], p = p, c.prec[pos]
				c.stage[pos], st = st, c.stage[pos]
			}
			if c.rate != nil {
				c.rate[pos], rb = rb, c.rate[pos]
			}
			if c.resp != nil {
				c.resp[pos], rs = rs, c.resp[pos]
			}
			next := dest[pos] - base
			dest[pos] = -1
			pos = next
		}
		if c.times != nil {
			c.times[i] = t
		}
		if c.secs != nil {
			c.secs[i] = sec
		}
		if c.prec != nil {
			c.prec[i], c.stage[i] = p, st
		}
		if c.rate != nil {
			c.rate[i] = rb
		}
		if c.resp != nil {
			c.resp[i] = rs
		}
	}
}
