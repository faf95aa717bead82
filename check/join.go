package check

// Joining the two sides' points: by point id where the grids agree, else by policy label.

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"slices"

	"github.com/ratesweep/ratesweep/sweep"
)

// joiner joins the run's points to the baseline's.
type joiner struct {
	ctx       context.Context
	res       *Result
	base, run *side
	keyCol    string

	index    []keyEntry // the baseline's keys by hash, built at the first mismatch
	seed     maphash.Seed
	matched  idSet // baseline ids matched (or skipped as duplicates)
	pending  []pendingPoint
	ranges   [][2]int64 // per baseline file: its point_id range, read when needed
	basePts  int64
	dupBase  int
	dupRun   int
	runCount int64
}

type keyEntry struct {
	hash uint64
	id   int64
}

// pendingPoint is a run point whose baseline point the cursor has passed.
type pendingPoint struct {
	baseID int64
	run    sidePoint
}

func (j *joiner) join() error {
	res := j.res
	bc := newCursor(j.base.points(j.ctx, j.keyCol, res.Metrics))
	defer bc.stop()
	rc := newCursor(j.run.points(j.ctx, j.keyCol, res.Metrics))
	defer rc.stop()
	for ; rc.p != nil; rc.advance() {
		rp := rc.p
		if j.index == nil {
			if bc.p != nil && bc.p.key == rp.key {
				j.matchPoint(bc.p, rp)
				bc.advance()
				continue
			}
			if bc.err != nil {
				return bc.err
			}
			if err := j.buildIndex(); err != nil {
				return err
			}
		}
		bid, ok := j.lookup(rp.key)
		switch {
		case !ok:
			res.Added++
			if res.Options.MaxRows <= 0 || len(res.AddedPoints) < res.Options.MaxRows {
				res.AddedPoints = append(res.AddedPoints, rp.key)
			}
			continue
		case j.matched.has(bid):
			j.dupRun++
			continue
		}
		for bc.p != nil && bc.p.id < bid {
			bc.advance()
		}
		if bc.p != nil && bc.p.id == bid {
			if err := j.matchKeyed(bc.p, rp); err != nil {
				return err
			}
			bc.advance()
			continue
		}
		if bc.err != nil {
			return bc.err
		}
		p := *rp
		p.vals = slices.Clone(p.vals) // not the batch's array
		j.pending = append(j.pending, pendingPoint{bid, p})
		if len(j.pending) >= pendingMax {
			if err := j.matchPending(); err != nil {
				return err
			}
		}
	}
	if rc.err != nil {
		return rc.err
	}
	j.runCount = rc.count
	if err := bc.err; err != nil {
		return err
	}
	switch {
	case j.index == nil && bc.p == nil:
		j.basePts = bc.count // point for point, all matched
	case j.index == nil:
		// The baseline has more: place its duplicates, count the rest.
		if err := j.buildIndex(); err != nil {
			return err
		}
	}
	if err := j.matchPending(); err != nil {
		return err
	}
	res.Baseline.Points, res.Run.Points = j.basePts, j.runCount
	if j.dupBase > 0 || j.dupRun > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("points with the same parameters as an earlier point were skipped: %d in the baseline, %d in the run", j.dupBase, j.dupRun))
	}
	return j.listRemoved()
}

// matchPoint compares a baseline point with the run's point of the same key.
func (j *joiner) matchPoint(bp, rp *sidePoint) {
	j.matched.add(bp.id)
	j.res.comparePoint(&checkPoint{key: bp.key, baseID: bp.id, runID: rp.id, base: bp.vals, run: rp.vals})
}

// matchKeyed is matchPoint for a pair placed by the index, whose keys only
// share a hash so far.
func (j *joiner) matchKeyed(bp, rp *sidePoint) error {
	if bp.key != rp.key {
		return fmt.Errorf("check: the keys %q and %q share a 64-bit hash; cannot join (please report this)", bp.key, rp.key)
	}
	j.matchPoint(bp, rp)
	return nil
}

// buildIndex reads the baseline's keys once and sorts their hashes. A key
// seen before (the same parameters at another point_id) keeps its first
// point; the others are skipped.
func (j *joiner) buildIndex() error {
	j.seed = maphash.MakeSeed()
	j.index = make([]keyEntry, 0, min(j.base.gridPoints, j.base.info.Rows)) // no doubling at 10M points
	for batch, err := range j.base.points(j.ctx, j.keyCol, nil) {
		if err != nil {
			return err
		}
		for _, p := range batch {
			j.index = append(j.index, keyEntry{maphash.String(j.seed, p.key), p.id})
		}
	}
	j.basePts = int64(len(j.index))
	slices.SortFunc(j.index, func(a, b keyEntry) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	w := 0
	for i, e := range j.index {
		if i > 0 && e.hash == j.index[w-1].hash {
			j.dupBase++
			j.matched.add(e.id) // never reported as removed
			continue
		}
		j.index[w] = e
		w++
	}
	j.index = slices.Clip(j.index[:w])
	return nil
}

// lookup returns the baseline point_id of key.
func (j *joiner) lookup(key string) (int64, bool) {
	h := maphash.String(j.seed, key)
	i, ok := slices.BinarySearchFunc(j.index, h, func(e keyEntry, h uint64) int { return cmp.Compare(e.hash, h) })
	if !ok {
		return 0, false
	}
	return j.index[i].id, true
}

// pendingMax bounds the run points held for matchPending (about 200 bytes
// each with every metric); a variable for tests.
var pendingMax = 1 << 17

// matchPending compares the run points that came in another order than
// the baseline's, in another pass over the baseline files that hold their
// point ids (by the files' point_id statistics). It runs whenever
// pendingMax points wait, so a reordered grid costs passes, not memory.
func (j *joiner) matchPending() error {
	if len(j.pending) == 0 {
		return nil
	}
	slices.SortFunc(j.pending, func(a, b pendingPoint) int { return cmp.Compare(a.baseID, b.baseID) })
	lo, hi := j.pending[0].baseID, j.pending[len(j.pending)-1].baseID
	if j.ranges == nil {
		j.ranges = make([][2]int64, len(j.base.files))
		for i, f := range j.base.files {
			a, b, ok := sweep.IDRange(f)
			if !ok {
				a, b = math.MinInt64, math.MaxInt64
			}
			j.ranges[i] = [2]int64{a, b}
		}
	}
	only := func(fi int) bool { return j.ranges[fi][0] <= hi && lo <= j.ranges[fi][1] }
	k := 0
	for batch, err := range j.base.pointsOf(j.ctx, j.keyCol, j.res.Metrics, only) {
		if err != nil {
			return err
		}
		for i := range batch {
			for k < len(j.pending) && j.pending[k].baseID == batch[i].id {
				if j.matched.has(batch[i].id) {
					j.dupRun++
				} else if err := j.matchKeyed(&batch[i], &j.pending[k].run); err != nil {
					return err
				}
				k++
			}
		}
		if k == len(j.pending) {
			break
		}
	}
	if k < len(j.pending) {
		return fmt.Errorf("check: baseline point_id %d, placed by the index, was not found in %s again", j.pending[k].baseID, j.base.info.Dir)
	}
	j.pending = j.pending[:0]
	return nil
}

// listRemoved counts the baseline points no run point matched and lists
// their keys in baseline order (at most MaxRows), in a pass over the
// baseline's keys when there are any.
func (j *joiner) listRemoved() error {
	res := j.res
	res.Removed = int(j.basePts - j.matched.n)
	if res.Removed == 0 {
		return nil
	}
	limit := res.Options.MaxRows
	for batch, err := range j.base.points(j.ctx, j.keyCol, nil) {
		if err != nil {
			return err
		}
		for _, p := range batch {
			if !j.matched.has(p.id) {
				res.RemovedPoints = append(res.RemovedPoints, p.key)
			}
		}
		if limit > 0 && len(res.RemovedPoints) >= limit {
			res.RemovedPoints = res.RemovedPoints[:limit]
			break
		}
	}
	return nil
}

// idSet is a set of point ids in pages of 65,536 bits, so a dense run of
// ids costs a bit each.
type idSet struct {
	pages map[int64]*[1024]uint64
	n     int64
}

// add inserts id and reports whether it was new.
func (s *idSet) add(id int64) bool {
	if s.pages == nil {
		s.pages = map[int64]*[1024]uint64{}
	}
	p := s.pages[id>>16]
	if p == nil {
		p = new([1024]uint64)
		s.pages[id>>16] = p
	}
	w, bit := (id&0xffff)>>6, uint64(1)<<uint(id&63)
	if p[w]&bit != 0 {
		return false
	}
	p[w] |= bit
	s.n++
	return true
}

// has reports whether id is in the set.
func (s *idSet) has(id int64) bool {
	p := s.pages[id>>16]
	return p != nil && p[(id&0xffff)>>6]&(uint64(1)<<uint(id&63)) != 0
}
