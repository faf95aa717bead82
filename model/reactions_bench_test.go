package model_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

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

// reactPolicies is how many of the benchmark grid's 1,000 policies
// BenchmarkReactionsHour runs (a fraction for a busy machine:
// go test ./model -bench ReactionsHour -args -react-policies 100).
var reactPolicies = flag.Int("react-policies", 1000, "BenchmarkReactionsHour: policies of the 1,000-policy grid to run")

// hourGrid is 1,000 policies, 250 each of token_bucket and gcra
// (rate 0.1–1 × capacity 1–25) and of sliding_window and fixed_window
// (window 10 or 60 s × limit 1–125), in grid order.
func hourGrid() []model.Policy {
	var ps []model.Policy
	for _, alg := range []model.Algorithm{model.TokenBucket, model.GCRA} {
		for r := 1; r <= 10; r++ {
			for c := 1; c <= 25; c++ {
				ps = append(ps, model.Policy{Algorithm: alg, Rate: float64(r) / 10, Capacity: int64(c)})
			}
		}
	}
	for _, alg := range []model.Algorithm{model.SlidingWindow, model.FixedWindow} {
		for _, w := range []int{10, 60} {
			for l := 1; l <= 125; l++ {
				ps = append(ps, model.Policy{Algorithm: alg, WindowS: w, Limit: int64(l)})
			}
		}
	}
	return ps
}

// BenchmarkReactionsHour is the size reactions must run at: the
// 3,600 s, 1,000-client hour (benchReactScenario) over 1,000 policies, one
// core. Each op is one round: every policy with reactions (A), then every
// policy on the same traffic without them, the open-loop event simulation
// (B), so rounds interleave A B A B. It reports each side's median
// decisions per second over the rounds (requests that reached the limiter:
// attempts with reactions, requests offered without) and the load average
// before and after; each round is logged. make bench-reactions runs it.
func BenchmarkReactionsHour(b *testing.B) {
	ps := hourGrid()
	if n := *reactPolicies; n > 0 && n < len(ps) {
		// An even fraction of the grid: every k-th policy.
		step := float64(len(ps)) / float64(n)
		var sub []model.Policy
		for i := range n {
			sub = append(sub, ps[int(float64(i)*step)])
		}
		ps = sub
	}
	var sims [2]*model.Simulator // reactions, open loop
	for i, react := range []bool{true, false} {
		sims[i] = benchReactScenario(b, react).NewSimulator()
		sims[i].SetReplicate(1, 0)
	}
	names := [2]string{"reactions", "open-loop"}
	var rates [2][]float64
	load0 := loadAverage()
	var out model.Outcome
	round := 0
	for b.Loop() {
		round++
		for side, sim := range sims {
			start := time.Now()
			var decisions int64
			for _, p := range ps {
				sim.Run(p, &out)
				if side == 0 {
					decisions += out.Reactions.Attempts
				} else {
					decisions += out.OfferedLegit + out.OfferedAbusive
				}
			}
			el := time.Since(start).Seconds()
			rates[side] = append(rates[side], float64(decisions)/el)
			b.Logf("round %d %s: %d policies, %d decisions in %.1f s: %.3g decisions/s (load %s)", round, names[side], len(ps), decisions, el, float64(decisions)/el, loadAverage())
		}
	}
	for side := range rates {
		b.ReportMetric(median(rates[side]), names[side]+"-decisions/s")
	}
	b.Logf("%d policies, %d rounds; median decisions/s: reactions %.3g, open loop %.3g; load average before %s, after %s",
		len(ps), round, median(rates[0]), median(rates[1]), load0, loadAverage())
}

// median is the middle of xs (the mean of the two middle ones when even).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute load averages, or "?".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
