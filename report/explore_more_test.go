package report

import (
	"context"
	"testing"

	"github.com/ratesweep/ratesweep/recommend"
)

// The further metrics: a run with nginx's delay, clients that react and a
// penalty box carries the delay, amplification, retry latency, time
// blocked and blocks; a run whose requests carry costs carries the false
// cut cost. The ones recommend's flags compare are recommend's own means,
// bit for bit; a run without them carries none.
func TestExploreFurtherMetrics(t *testing.T) {
	react := runSpec(t, `name: react
replicates: 2
scenario:
  name: clients that answer back
  duration_s: 120
  arrivals: poisson
  clients:
    - name: portal
      class: legit
      segments: [[0, 120, 4]]
      on_reject: {retry: backoff, max_retries: 5, base_s: 0.5, cap_s: 30, jitter: full}
    - name: scraper
      class: abusive
      stage: code
      segments: [[20, 80, 18]]
      on_reject: {retry: immediate, max_retries: 10}
sweep:
  - {algorithm: token_bucket, rate: [2, 5], capacity: [20, 60], block_s: [0, 30]}
  - {algorithm: nginx, rate: [5], burst: [10, 50], delay: [0, 1000000]}
`)
	cost := runSpec(t, `name: cost
scenario:
  name: requests that cost
  duration_s: 120
  clients:
    - {name: app, class: legit, segments: [[0, 120, 2]]}
    - {name: reports, class: legit, segments: [[0, 120, 1]], cost: 6}
    - {name: scraper, class: abusive, stage: none, segments: [[0, 120, 8]], cost: 3}
sweep:
  - {algorithm: token_bucket, rate: [4, 8], capacity: [6, 20, 40]}
`)
	for _, tc := range []struct {
		dir  string
		want map[string]bool
	}{
		{react, map[string]bool{"dm": true, "dp": true, "am": true, "rd": true, "bs": true, "bn": true}},
		{cost, map[string]bool{"cu": true, "cup": true}},
		{runSpec(t, tinySpec), map[string]bool{}},
	} {
		_, d := explorePage(t, tc.dir)
		run, err := recommend.ReadRun(context.Background(), tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		cols := map[string][]float64{"dm": d.DM, "dp": d.DP, "am": d.AM, "rd": d.RD, "cu": d.CU, "cup": d.CUP, "bs": d.BS, "bn": d.BN}
		for name, v := range cols {
			if tc.want[name] != (v != nil) {
				t.Errorf("%s: column %s present %v, want %v", tc.dir, name, v != nil, tc.want[name])
			}
			if v != nil && len(v) != len(d.ID) {
				t.Errorf("%s: column %s has %d values for %d settings", tc.dir, name, len(v), len(d.ID))
			}
		}
		for i := range d.ID {
			m := run.Measures[d.Algs[d.Alg[i]]+" "+d.Label[i]]
			if d.AM != nil && (d.AM[i] != m.AmplificationLegit.Mean || d.RD[i] != m.LegitDelayP99S.Mean) {
				t.Errorf("setting %d: amplification %v, p99 %v; recommend reads %v, %v", i, d.AM[i], d.RD[i], m.AmplificationLegit.Mean, m.LegitDelayP99S.Mean)
			}
			if d.CU != nil && (d.CU[i] != m.FalseCutCost.Mean || d.CUP[i] != m.LegitCutCostPct.Mean) {
				t.Errorf("setting %d: false cut cost %v (%v%%); recommend reads %v (%v%%)", i, d.CU[i], d.CUP[i], m.FalseCutCost.Mean, m.LegitCutCostPct.Mean)
			}
			if d.BS != nil && d.BS[i] != m.LegitBlockedS.Mean {
				t.Errorf("setting %d: blocked %v s; recommend reads %v s", i, d.BS[i], m.LegitBlockedS.Mean)
			}
		}
		if tc.dir == react {
			delayed, blocked := false, false
			for i := range d.ID {
				delayed = delayed || d.DM[i] > 0
				blocked = blocked || d.BN[i] > 0
			}
			if !delayed || !blocked {
				t.Errorf("react run: some setting delays %v, some blocks %v; want both", delayed, blocked)
			}
		}
	}
}
