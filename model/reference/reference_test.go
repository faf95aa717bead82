package reference

import (
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// admittedOf returns how many of reqs p admits, per client.
func admittedOf(t *testing.T, p model.Policy, reqs []Request) map[int64]int {
	t.Helper()
	ds, err := Evaluate(p, reqs, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := map[int64]int{}
	for i, d := range ds {
		if d.Admitted {
			n[reqs[i].Client]++
		}
	}
	return n
}

// Worked cases from the docs, by hand.
func TestWorkedCases(t *testing.T) {
	tb := model.Policy{Algorithm: model.TokenBucket, Rate: 1, Capacity: 5, CountIf: "401"}
	var failed []Request
	for i := range 8 {
		failed = append(failed, Request{TimeNs: int64(i) * 100e6, Status: 401})
	}
	if got := admittedOf(t, tb, failed)[0]; got != 5 {
		t.Errorf("count_if 401 on 8 failures: admitted %d, want 5 (caught 3)", got)
	}
	ok := append([]Request(nil), failed...)
	for i := range ok {
		ok[i].Status = 200
	}
	if got := admittedOf(t, tb, ok)[0]; got != 8 {
		t.Errorf("count_if 401 on 8 successes: admitted %d, want 8", got)
	}

	// docs/stacked-limits.md: 5 a minute per integrator, 10 per organisation;
	// A sends 8 in a minute, then B of the same organisation 5.
	var stream []Request
	for i := range 8 {
		stream = append(stream, Request{TimeNs: int64(i) * 1e9, Client: 0})
	}
	for i := range 5 {
		stream = append(stream, Request{TimeNs: int64(10+i) * 1e9, Client: 1})
	}
	per := model.Policy{Algorithm: model.SlidingWindow, WindowS: 60, Limit: 5}
	org := model.Policy{Algorithm: model.SlidingWindow, WindowS: 60, Limit: 10, Key: model.KeyOrg}
	for rc, wantB := range map[model.RejectedCounts]int{model.RejectedCountedByAll: 2, model.RejectedCountedByNone: 5} {
		got := admittedOf(t, Stack(rc, per, org), stream)
		if got[0] != 5 || got[1] != wantB {
			t.Errorf("rejected_counts=%v: A %d B %d, want 5 and %d", rc, got[0], got[1], wantB)
		}
	}

	// Penalty box: the third request at 0 starts a 5 s block; the bucket
	// refills unseen meanwhile.
	box := model.Policy{Algorithm: model.TokenBucket, Rate: 1, Capacity: 2, BlockS: 5}
	times := []int64{0, 0, 0, 1e9, 4_999_999_999, 5e9, 5e9, 5e9}
	want := []Decision{{true, false, false}, {true, false, false}, {false, false, true}, {false, true, false}, {false, true, false}, {true, false, false}, {true, false, false}, {false, false, true}}
	reqs := make([]Request, len(times))
	for i, ts := range times {
		reqs[i].TimeNs = ts
	}
	ds, err := Evaluate(box, reqs, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ds {
		if ds[i] != want[i] {
			t.Errorf("penalty box request %d at %d ns: %+v, want %+v", i, times[i], ds[i], want[i])
		}
	}
}
