package ingest

import (
	"github.com/ratesweep/ratesweep/model"
)

// DefaultTopKeys is the default number of keys with their own clients row.
const DefaultTopKeys = 20

// Rows groups keys into at most k + 4 output rows (the clients Parquet rows
// of one point): the k keys with the most requests one row each, then one
// "other keys" row per label (legit, abusive design, code, none) for the
// rest, so a million keys never make a million rows.
type Rows struct {
	Names []string
	Class []model.Class
	Stage []model.Stage
	Keys  []int64 // keys in each row
	Of    []int32 // Of[key] = row of key (t.Keys order)
}

// Rows returns the row grouping of t's keys with k top keys (k < 0: all).
func (t *Traffic) Rows(k int) *Rows {
	if k < 0 || k > len(t.Keys) {
		k = len(t.Keys)
	}
	r := &Rows{Of: make([]int32, len(t.Keys))}
	for i := range k {
		key := &t.Keys[i]
		r.add(key.Name, key.Class, key.Stage, 1)
		r.Of[i] = int32(i)
	}
	other := map[model.Stage]int32{}
	for i := k; i < len(t.Keys); i++ {
		key := &t.Keys[i]
		row, ok := other[key.Stage]
		if !ok {
			row = int32(len(r.Names))
			other[key.Stage] = row
			r.add(OtherRowName(key.Stage), key.Class, key.Stage, 0)
		}
		r.Of[i] = row
		r.Keys[row]++
	}
	return r
}

func (r *Rows) add(name string, c model.Class, s model.Stage, keys int64) {
	r.Names = append(r.Names, name)
	r.Class = append(r.Class, c)
	r.Stage = append(r.Stage, s)
	r.Keys = append(r.Keys, keys)
}

// Aggregate sums per-key results (t.Keys order) into per-row results,
// reusing out's storage; a row's BlockedNs is its keys' blocked time
// summed (key-seconds, as a scenario's legit_blocked_s sums clients).
func (r *Rows) Aggregate(keys []model.ClientResult, out []model.ClientResult) []model.ClientResult {
	if cap(out) < len(r.Names) {
		out = make([]model.ClientResult, len(r.Names))
	}
	out = out[:len(r.Names)]
	clear(out)
	for i, res := range keys {
		o := &out[r.Of[i]]
		o.Offered += res.Offered
		o.Admitted += res.Admitted
		o.BlockedNs += res.BlockedNs
	}
	return out
}

// LabelRows groups the keys of several logs (the days a sweep replays as
// replicates) into the same rows for every log: one "keys (label)" row per
// label that some log holds, in the order legit, design, code, none, so a
// clients row means the same in every replicate. It returns one Rows per
// log, sharing names, classes and stages.
func LabelRows(trs []*Traffic) []*Rows {
	var present [4]bool
	for _, t := range trs {
		for i := range t.Keys {
			present[t.Keys[i].Stage] = true
		}
	}
	base := &Rows{}
	row := map[model.Stage]int32{}
	for _, s := range []model.Stage{model.NoStage, model.StageDesign, model.StageCode, model.StageNone} {
		if !present[s] {
			continue
		}
		row[s] = int32(len(base.Names))
		base.add(LabelRowName(s), StageClass(s), s, 0)
	}
	out := make([]*Rows, len(trs))
	for j, t := range trs {
		r := &Rows{Names: base.Names, Class: base.Class, Stage: base.Stage, Keys: make([]int64, len(base.Names)), Of: make([]int32, len(t.Keys))}
		for i := range t.Keys {
			r.Of[i] = row[t.Keys[i].Stage]
			r.Keys[r.Of[i]]++
		}
		out[j] = r
	}
	return out
}
