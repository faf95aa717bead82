package model

import "testing"

// A timeline draws the arrivals the sweep simulated: on random arrivals,
// each client's offered and admitted per second add up to the simulator's
// counts for the same seed and replicate.
func TestTimelineIsWhatWasSimulated(t *testing.T) {
	sc, err := ParseScenario([]byte(`name: random
duration_s: 120
arrivals: poisson
clients:
  - name: app
    class: legit
    segments: [[0, 120, 8]]
  - name: burst
    class: abusive
    stage: code
    segments: [[20, 60, 30]]
`))
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	sim := w.NewSimulator()
	for _, p := range []Policy{
		{Algorithm: TokenBucket, Rate: 10, Capacity: 40},
		{Algorithm: SlidingWindow, WindowS: 10, Limit: 90},
		{Algorithm: GCRA, Rate: 9, Capacity: 20},
	} {
		for _, rep := range []int{0, 3} {
			const seed = 7
			sim.SetReplicate(seed, rep)
			var o Outcome
			sim.Run(p, &o)
			offered, admitted := w.Timeline(p, seed, rep)
			for i, c := range o.Clients {
				var off, adm int64
				for s := range offered[i] {
					off += int64(offered[i][s])
					adm += int64(admitted[i][s])
				}
				if off != c.Offered || adm != c.Admitted {
					t.Errorf("%v replicate %d client %d: timeline %d of %d admitted, simulated %d of %d", p, rep, i, adm, off, c.Admitted, c.Offered)
				}
			}
		}
	}
	if !w.HasTimeline(Policy{Algorithm: TokenBucket, Rate: 1, Capacity: 1}) || w.HasTimeline(Policy{Algorithm: TokenBucket, Rate: 1, Capacity: 1, Nodes: 2}) {
		t.Errorf("HasTimeline")
	}
}
