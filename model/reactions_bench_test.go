package model_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// benchReactScenario is 3,600 s of 1,000 clients with Poisson arrivals: 900
// legitimate clients at 0.2 requests a second backing off with full jitter
// and honouring Retry-After, 100 abusive ones at 2 a second retrying at
// once; with react false, the same traffic without reactions.
func benchReactScenario(b *testing.B, react bool) *model.Workload {
	var y strings.Builder
	y.WriteString("name: bench\nduration_s: 3600\narrivals: poisson\nclients:\n")
	for i := range 1000 {
		class, rate, on := "legit", 0.2, "{retry: backoff, max_retries: 5, base_s: 1, cap_s: 60, jitter: full, honour_retry_after: true}"
		if i >= 900 {
			class, rate, on = "abusive\n    stage: code", 2, "{retry: immediate, max_retries: 3}"
		}
		fmt.Fprintf(&y, "  - name: c%d\n    class: %s\n    segments: [[0, 3600, %g]]\n", i, class, rate)
		if react {
			fmt.Fprintf(&y, "    on_reject: %s\n", on)
		}
	}
	sc, err := model.ParseScenario([]byte(y.String()))
	if err != nil {
		b.Fatal(err)
	}
	w, err := model.NewWorkload(sc)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkReactions runs a few policies over the 1,000-client hour with
// reactions and, interleaved, without (the open-loop event simulation),
// reporting decisions (requests that reached the limiter) per second.
func BenchmarkReactions(b *testing.B) {
	policies := []model.Policy{
		{Algorithm: model.TokenBucket, Rate: 0.5, Capacity: 5},
		{Algorithm: model.GCRA, Rate: 0.5, Capacity: 5},
		{Algorithm: model.SlidingWindow, WindowS: 60, Limit: 20},
		{Algorithm: model.FixedWindow, WindowS: 60, Limit: 20},
	}
	sims := map[bool]*model.Simulator{}
	for _, react := range []bool{true, false} {
		sims[react] = benchReactScenario(b, react).NewSimulator()
		sims[react].SetReplicate(1, 0)
	}
	for _, p := range policies {
		for _, react := range []bool{true, false} {
			name := map[bool]string{true: "reactions", false: "open-loop"}[react]
			b.Run(fmt.Sprintf("%v/%s", p.Algorithm, name), func(b *testing.B) {
				var out model.Outcome
				var decisions int64
				for b.Loop() {
					sims[react].Run(p, &out)
					if react {
						decisions += out.Reactions.Attempts
					} else {
						decisions += out.OfferedLegit + out.OfferedAbusive
					}
				}
				b.ReportMetric(float64(decisions)/b.Elapsed().Seconds(), "decisions/s")
			})
		}
	}
}
