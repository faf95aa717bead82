package sweep

import (
	"fmt"
	"slices"

	"github.com/ratesweep/ratesweep/model"
)

// Grid maps point ids to policies without materialising the grid. Point ids
// number the entries' cross products in spec order (last axis fastest), so
// the same spec always gives the same ids.
type Grid struct {
	spec    *Spec
	offsets []int64 // offsets[i] = first point id of entry i
	total   int64
}

// NewGrid indexes the spec's grid.
func NewGrid(s *Spec) *Grid {
	g := &Grid{spec: s}
	for i := range s.Entries {
		g.offsets = append(g.offsets, g.total)
		g.total += s.Entries[i].Size()
	}
	return g
}

// Points is the number of grid points.
func (g *Grid) Points() int64 { return g.total }

// Policy returns the policy of point id (0 <= id < Points()).
func (g *Grid) Policy(id int64) model.Policy {
	e := len(g.offsets) - 1
	for e > 0 && g.offsets[e] > id {
		e--
	}
	entry := &g.spec.Entries[e]
	p := entry.newPolicy()
	p.BlockLevels = entry.BlockLevels
	g.spec.weigh(entry, &p)
	rest := id - g.offsets[e]
	for i := len(entry.Axes) - 1; i >= 0; i-- {
		ax := &entry.Axes[i]
		n := int64(len(ax.Values))
		p.Set(ax.Param, ax.Values[rest%n])
		rest /= n
	}
	return p
}

// Algorithms lists the algorithms of points [from, to), each once.
func (g *Grid) Algorithms(from, to int64) []model.Algorithm {
	var out []model.Algorithm
	for e := range g.offsets {
		end := g.total
		if e+1 < len(g.offsets) {
			end = g.offsets[e+1]
		}
		if a := g.spec.Entries[e].Algorithm; g.offsets[e] < to && end > from && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Policies fills dst with the policies of points from, from+1, … (as Policy
// gives them), stepping each entry's axes like an odometer instead of
// decomposing every id: a part's policies cost one Set per point. When
// changed is not nil (len(dst) long), changed[i] is the parameter (index in
// model.Params) in which dst[i] alone may differ from dst[i-1], or -1 when
// others may too (dst[0], an entry's first point, an axis wrapping round).
func (g *Grid) Policies(dst []model.Policy, from int64, changed []int8) {
	var idx []int // per axis of entry e, the value index of dst[i-1]
	var prm []int // per axis of entry e, its parameter's index in model.Params
	e, end := -1, int64(0)
	for i := 0; i < len(dst); i++ {
		id := from + int64(i)
		if changed != nil {
			changed[i] = -1
		}
		if e >= 0 && id < end && g.spec.Entries[e].Components != nil {
			dst[i] = g.Policy(id) // all_of: each point its own components
			continue
		}
		if e < 0 || id >= end { // (re)start at id's entry
			dst[i] = g.Policy(id)
			for e = len(g.offsets) - 1; e > 0 && g.offsets[e] > id; e-- {
			}
			end = g.total
			if e+1 < len(g.offsets) {
				end = g.offsets[e+1]
			}
			axes := g.spec.Entries[e].Axes
			idx = append(idx[:0], make([]int, len(axes))...)
			prm = prm[:0]
			for _, ax := range axes {
				prm = append(prm, slices.IndexFunc(model.Params, func(p model.Param) bool { return p.Name == ax.Param }))
			}
			rest := id - g.offsets[e]
			for a := len(axes) - 1; a >= 0; a-- {
				n := int64(len(axes[a].Values))
				idx[a] = int(rest % n)
				rest /= n
			}
			continue
		}
		axes := g.spec.Entries[e].Axes
		if n := stepLast(dst[i-1:], axes, idx, prm, changed[min(i, len(changed)):], int(end-id)); n > 0 {
			i += n - 1
			continue
		}
		dst[i] = dst[i-1]
		p := &dst[i]
		for a := len(axes) - 1; a >= 0; a-- {
			ax := &axes[a]
			if idx[a]++; idx[a] < len(ax.Values) {
				p.SetParam(prm[a], ax.Values[idx[a]])
				if changed != nil && a == len(axes)-1 {
					changed[i] = int8(prm[a])
				}
				break
			}
			idx[a] = 0
			p.SetParam(prm[a], ax.Values[0])
		}
	}
}

// stepLast fills dst[1:] from dst[0] while only the entry's last axis
// steps (the common case: the innermost axis runs through its values, one
// SetParam each), at most max points, and returns how many it filled; idx
// and prm are Policies' axis state, changed (nil, or from dst[1] on) its
// hints.
func stepLast(dst []model.Policy, axes []Axis, idx, prm []int, changed []int8, max int) int {
	last := len(axes) - 1
	if last < 0 {
		return 0
	}
	vals := axes[last].Values
	n := min(len(vals)-1-idx[last], len(dst)-1, max)
	if n <= 0 {
		return 0
	}
	j := prm[last]
	vals = vals[idx[last]+1:][:n]
	for k, v := range vals {
		dst[k+1] = dst[k]
		dst[k+1].SetParam(j, v)
	}
	idx[last] += n
	if changed != nil {
		for k := range n {
			changed[k] = int8(j)
		}
	}
	return n
}

// Shard is one of N disjoint slices of a grid, for clusters (Slurm array
// tasks, Kubernetes indexed jobs). Index is 0-based.
type Shard struct{ Index, Count int }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseShard parses "I/N" with 0 <= I < N.
func ParseShard(v string) (Shard, error) {
	var s Shard
	var rest string
	if n, _ := fmt.Sscanf(v, "%d/%d%s", &s.Index, &s.Count, &rest); n != 2 {
		return s, fmt.Errorf("shard %q: expected I/N, e.g. 0/4", v)
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return s, fmt.Errorf("shard %q: need 0 <= I < N and N >= 1", v)
	}
	return s, nil
}

// CheckShard refuses a shard count above the grid's number of parts: such
// shards would have no work (and a count like 0/9999999999 would allocate
// per shard).
func (g *Grid) CheckShard(s Shard) error {
	parts := (g.total + PartPoints(g.total) - 1) / PartPoints(g.total)
	if int64(s.Count) > max(parts, 1) {
		return inputErrorf("shard %s: the grid has %d points in %d parts, so at most %d shards; use a shard count of %d or less", s, g.total, parts, max(parts, 1), max(parts, 1))
	}
	return nil
}

// Part is a contiguous range of point ids written to one points file and
// one clients file.
type Part struct {
	Index    int   // global part number
	From, To int64 // point ids [From, To)
}

// Name is the part's file name (the same under points/ and clients/).
func (p Part) Name() string { return fmt.Sprintf("part-%06d.parquet", p.Index) }

// Points is the number of grid points in the part.
func (p Part) Points() int64 { return p.To - p.From }

// Part sizes: the layout depends on the grid alone (never on workers or
// shards), so any worker count, shard split or resume gives the same files.
const (
	targetParts   = 64
	minPartPoints = 1024
	maxPartPoints = 64 * 1024
)

// PartPoints is the number of points per part for a grid of n points.
func PartPoints(n int64) int64 {
	p := (n + targetParts - 1) / targetParts
	return min(max(p, minPartPoints), maxPartPoints)
}

// Parts lists the parts of a grid of n points that belong to shard s, dealt
// round-robin. With s = 0/1 it is the grid's part layout. Run deals parts to
// shards by estimated cost instead: use ShardParts for a shard's parts.
func Parts(n int64, s Shard) []Part {
	size := PartPoints(n)
	var out []Part
	for k, from := 0, int64(0); from < n; k, from = k+1, from+size {
		if k%s.Count == s.Index {
			out = append(out, Part{Index: k, From: from, To: min(from+size, n)})
		}
	}
	return out
}
