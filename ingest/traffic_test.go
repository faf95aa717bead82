package ingest

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

func TestRealiseSpreads(t *testing.T) {
	tr, err := build(t, labelLog(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Key c: requests at 0 s, 2 s, 3 s (since the log's first second).
	ci := slices.IndexFunc(tr.Keys, func(k Key) bool { return k.Name == "c" })
	if got := tr.Times(ci); !slices.Equal(got, []int64{0, 2e9, 3e9}) {
		t.Fatalf("times %v", got)
	}
	none := tr.Realise(SpreadNone, 1, 0, nil)
	if !slices.Equal(none[ci], tr.Times(ci)) {
		t.Errorf("none: %v", none[ci])
	}
	even := tr.Realise(SpreadEven, 1, 0, nil)
	if !slices.Equal(even[ci], []int64{5e8, 2.5e9, 3.5e9}) {
		t.Errorf("even: %v", even[ci])
	}
	// Two requests in one second: at 1/4 and 3/4 of it.
	tr2, _ := build(t, clfLine("x", "01/Jan/2020:00:00:00", "/")+clfLine("x", "01/Jan/2020:00:00:00", "/"), Options{})
	if got := tr2.Realise(SpreadEven, 0, 0, nil)[0]; !slices.Equal(got, []int64{2.5e8, 7.5e8}) {
		t.Errorf("even pair: %v", got)
	}
	r1 := tr.Realise(SpreadRandom, 7, 3, nil)
	r2 := tr.Realise(SpreadRandom, 7, 3, nil)
	r3 := tr.Realise(SpreadRandom, 7, 4, nil)
	same, differ := true, false
	for i := range tr.Keys {
		same = same && slices.Equal(r1[i], r2[i])
		differ = differ || !slices.Equal(r1[i], r3[i])
		base := tr.Times(i)
		for j, v := range r1[i] {
			if v < base[j] || v >= base[j]+secondNs || (j > 0 && v < r1[i][j-1]) {
				t.Fatalf("key %d: %v outside its second or unsorted (%v)", i, r1[i], base)
			}
		}
	}
	if !same || !differ {
		t.Errorf("random spread: same seed same times %v, other replicate differs %v", same, differ)
	}
	if !tr.Stochastic(SpreadRandom) || tr.Stochastic(SpreadEven) {
		t.Errorf("Stochastic")
	}
	// Buffers are reused.
	buf := tr.Realise(SpreadEven, 0, 0, r1)
	if &buf[0][0] != &r1[0][0] {
		t.Errorf("buffer not reused")
	}
}

func TestScenarioFromLog(t *testing.T) {
	// antlr: 431 keys × 41,253 s fit a fluid scenario.
	c := realLogs[1]
	tr := loadReal(t, c.path, Options{})
	sc, err := tr.Scenario("log")
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	var counts []int32
	for i := range tr.Keys {
		counts = tr.Counts(i, counts)
		if !slices.Equal(w.Offered(i), counts) {
			t.Fatalf("key %d: per-second counts differ", i)
		}
	}
	// A generous policy admits everything; a tight one cuts.
	sim := w.NewSimulator()
	var out model.Outcome
	sim.Run(model.Policy{Algorithm: model.TokenBucket, Rate: 1000, Capacity: 1000}, &out)
	if out.OfferedLegit != c.requests || out.FalseCut != 0 {
		t.Errorf("offered %d cut %d", out.OfferedLegit, out.FalseCut)
	}
	sim.Run(model.Policy{Algorithm: model.FixedWindow, WindowS: 60, Limit: 10}, &out)
	if out.FalseCut == 0 {
		t.Errorf("10 per minute cut nothing")
	}
	// elastic: 1,753 keys × 83 h is too dense for a fluid scenario.
	tr = loadReal(t, realLogs[2].path, Options{})
	if _, err := tr.Scenario("log"); err == nil || !strings.Contains(err.Error(), "use event simulation") {
		t.Errorf("elastic: %v", err)
	}
}

func TestRowsTopKeysAndOthers(t *testing.T) {
	rules := []Rule{{Name: "wp", Stage: model.StageDesign, Path: mustRe(`^/wp-`)}, {Name: "d", Stage: model.StageNone, Keys: map[string]bool{"d": true}}}
	tr, _ := build(t, labelLog(), Options{Rules: rules})
	// Keys by requests: b 6, c 3, a 2, d 1, e 1.
	r := tr.Rows(2)
	if !slices.Equal(r.Names, []string{"b", "c", "other keys (abusive, design)", "other keys (abusive, none)", "other keys (legit)"}) {
		t.Fatalf("rows %q", r.Names)
	}
	if !slices.Equal(r.Keys, []int64{1, 1, 1, 1, 1}) || r.Class[2] != model.Abusive || r.Stage[4] != model.NoStage {
		t.Errorf("rows %+v", r)
	}
	res := make([]model.ClientResult, len(tr.Keys))
	for i, k := range tr.Keys {
		res[i] = model.ClientResult{Offered: k.Requests, Admitted: 1}
	}
	agg := r.Aggregate(res, nil)
	if agg[0].Offered != 6 || agg[2].Offered != 2 || agg[4].Admitted != 1 {
		t.Errorf("aggregate %+v", agg)
	}
	if all := tr.Rows(-1); len(all.Names) != len(tr.Keys) {
		t.Errorf("all rows %d", len(all.Names))
	}
}

func TestProfile(t *testing.T) {
	tr, _ := build(t, labelLog(), Options{})
	p := tr.Profile(2, 10)
	// Seconds 0..300: 3 requests at 0 s, 1 each at 1, 2, 3, 9, 60..64, 300.
	if p.Requests != 13 || p.DurationS != 301 || p.PeakS != 3 || p.P99S != 1 || p.PeakW != 7 || len(p.Top) != 2 {
		t.Errorf("profile %+v", p)
	}
	if q := p.LegitKeysW; q != (Quantiles{N: 5, P50: 2, P90: 5, P99: 5, Max: 5}) || p.AbusiveKeysW.N != 0 {
		t.Errorf("key window quantiles %+v %+v", q, p.AbusiveKeysW)
	}
	if k := p.Top[0]; k.Key.Name != "b" || k.PeakS != 1 || k.PeakW != 5 || k.ActiveS != 6 || k.FirstS != 60 || k.LastS != 300 {
		t.Errorf("top key %+v", k)
	}
}

func TestMerge(t *testing.T) {
	rules := []Rule{{Name: "errors", Stage: model.StageNone, Scope: ScopeRequest, Statuses: []StatusRange{{500, 599}}}}
	tr, _ := build(t, labelLog(), Options{Rules: rules})
	s := tr.Merge(tr.Realise(SpreadEven, 0, 0, nil))
	if int64(len(s.Times)) != tr.Requests() || !slices.IsSorted(s.Times) {
		t.Fatalf("merged %d of %d, sorted %v", len(s.Times), tr.Requests(), slices.IsSorted(s.Times))
	}
	per := make([]int64, len(tr.Keys))
	abusive := 0
	for i, k := range s.Keys {
		per[k]++
		if s.Labels[i] != model.NoStage {
			abusive++
			if tr.Keys[k].Name != "c" {
				t.Errorf("abusive request of key %s", tr.Keys[k].Name)
			}
		}
	}
	for i, k := range tr.Keys {
		if per[i] != k.Requests {
			t.Errorf("key %s: %d merged of %d", k.Name, per[i], k.Requests)
		}
	}
	if abusive != 1 {
		t.Errorf("%d abusive requests merged, want 1", abusive)
	}
}

func TestRealiserAndClients(t *testing.T) {
	tr, _ := build(t, labelLog(), Options{Rules: []Rule{{Name: "wp", Stage: model.StageDesign, Path: mustRe(`^/wp-`)}}})
	got := tr.Realiser(SpreadRandom)(3, 1, nil)
	want := tr.Realise(SpreadRandom, 3, 1, nil)
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("key %d: %v vs %v", i, got[i], want[i])
		}
	}
	cs := tr.Clients()
	if len(cs) != len(tr.Keys) || cs[2].Name != "a" || cs[2].Class != model.Abusive || cs[2].Stage != model.StageDesign || cs[0].Segments != nil {
		t.Errorf("clients %+v", cs)
	}
}

// permute puts every column's element i at dest[i], for the small (cycles)
// and the large (regions, then cycles) permutations alike.
func TestPermute(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	for _, n := range []int{0, 1, 7, 1000, 65536, 65537, 200_000, 1 << 18} {
		for _, withRules := range []bool{false, true} {
			c := columns{times: make([]int64, n)}
			if withRules {
				c.prec, c.stage, c.rate = make([]uint8, n), make([]model.Stage, n), make([]uint16, n)
			}
			for i := range n {
				c.times[i] = rng.Int64()
				if withRules {
					c.prec[i], c.stage[i], c.rate[i] = uint8(rng.Uint32()), model.Stage(rng.Uint32()), uint16(rng.Uint32())
				}
			}
			dest := make([]int32, n)
			for i, p := range rng.Perm(n) {
				dest[i] = int32(p)
			}
			want := columns{times: make([]int64, n)}
			if withRules {
				want.prec, want.stage, want.rate = make([]uint8, n), make([]model.Stage, n), make([]uint16, n)
			}
			for i, d := range dest {
				want.times[d] = c.times[i]
				if withRules {
					want.prec[d], want.stage[d], want.rate[d] = c.prec[i], c.stage[i], c.rate[i]
				}
			}
			c.permute(dest)
			if !slices.Equal(c.times, want.times) || !slices.Equal(c.prec, want.prec) ||
				!slices.Equal(c.stage, want.stage) || !slices.Equal(c.rate, want.rate) {
				t.Fatalf("n=%d rules=%v: permuted columns differ", n, withRules)
			}
		}
	}
}
