package sweep

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/model"
)

// A block of a managed rule's reference: [from, until).
type ruleBlock struct{ from, until int64 }

// cloudflareBlocks is cloudflare_rule on one key as Cloudflare documents it
// (docs/managed-rules.md): periods on the clock, the rate with this request
// prev·(P − elapsed)/P + curr + 1 in exact rationals; an over request
// blocks the key for the mitigation timeout, during which its requests are
// blocked (and counted with counts: all).
func cloudflareBlocks(p model.Policy, times []int64) []ruleBlock {
	size := int64(p.PeriodS) * 1e9
	var counted []int64
	var blocks []ruleBlock
	until := int64(-1)
	for _, t := range times {
		if t < until {
			if p.Counts == model.HAProxyCountsAll {
				counted = append(counted, t)
			}
			continue
		}
		start := t / size * size
		var prev, curr int64
		for _, u := range counted {
			if u >= start {
				curr++
			} else if u >= start-size {
				prev++
			}
		}
		rate := big.NewRat(prev*(size-(t-start)), size)
		rate.Add(rate, big.NewRat(curr+1, 1))
		if rate.Cmp(big.NewRat(p.RequestsPerPeriod, 1)) <= 0 {
			counted = append(counted, t)
			continue
		}
		if p.Counts == model.HAProxyCountsAll {
			counted = append(counted, t)
		}
		if p.MitigationTimeoutS > 0 {
			until = t + int64(p.MitigationTimeoutS)*1e9
			blocks = append(blocks, ruleBlock{t, until})
		}
	}
	return blocks
}

// fastlyBlocks is fastly_erl on one key as Fastly documents check_rate
// (undercount 0): a request outside the penalty box is counted; if the
// count of its second and the window_s − 1 before it exceeds rate·window_s
// it puts the key in the penalty box for penalty_box_s, whose requests are
// refused uncounted.
func fastlyBlocks(p model.Policy, times []int64) []ruleBlock {
	var counted []int64
	var blocks []ruleBlock
	until := int64(-1)
	for _, t := range times {
		if t < until {
			continue
		}
		counted = append(counted, t)
		from := (t/1e9 - int64(p.WindowS) + 1) * 1e9
		var n int64
		for _, u := range counted {
			if u >= from {
				n++
			}
		}
		if n > int64(p.Rate)*int64(p.WindowS) {
			until = t + int64(p.PenaltyBoxS)*1e9
			blocks = append(blocks, ruleBlock{t, until})
		}
	}
	return blocks
}

// cloudflare_rule's and fastly_erl's blocks through a sweep: the points'
// blocks and legit_blocked_s and the clients' blocked_s read back from the
// Parquet files equal the documented rules' blocks on the run's arrivals,
// each client on a key of its own, clipped at the scenario's end.
func TestSweepManagedRuleBlocks(t *testing.T) {
	const spec = `name: managed blocks
scenario:
  name: a reader and a flood
  duration_s: 300
  arrivals: {process: poisson}
  clients:
    - name: steady reader
      class: legit
      segments: [[0, 300, 2]]
    - name: bursty reader
      class: legit
      segments: [[0, 20, 1], [20, 25, 12], [25, 300, 1]]
    - name: flood
      class: abusive
      stage: code
      segments: [[30, 90, 20], [250, 300, 30]]
sweep:
  - {algorithm: cloudflare_rule, period_s: 10, requests_per_period: [25, 60], mitigation_timeout_s: [0, 60, 600], counts: [all, admitted]}
  - {algorithm: fastly_erl, window_s: [1, 10], rate: [10], penalty_box_s: [60, 120]}
  - {algorithm: aws_waf_rate, window_s: 60, limit: [100, 300], lag_s: [5, 20]}
  - {algorithm: token_bucket, rate: 3, capacity: 20}
`
	sp, rows, clients := runSpecText(t, spec, "managed.yaml")
	if len(rows) != 21 || len(clients) != 3*21 {
		t.Fatalf("%d points rows, %d clients rows, want 21 and 63", len(rows), len(clients))
	}
	w, err := model.NewWorkload(sp.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	events := w.Realise(sp.Seed, 0, nil)
	horizon := int64(sp.Scenario.DurationS) * 1e9
	var legitTotal float64
	var rules int
	for i, r := range rows {
		p, err := model.ParseLabel(r.Key())
		if err != nil {
			t.Fatalf("policy %q: %v", r.Key(), err)
		}
		var wantBlocks int64
		var wantLegit float64
		for c := range 3 {
			var bs []ruleBlock
			switch p.Algorithm {
			case model.CloudflareRule:
				bs = cloudflareBlocks(p, events[c])
			case model.FastlyERL:
				bs = fastlyBlocks(p, events[c])
			case model.AWSWAFRate:
				bs = awsBlocks(p, events[c], horizon)
			}
			var ns int64
			for _, b := range bs {
				ns += max(0, min(b.until, horizon)-b.from)
			}
			wantBlocks += int64(len(bs))
			want := float64(ns) / 1e9
			if sp.Scenario.Clients[c].Class == model.Legit {
				wantLegit += want
			}
			cr := clients[i*3+c]
			if cr.PointID != r.PointID || math.Abs(cr.BlockedS-want) > 1e-9 {
				t.Errorf("%s client %s: blocked_s %v, reference %v", r.Key(), cr.Client, cr.BlockedS, want)
			}
		}
		if r.Blocks != wantBlocks || math.Abs(r.LegitBlockedS-wantLegit) > 1e-6 {
			t.Errorf("%s: blocks %d legit_blocked_s %v, reference %d %v", r.Key(), r.Blocks, r.LegitBlockedS, wantBlocks, wantLegit)
		}
		if wantBlocks > 0 {
			rules++
		}
		legitTotal += wantLegit
	}
	if rules < 10 || legitTotal == 0 {
		t.Errorf("%d policies with blocks, legitimate blocked %v s: the scenario does not test the columns", rules, legitTotal)
	}
}

// awsBlocks is aws_waf_rate on one key as AWS documents it, up to horizon:
// every 10 s a check counts the key's requests in the window_s before it,
// blocked ones included; its result acts from lag_s after it until the next
// one's. A block is a run of over checks, from the first one's action to
// the action of the next check not over.
func awsBlocks(p model.Policy, times []int64, horizon int64) []ruleBlock {
	var first int64 // checks before the first request count nothing
	if len(times) > 0 {
		first = times[0] / 10e9 * 10e9
	}
	lagS := p.LagS
	if lagS == 0 { // the label leaves the default out
		lagS = model.DefaultAWSLagS
	}
	lag := int64(math.Round(lagS * 1e9))
	var blocks []ruleBlock
	in := false
	for end := first; end+lag < horizon; end += 10e9 {
		var n int64
		for _, u := range times {
			if u >= end-int64(p.WindowS)*1e9 && u < end {
				n++
			}
		}
		switch over := n > p.Limit; {
		case over && !in:
			blocks = append(blocks, ruleBlock{end + lag, horizon})
			in = true
		case !over && in:
			blocks[len(blocks)-1].until = end + lag
			in = false
		}
	}
	return blocks
}

// The managed rules' blocks in a log replay, read back from the Parquet
// files: each key (address) is a client, the rules' periods and checks on
// the Unix clock, blocked time clipped at the end of the log's last
// second; every key is legitimate (no rules).
func TestLogManagedRuleBlocks(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 1, 1, 0, 0, 7, 0, time.UTC)
	rng := rand.New(rand.NewPCG(28, 5))
	const spanS = 900
	times := map[string][]int64{}
	var b strings.Builder
	for s := range spanS {
		for k, ip := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"} {
			n := rng.IntN(2 + 2*k) // 0.5, 1.5 and 2.5 a second on average
			if k == 2 && s%300 < 60 {
				n += 25 // floods
			}
			for range n {
				at := start.Add(time.Duration(s) * time.Second)
				times[ip] = append(times[ip], at.UnixNano())
				fmt.Fprintf(&b, "%s - - [%s] \"GET / HTTP/1.1\" 200 12 \"-\" \"app\"\n", ip, at.Format("02/Jan/2006:15:04:05 -0700"))
			}
		}
	}
	log := filepath.Join(dir, "access.log")
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`name: managed-log
traffic:
  log: %q
  format: combined
  spread: none
sweep:
  - {algorithm: cloudflare_rule, period_s: 10, requests_per_period: [20, 40], mitigation_timeout_s: [0, 60], counts: [all, admitted]}
  - {algorithm: fastly_erl, window_s: [1, 10], rate: [10], penalty_box_s: [60]}
  - {algorithm: aws_waf_rate, window_s: 60, limit: [100], lag_s: [5, 20]}
`, log)
	ctx := context.Background()
	sp, err := ReadSpec([]byte(spec), "managed.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if _, err := Run(ctx, sp, Options{OutDir: out, Workers: 1, Shard: Shard{Count: 1}, MaxPoints: DefaultMaxPoints}); err != nil {
		t.Fatalf("run: %v", err)
	}
	rows, err := ReadPoints(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := ReadClients(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 12 {
		t.Fatalf("%d points rows, want 12", len(rows))
	}
	horizon := start.Add(spanS * time.Second).UnixNano()
	var withBlocks int
	for _, r := range rows {
		p, err := model.ParseLabel(r.Key())
		if err != nil {
			t.Fatal(err)
		}
		var wantBlocks, wantNs int64
		seen := 0
		for _, c := range clients {
			if c.PointID != r.PointID {
				continue
			}
			ts, ok := times[c.Client]
			if !ok {
				t.Fatalf("%s: client %q is not a key of the log", r.Key(), c.Client)
			}
			seen++
			var bs []ruleBlock
			switch p.Algorithm {
			case model.CloudflareRule:
				bs = cloudflareBlocks(p, ts)
			case model.FastlyERL:
				bs = fastlyBlocks(p, ts)
			case model.AWSWAFRate:
				bs = awsBlocks(p, ts, horizon)
			}
			var ns int64
			for _, b := range bs {
				ns += max(0, min(b.until, horizon)-b.from)
			}
			wantBlocks += int64(len(bs))
			wantNs += ns
			if math.Abs(c.BlockedS-float64(ns)/1e9) > 1e-9 {
				t.Errorf("%s client %s: blocked_s %v, reference %v", r.Key(), c.Client, c.BlockedS, float64(ns)/1e9)
			}
		}
		if seen != 3 {
			t.Errorf("%s: %d clients rows, want 3", r.Key(), seen)
		}
		if r.Blocks != wantBlocks || math.Abs(r.LegitBlockedS-float64(wantNs)/1e9) > 1e-6 {
			t.Errorf("%s: blocks %d legit_blocked_s %v, reference %d %v", r.Key(), r.Blocks, r.LegitBlockedS, wantBlocks, float64(wantNs)/1e9)
		}
		if wantBlocks > 0 {
			withBlocks++
		}
	}
	if withBlocks < 8 {
		t.Errorf("%d policies with blocks: the log does not test the columns", withBlocks)
	}
}

// In a keyed scenario a rule's block of a shared key blocks every client
// using it: two readers behind one address share its blocks, the flood
// has its own (aws_waf_rate's blocks, which start with its checks, too).
func TestKeyedManagedRuleBlocks(t *testing.T) {
	const spec = `name: managed keyed
scenario:
  name: an office and a flood
  duration_s: 300
  arrivals: {process: poisson}
  clients:
    - name: steady reader
      class: legit
      address_pool: office
      segments: [[0, 300, 1]]
    - name: bursty reader
      class: legit
      address_pool: office
      segments: [[0, 20, 1], [20, 25, 12], [25, 300, 0.5]]
    - name: flood
      class: abusive
      stage: code
      segments: [[30, 90, 20], [250, 300, 30]]
sweep:
  - {algorithm: cloudflare_rule, key: address, period_s: 10, requests_per_period: [25, 60], mitigation_timeout_s: [0, 60], counts: [all, admitted]}
  - {algorithm: fastly_erl, key: address, window_s: [1, 10], rate: [10], penalty_box_s: [60, 120]}
  - {algorithm: aws_waf_rate, key: address, window_s: 60, limit: [100]}
`
	sp, rows, clients := runSpecText(t, spec, "keyed.yaml")
	if len(rows) != 13 || len(clients) != 3*13 {
		t.Fatalf("%d points rows, %d clients rows, want 13 and 39", len(rows), len(clients))
	}
	w, err := model.NewWorkload(sp.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	events := w.Realise(sp.Seed, 0, nil)
	office := slices.Sorted(slices.Values(slices.Concat(events[0], events[1])))
	horizon := int64(sp.Scenario.DurationS) * 1e9
	var shared int
	for i, r := range rows {
		p, err := model.ParseLabel(r.Key())
		if err != nil {
			t.Fatalf("policy %q: %v", r.Key(), err)
		}
		blocksOf := func(ts []int64) (int64, int64) {
			var bs []ruleBlock
			switch p.Algorithm {
			case model.CloudflareRule:
				bs = cloudflareBlocks(p, ts)
			case model.FastlyERL:
				bs = fastlyBlocks(p, ts)
			case model.AWSWAFRate:
				bs = awsBlocks(p, ts, horizon)
			}
			var ns int64
			for _, b := range bs {
				ns += max(0, min(b.until, horizon)-b.from)
			}
			return int64(len(bs)), ns
		}
		nOffice, nsOffice := blocksOf(office)
		nFlood, nsFlood := blocksOf(events[2])
		for c, want := range []int64{nsOffice, nsOffice, nsFlood} {
			cr := clients[i*3+c]
			if cr.PointID != r.PointID || math.Abs(cr.BlockedS-float64(want)/1e9) > 1e-9 {
				t.Errorf("%s client %s: blocked_s %v, reference %v", r.Key(), cr.Client, cr.BlockedS, float64(want)/1e9)
			}
		}
		if r.Blocks != nOffice+nFlood || math.Abs(r.LegitBlockedS-2*float64(nsOffice)/1e9) > 1e-6 {
			t.Errorf("%s: blocks %d legit_blocked_s %v, reference %d %v", r.Key(), r.Blocks, r.LegitBlockedS, nOffice+nFlood, 2*float64(nsOffice)/1e9)
		}
		if nOffice > 0 {
			shared++
		}
	}
	if shared < 3 {
		t.Errorf("%d policies block the office: the scenario does not test shared keys", shared)
	}
}
