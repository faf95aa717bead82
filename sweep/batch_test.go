package sweep

import (
	"context"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ratesweep/ratesweep/model"
)

// The clients batches' identity columns (point_id, replicate, client, class,
// stage) are right in every batch, whatever row a batch starts at: with 3
// clients and 2 replicates, batches of batchRows rows start mid-cycle.
func TestClientsBatchPhases(t *testing.T) {
	s, err := ParseSpec([]byte(`name: batches
scenario: {name: s, duration_s: 300, clients: [
  {name: a, class: legit, segments: [[0, 300, 4]]},
  {name: c, class: abusive, stage: none, segments: [[0, 300, 26]]},
  {name: d, class: abusive, stage: code, segments: [[40, 100, 18]]}]}
replicates: 2
sweep:
  - algorithm: fixed_window
    window_s: [60]
    limit: {from: 1, to: 30000, step: 1}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	const nc, reps = 3, 2
	src, err := newSource(context.Background(), s, false)
	if err != nil {
		t.Fatal(err)
	}
	r := &partResult{reps: reps, mem: memory.DefaultAllocator}
	r.names, r.classes, r.stages = src.rows()
	part := Part{From: 100, To: 30000} // one part of 179,400 clients rows
	var done atomic.Int64
	if err := simulatePart(context.Background(), NewGrid(s), src.newSim(), s.Seed, part, r, &done, nil); err != nil {
		t.Fatal(err)
	}
	if rows := r.clientRows(); rows <= 2*batchRows || batchRows%nc == 0 {
		t.Fatalf("%d clients rows in batches of %d: not a test of batch phases", rows, batchRows)
	}
	_, schema := schemas(map[string]string{})
	want := [nc]struct{ client, class, stage string }{{"a", "legit", ""}, {"c", "abusive", "none"}, {"d", "abusive", "code"}}
	for lo := 0; lo < r.clientRows(); lo += batchRows {
		rec := r.clientsBatch(schema, lo, min(lo+batchRows, r.clientRows()))
		ids, rp := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int32)
		cl, class, stage := rec.Column(2).(*array.Dictionary), rec.Column(3).(*array.Dictionary), rec.Column(4).(*array.Dictionary)
		name := func(d *array.Dictionary, i int) string {
			if d.IsNull(i) {
				return ""
			}
			return d.Dictionary().(*array.String).Value(d.GetValueIndex(i))
		}
		for i := range int(rec.NumRows()) {
			row, w := lo+i, want[(lo+i)%nc]
			if ids.Value(i) != part.From+int64(row/(reps*nc)) || rp.Value(i) != int32(row/nc%reps) ||
				name(cl, i) != w.client || name(class, i) != w.class || name(stage, i) != w.stage {
				t.Fatalf("clients row %d: point %d replicate %d %q %q %q, want %d %d %+v", row, ids.Value(i), rp.Value(i),
					name(cl, i), name(class, i), name(stage, i), part.From+int64(row/(reps*nc)), row/nc%reps, w)
			}
		}
		rec.Release()
	}
}

// TestSetRowFollowsMetricColumns checks that setRow stores each field of
// model.Metrics in the column metricColumns gives it.
func TestSetRowFollowsMetricColumns(t *testing.T) {
	r := &partResult{reps: 1, names: []string{"a"}}
	r.reset(3)
	var m model.Metrics
	base := unsafe.Pointer(&m)
	for i, mc := range metricColumns() {
		*(*uint64)(unsafe.Add(base, mc.offset)) = uint64(1000 + i)
	}
	r.setRow(1, []model.ClientResult{{Offered: 5, Admitted: 3}}, &m)
	if len(metricColumns()) != metricWordCount {
		t.Fatalf("%d metric columns, metricWordCount %d", len(metricColumns()), metricWordCount)
	}
	for i := range metricColumns() {
		if got := r.metricWord(i, 1); got != uint64(1000+i) {
			t.Errorf("metric column %d holds %d, want %d", i, got, 1000+i)
		}
	}
	if cut := r.cutRows(make([]int64, 1), 1)[0]; r.offeredAt(1) != 5 || r.admitted[1] != 3 || cut != 2 {
		t.Errorf("client row: offered %d admitted %d cut %d, want 5 3 2", r.offeredAt(1), r.admitted[1], cut)
	}
}

// TestSetRowColumnsKeptAsOneValue stores rows whose metrics and offered
// counts hold one value for a while and then differ, in the order the
// replicates interleave them, and reads every row back (metricWord,
// offeredAt, the batches' arrays).
func TestSetRowColumnsKeptAsOneValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 17))
	for range 200 {
		reps, nc, n := 1+rng.IntN(3), 1+rng.IntN(4), 1+rng.IntN(300)
		r := &partResult{reps: reps, names: make([]string, nc)}
		r.reset(n)
		nrows := n * reps
		wantM := make([][metricWordCount]uint64, nrows)
		wantO := make([]int64, nrows*nc)
		switchAt := [metricWordCount]int{}
		for c := range switchAt {
			switchAt[c] = rng.IntN(2 * nrows) // past the end: never varies
		}
		offeredAt := rng.IntN(2 * nrows)
		k := 0
		for rep := range reps {
			for pt := range n {
				row := pt*reps + rep
				var m model.Metrics
				base := unsafe.Pointer(&m)
				for c, mc := range metricColumns() {
					v := uint64(7)
					if k >= switchAt[c] {
						v = rng.Uint64N(3)
					}
					*(*uint64)(unsafe.Add(base, mc.offset)) = v
					wantM[row][c] = v
				}
				cl := make([]model.ClientResult, nc)
				for i := range cl {
					cl[i].Offered = int64(10 + i)
					if k >= offeredAt {
						cl[i].Offered = int64(rng.IntN(3))
					}
					wantO[row*nc+i] = cl[i].Offered
				}
				r.setRow(row, cl, &m)
				k++
			}
		}
		for row := range nrows {
			for c := range metricWordCount {
				if got := r.metricWord(c, row); got != wantM[row][c] {
					t.Fatalf("row %d column %d: %d, want %d", row, c, got, wantM[row][c])
				}
			}
			for i := range nc {
				if got := r.offeredAt(row*nc + i); got != wantO[row*nc+i] {
					t.Fatalf("client row %d: offered %d, want %d", row*nc+i, got, wantO[row*nc+i])
				}
			}
		}
		lo := rng.IntN(nrows*nc + 1)
		hi := lo + rng.IntN(nrows*nc-lo+1)
		for i, cut := range r.cutRows(make([]int64, hi-lo), lo) { // admitted 0: cut = offered
			if cut != wantO[lo+i] {
				t.Fatalf("cut [%d, %d) row %d: %d, want %d", lo, hi, i, cut, wantO[lo+i])
			}
		}
		if hi > lo {
			arr := r.offeredArray(lo, hi-lo).(*array.Int64)
			for i := range hi - lo {
				if arr.Value(i) != wantO[lo+i] {
					t.Fatalf("offered array [%d, %d) row %d: %d, want %d", lo, hi, i, arr.Value(i), wantO[lo+i])
				}
			}
			arr.Release()
		}
		lo = rng.IntN(nrows)
		hi = lo + 1 + rng.IntN(nrows-lo)
		cols := r.metricArrays(nil, lo, hi-lo)
		for c, col := range cols {
			for i := range hi - lo {
				var got uint64
				switch a := col.(type) {
				case *array.Int64:
					got = uint64(a.Value(i))
				case *array.Float64:
					got = math.Float64bits(a.Value(i))
				}
				if got != wantM[lo+i][c] {
					t.Fatalf("metric array %d [%d, %d) row %d: %d, want %d", c, lo, hi, i, got, wantM[lo+i][c])
				}
			}
			col.Release()
		}
	}
}

// TestParamColumnsKeptAsOneValue fills parameter columns whose values hold
// for a while and then change (and some that never change), with one and
// with several replicates, and reads every row back from the batches'
// arrays against Policy.Values.
func TestParamColumnsKeptAsOneValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 3))
	vals := make([]float64, len(model.Params))
	for range 100 {
		n, reps := 1+rng.IntN(200), 1+rng.IntN(3)
		r := &partResult{reps: reps, names: []string{"a"}, mem: memory.DefaultAllocator}
		r.policies = make([]model.Policy, n)
		at := [3]int{rng.IntN(2 * n), rng.IntN(2 * n), rng.IntN(2 * n)}
		for i := range r.policies {
			p := model.Policy{Algorithm: model.TokenBucket, Rate: 2, Capacity: 10, Nodes: 1}
			if i >= at[0] {
				p.Capacity = int64(rng.IntN(5))
			}
			if i >= at[1] {
				p.Rate = float64(rng.IntN(5)) / 2
			}
			if i >= at[2] {
				p.Key = model.Key(rng.IntN(2))
			}
			r.policies[i] = p
		}
		if rng.IntN(2) == 0 { // Grid.Policies' changed: the one parameter that may differ
			r.changed = make([]int8, n)
			prev := make([]float64, len(model.Params))
			for i := range r.policies {
				r.policies[i].Values(vals)
				r.changed[i] = -1
				var diff []int
				for j := range vals {
					if vals[j] != prev[j] {
						diff = append(diff, j)
					}
				}
				switch {
				case i == 0 || rng.IntN(4) == 0:
				case len(diff) == 1:
					r.changed[i] = int8(diff[0])
				case len(diff) == 0:
					r.changed[i] = int8(rng.IntN(len(vals)))
				}
				copy(prev, vals)
			}
		}
		r.reset(n)
		r.prepareParams()
		for i, p := range r.policies {
			if got, want := string(r.labelData[r.labelOffsets[i]:r.labelOffsets[i+1]]), p.Canonical(); got != want {
				t.Fatalf("point %d of %d: label %q, want %q", i, n, got, want)
			}
		}
		lo := rng.IntN(n * reps)
		cnt := 1 + rng.IntN(n*reps-lo)
		for j, prm := range model.Params {
			arr := r.paramArray(lo, cnt, j)
			for i := range cnt {
				p := r.policies[(lo+i)/reps]
				p.Values(vals)
				if !p.Algorithm.Takes(prm.Name) {
					if !arr.IsNull(i) {
						t.Fatalf("%s row %d: not null", prm.Name, lo+i)
					}
					continue
				}
				var got float64
				switch a := arr.(type) {
				case *array.Int64:
					got = float64(a.Value(i))
				case *array.Float64:
					got = a.Value(i)
				case *array.Dictionary:
					got = float64(a.GetValueIndex(i))
				}
				if got != vals[j] {
					t.Fatalf("%s row %d (of %d, %d replicates): %v, want %v", prm.Name, lo+i, n, reps, got, vals[j])
				}
			}
			arr.Release()
		}
	}
}

// TestSetFastRunEqualsSetRow stores the same rows twice, once point by point
// (setRow) and once with runs of points mixed in (setFastRun, as RunFastCols
// leaves them: admitted in place, Stride apart), in the order the
// replicates interleave them, with metrics and offered counts that hold one
// value for a while and then differ, and compares every column.
func TestSetFastRunEqualsSetRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 17))
	for range 300 {
		reps, nc, n := 1+rng.IntN(3), 1+rng.IntN(4), 1+rng.IntN(300)
		ref := &partResult{reps: reps, names: make([]string, nc)}
		got := &partResult{reps: reps, names: make([]string, nc)}
		ref.reset(n)
		got.reset(n)
		var switchAt [metricWordCount]int
		for c := range switchAt {
			switchAt[c] = rng.IntN(2 * n * reps) // past the end: never varies
		}
		offeredAt := rng.IntN(2 * n * reps)
		k := 0 // rows stored so far
		value := func(c int) uint64 {
			if k >= switchAt[c] {
				return rng.Uint64N(3)
			}
			return 7
		}
		for rep := range reps {
			for pt := 0; pt < n; {
				run := 1 + rng.IntN(min(n-pt, 40))
				// One run's points: Fixed metrics and offered counts hold
				// for the run, the others per point.
				var d model.FastRun
				d.Caught, d.Missed, d.FalseCut = make([]int64, run), make([]int64, run), make([]int64, run)
				d.CutDesign, d.CutCode, d.CutNone = make([]int64, run), make([]int64, run), make([]int64, run)
				d.LegitAccountsLocked = make([]int64, run)
				d.LegitCutPct, d.MissedPct, d.OnlyHerePct = make([]float64, run), make([]float64, run), make([]float64, run)
				cols := fastColumns(&d)
				base := unsafe.Pointer(&d.Fixed)
				for c, mc := range metricColumns() {
					if cols[c] == nil {
						*(*uint64)(unsafe.Add(base, mc.offset)) = value(c)
					} else {
						for j := range run {
							cols[c][j] = value(c)
						}
					}
				}
				d.Offered = make([]int64, nc)
				for i := range d.Offered {
					d.Offered[i] = int64(10 + i)
					if k >= offeredAt {
						d.Offered[i] = int64(rng.IntN(3))
					}
				}
				d.Stride = reps * nc
				d.Admitted = got.admitted[(pt*reps+rep)*nc:]
				for j := range run {
					m := d.Metrics(j)
					cl := make([]model.ClientResult, nc)
					for i := range cl {
						cl[i] = model.ClientResult{Offered: d.Offered[i], Admitted: rng.Int64N(d.Offered[i] + 1)}
						d.Admitted[j*d.Stride+i] = cl[i].Admitted
					}
					ref.setRow((pt+j)*reps+rep, cl, &m)
				}
				if rng.IntN(3) == 0 { // point by point here too
					for j := range run {
						m := d.Metrics(j)
						cl := make([]model.ClientResult, nc)
						for i := range cl {
							cl[i] = model.ClientResult{Offered: d.Offered[i], Admitted: d.Admitted[j*d.Stride+i]}
						}
						got.setRow((pt+j)*reps+rep, cl, &m)
					}
				} else {
					got.setFastRun(pt, rep, run, &d)
				}
				pt += run
				k += run
			}
		}
		for row := range n * reps {
			for c := range metricWordCount {
				if g, w := got.metricWord(c, row), ref.metricWord(c, row); g != w {
					t.Fatalf("row %d column %d: %d, want %d", row, c, g, w)
				}
			}
			for i := range nc {
				j := row*nc + i
				if got.offeredAt(j) != ref.offeredAt(j) || got.admitted[j] != ref.admitted[j] {
					t.Fatalf("client row %d: offered %d admitted %d, want %d %d", j,
						got.offeredAt(j), got.admitted[j], ref.offeredAt(j), ref.admitted[j])
				}
			}
		}
		if got.unmeasured != ref.unmeasured || got.metricSame != ref.metricSame || got.offeredSame != ref.offeredSame {
			t.Fatalf("unmeasured %d, same %v %v; want %d, %v %v", got.unmeasured, got.metricSame, got.offeredSame, ref.unmeasured, ref.metricSame, ref.offeredSame)
		}
	}
}
