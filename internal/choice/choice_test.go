package choice

import "testing"

// Each key decides only when every key before it ties (within Eps for the
// metrics); Structure fills in the structural keys only when they decide.
func TestCompareOrder(t *testing.T) {
	base := Keys{Objective: 1, Other: 5, MeanDelayS: 2, P99DelayS: 4, Optional: 1, Edges: 1, PointID: 7}
	cases := []struct {
		name string
		edit func(k *Keys)
	}{
		{"objective", func(k *Keys) { k.Objective = 0.5; k.Other = 9; k.MeanDelayS = 9 }},
		{"other", func(k *Keys) { k.Objective += 1e-12; k.Other = 4; k.MeanDelayS = 9 }},
		{"mean delay", func(k *Keys) { k.MeanDelayS = 1; k.P99DelayS = 9; k.Optional = 3 }},
		{"p99 delay", func(k *Keys) { k.MeanDelayS -= 1e-12; k.P99DelayS = 3; k.Optional = 3 }},
		{"optional", func(k *Keys) { k.Optional = 0; k.Edges = 2; k.PointID = 9 }},
		{"edges", func(k *Keys) { k.Edges = 0; k.PointID = 9 }},
		{"point", func(k *Keys) { k.PointID = 3 }},
	}
	for _, c := range cases {
		a, b := base, base
		c.edit(&a)
		if !Better(&a, &b) || Better(&b, &a) {
			t.Errorf("%s: not decided by it", c.name)
		}
	}
	a, b := base, base
	if Compare(&a, &b) != 0 {
		t.Error("equal keys differ")
	}
	calls := 0
	lazy := func(k *Keys) { calls++; k.Optional = 0 }
	a, b = base, base
	a.MeanDelayS, a.Structure, b.Structure = 0, lazy, lazy
	if !Better(&a, &b) || calls != 0 {
		t.Errorf("the delay decides, yet Structure ran %d times", calls)
	}
	a.MeanDelayS = b.MeanDelayS
	if Better(&a, &b) || Better(&b, &a) || calls != 2 {
		t.Errorf("Structure ran %d times, want once per candidate", calls)
	}
}
