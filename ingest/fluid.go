package ingest

import (
	"fmt"

	"github.com/ratesweep/ratesweep/model"
)

// Counts returns key i's requests per second of the log (len DurationS).
func (t *Traffic) Counts(i int, buf []int32) []int32 {
	if cap(buf) < t.DurationS {
		buf = make([]int32, t.DurationS)
	}
	buf = buf[:t.DurationS]
	clear(buf)
	for _, ns := range t.Times(i) {
		buf[ns/secondNs]++
	}
	return buf
}

// MaxScenarioCells bounds keys × seconds of a fluid scenario: model.Workload
// holds a dense int32 per key and second (512 MiB at this bound).
const MaxScenarioCells = 1 << 27

// Scenario returns the log as a fluid model.Scenario: one client per key
// (named by the key, in t.Keys order), whose segments are its requests per
// second. A client's class and stage are its key's (the label of most of its
// requests): mixed keys are relabelled whole, which Key.Mixed reveals. The
// scenario is valid; it fails for a log longer than model.MaxDurationS or
// with more than MaxScenarioCells keys × seconds.
//
// A fluid scenario cannot place requests inside a second; event simulation
// over Realise can.
func (t *Traffic) Scenario(name string) (*model.Scenario, error) {
	if t.DurationS > model.MaxDurationS {
		return nil, fmt.Errorf("the log spans %d s; a fluid scenario holds at most %d s (use event simulation)", t.DurationS, model.MaxDurationS)
	}
	if cells := int64(len(t.Keys)) * int64(t.DurationS); cells > MaxScenarioCells {
		return nil, fmt.Errorf("the log has %d keys × %d s = %d key-seconds; a fluid scenario holds at most %d (use event simulation)",
			len(t.Keys), t.DurationS, cells, MaxScenarioCells)
	}
	sc := &model.Scenario{Name: name, DurationS: t.DurationS, Clients: make([]model.Client, len(t.Keys))}
	for i := range t.Keys {
		k := &t.Keys[i]
		c := model.Client{Name: k.Name, Class: k.Class, Stage: k.Stage}
		ts := t.Times(i)
		for a := 0; a < len(ts); {
			sec := ts[a] / secondNs
			b := a + 1
			for b < len(ts) && ts[b]/secondNs == sec {
				b++
			}
			n := float64(b - a)
			// Merge runs of equal counts in consecutive seconds.
			if g := len(c.Segments) - 1; g >= 0 && c.Segments[g].T1 == int(sec) && c.Segments[g].Rate == n {
				c.Segments[g].T1++
			} else {
				c.Segments = append(c.Segments, model.Segment{T0: int(sec), T1: int(sec) + 1, Rate: n})
			}
			a = b
		}
		if c.Name == "" {
			c.Name = "-"
		}
		sc.Clients[i] = c
	}
	return sc, nil
}
