package ingest

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// Spread is how requests logged in the same second are placed inside it.
type Spread uint8

const (
	// SpreadEven places the n requests of a key logged in one second at
	// (i+0.5)/n of that second: deterministic, the same in every replicate.
	SpreadEven Spread = iota
	// SpreadRandom places every request at a uniformly random instant of
	// its second, seeded by (seed, replicate).
	SpreadRandom
	// SpreadNone keeps every request at the start of its second.
	SpreadNone
)

var spreadNames = []string{"even", "random", "none"}

func (s Spread) String() string { return spreadNames[s] }

// ParseSpread parses even, random or none.
func ParseSpread(s string) (Spread, error) {
	for i, n := range spreadNames {
		if s == n {
			return Spread(i), nil
		}
	}
	return 0, fmt.Errorf("unknown spread %q (known: %s)", s, strings.Join(spreadNames, ", "))
}

// Stochastic reports whether realisations differ between replicates.
func (t *Traffic) Stochastic(s Spread) bool { return s == SpreadRandom && !t.SubSecond }

// Unspread reports whether Realise with s returns the times as logged (a
// log with sub-second times, or SpreadNone), so that KeyTimes can stand for
// it.
func (t *Traffic) Unspread(s Spread) bool { return t.SubSecond || s == SpreadNone }

// KeyTimes returns every key's request times as logged, in ns since
// StartUnix (t.Keys order): views of the log's own storage, shared by every
// caller, so read-only. Where Unspread(s) it equals Realise(s, …) without
// a copy of the log's times (8 bytes per request per caller).
func (t *Traffic) KeyTimes() [][]int64 {
	views := make([][]int64, len(t.Keys))
	for i := range views {
		views[i] = t.Times(i)
	}
	return views
}

// Realise returns every key's request times in nanoseconds since StartUnix,
// sorted, with one-second log times spread inside their second by s: the
// realisation of (seed, replicate). It reuses buf's storage when it is large
// enough. Keys are in t.Keys order; times of a log with sub-second precision
// are returned as logged. The random stream is PCG(seed, replicate) and
// visits keys in order, so the result does not depend on the caller.
func (t *Traffic) Realise(s Spread, seed uint64, replicate int, buf [][]int64) [][]int64 {
	if cap(buf) < len(t.Keys) {
		buf = make([][]int64, len(t.Keys))
	}
	buf = buf[:len(t.Keys)]
	var rng *rand.Rand
	if s == SpreadRandom {
		rng = rand.New(rand.NewPCG(seed, uint64(replicate)))
	}
	for i := range t.Keys {
		src := t.Times(i)
		dst := append(buf[i][:0], src...)
		buf[i] = dst
		if t.SubSecond || s == SpreadNone {
			continue
		}
		for a := 0; a < len(dst); {
			b := a + 1
			for b < len(dst) && dst[b] == dst[a] {
				b++
			}
			n := int64(b - a)
			switch s {
			case SpreadEven:
				for j := a; j < b; j++ {
					dst[j] += (2*int64(j-a) + 1) * secondNs / (2 * n)
				}
			case SpreadRandom:
				for j := a; j < b; j++ {
					dst[j] += rng.Int64N(secondNs)
				}
				if n > 1 {
					slices.Sort(dst[a:b])
				}
			}
			a = b
		}
	}
	return buf
}

// Stream is every request of a realisation in one time order: parallel
// slices, for simulations that see all keys at once (a global limiter,
// distributed or keyed state).
type Stream struct {
	Times  []int64       // ns since StartUnix, non-decreasing
	Keys   []int32       // index into Traffic.Keys
	Labels []model.Stage // NoStage = legit
}

// Merge interleaves per-key times (from Realise, t.Keys order) into one
// stream ordered by time, then key, then the key's own order.
func (t *Traffic) Merge(times [][]int64) *Stream {
	n := 0
	for _, ts := range times {
		n += len(ts)
	}
	type ref struct {
		t   int64
		key int32
		j   int32
	}
	all := make([]ref, 0, n)
	for k, ts := range times {
		for j, v := range ts {
			all = append(all, ref{v, int32(k), int32(j)})
		}
	}
	slices.SortFunc(all, func(a, b ref) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		return cmp.Compare(a.j, b.j)
	})
	s := &Stream{Times: make([]int64, n), Keys: make([]int32, n), Labels: make([]model.Stage, n)}
	for i, r := range all {
		s.Times[i], s.Keys[i], s.Labels[i] = r.t, r.key, t.Labels(int(r.key))[r.j]
	}
	return s
}

// Realiser returns Realise with the spread fixed: the shape of an event
// source, func(seed, replicate, dst) [][]int64, as model.Workload.Realise has
// in the event simulation.
func (t *Traffic) Realiser(s Spread) func(seed uint64, replicate int, dst [][]int64) [][]int64 {
	return func(seed uint64, replicate int, dst [][]int64) [][]int64 {
		return t.Realise(s, seed, replicate, dst)
	}
}

// Clients returns one model.Client per key (t.Keys order) with the key's
// name, class and stage and no segments: the client list of an event
// workload whose times come from Realise.
func (t *Traffic) Clients() []model.Client {
	out := make([]model.Client, len(t.Keys))
	for i := range t.Keys {
		k := &t.Keys[i]
		out[i] = model.Client{Name: k.Name, Class: k.Class, Stage: k.Stage}
		if out[i].Name == "" {
			out[i].Name = "-"
		}
	}
	return out
}
