package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/configs"
	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// keyedPolicies are one policy per algorithm, limits tight enough to cut.
var keyedPolicies = []Policy{
	{Algorithm: FixedWindow, WindowS: 60, Limit: 600},
	{Algorithm: FixedWindow, WindowS: 60, Limit: 300, PhaseS: 17},
	{Algorithm: SlidingWindow, WindowS: 60, Limit: 600},
	{Algorithm: TokenBucket, Rate: 10, Capacity: 200},
	{Algorithm: TokenBucket, Rate: 2.5, Capacity: 7},
	{Algorithm: SlidingLog, WindowS: 60, Limit: 600},
	{Algorithm: SlidingCounter, WindowS: 60, Limit: 500},
	{Algorithm: GCRA, Rate: 10, Capacity: 50},
	{Algorithm: Nginx, Rate: 10, Burst: 20, Delay: 20},
	{Algorithm: Nginx, Rate: 10, Burst: 40, Delay: 5},
	{Algorithm: FixedWindowAnchored, WindowS: 60, Limit: 400},
	{Algorithm: Concurrency, Limit: 20, ServiceS: 1.5},
}

func lessonWorkload(t testing.TB, arrivals Arrivals) *Workload {
	t.Helper()
	sc, err := ParseScenario(configs.Lesson)
	if err != nil {
		t.Fatal(err)
	}
	sc.Arrivals = arrivals
	w, err := NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func runPolicy(w *Workload, p Policy) Outcome {
	var out Outcome
	w.NewSimulator().Run(p, &out)
	return out
}

func sameClients(t *testing.T, what string, got, want Outcome) {
	t.Helper()
	for i := range want.Clients {
		if got.Clients[i] != want.Clients[i] {
			t.Errorf("%s: client %d: got %+v, want %+v", what, i, got.Clients[i], want.Clients[i])
		}
	}
}

// On the lesson scenario (one address and one account per client), keying
// by address or account, one node with shared state (any lag), or N nodes on
// an atomic shared store all give the single-node result exactly.
func TestKeyedEqualsSingleNode(t *testing.T) {
	for _, arr := range []Arrivals{{}, {Process: Poisson}} {
		w := lessonWorkload(t, arr)
		for _, p := range keyedPolicies {
			want := runPolicy(w, p)
			for _, v := range []func(*Policy){
				func(q *Policy) { q.Key = KeyAddress },
				func(q *Policy) { q.Key = KeyAccount },
				func(q *Policy) { q.State = Shared },
				func(q *Policy) { q.State, q.Nodes = Shared, 1 },
				func(q *Policy) { q.State, q.SyncMs = Shared, 250 },
				func(q *Policy) { q.State, q.SyncMs, q.Key = Shared, 5000, KeyAccount },
				func(q *Policy) { q.State, q.Nodes = Shared, 7 },
				func(q *Policy) { q.State, q.Nodes, q.LB = Shared, 3, RandomLB },
			} {
				q := p
				v(&q)
				if err := q.Validate(); err != nil {
					t.Fatal(err)
				}
				got := runPolicy(w, q)
				sameClients(t, fmt.Sprintf("%s %v", arr.Process, q), got, want)
				if got.FalseCut != want.FalseCut || got.Caught != want.Caught || got.LegitAccountsLocked != want.LegitAccountsLocked {
					t.Errorf("%v: metrics %+v, want %+v", q, got.Metrics, want.Metrics)
				}
				if (!q.Shapes() || q.SyncMs == 0) && (got.MeanDelayS != want.MeanDelayS || got.P99DelayS != want.P99DelayS) {
					t.Errorf("%v: delay %v/%v, want %v/%v", q, got.MeanDelayS, got.P99DelayS, want.MeanDelayS, want.P99DelayS)
				}
			}
		}
	}
}

func keyedScenario(t *testing.T, yml string) *Workload {
	t.Helper()
	sc, err := ParseScenario([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A hand-made trace: one client, 2 addresses and 3 accounts (round robin),
// 12 requests at t = 0, fixed window of limit 2.
func TestKeyedHandTrace(t *testing.T) {
	w := keyedScenario(t, `
name: hand
duration_s: 60
clients:
  - name: a
    class: abusive
    stage: none
    addresses: 2
    accounts: 3
    segments: [[0, 1, 12]]
`)
	p := Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 2}
	for _, c := range []struct {
		key  Key
		want int64
	}{
		{KeyClient, 2},  // one key
		{KeyAddress, 4}, // 2 addresses × 2
		{KeyAccount, 6}, // 3 accounts × 2
		{KeyBoth, 4},    // requests j: address j%2, account j%3; see below
		{KeyGlobal, 2},
	} {
		q := p
		q.Key = c.key
		if got := runPolicy(w, q).Clients[0].Admitted; got != c.want {
			t.Errorf("key %s: admitted %d, want %d", c.key, got, c.want)
		}
	}
	// KeyBoth, request by request: j=0 (a0,c0) ok; 1 (a1,c1) ok; 2 (a0,c2)
	// ok, a0 full; 3 (a1,c0) ok, a1 full; the rest fail on the address.
}

// KeyBoth follows nginx's rule: a request rejected by the account limiter is
// not charged to the address limiter.
func TestKeyBothChargesOnlyIfAllPass(t *testing.T) {
	w := keyedScenario(t, `
name: nat
duration_s: 60
clients:
  - name: stuffer
    class: abusive
    stage: code
    addresses: 2
    address_pool: nat
    segments: [[0, 1, 4]]
  - name: office user
    class: legit
    address_pool: nat
    segments: [[1, 2, 1]]
`)
	// stuffer: addresses 0,1,0,1 of the pool, one account. Limit 2: requests
	// 0 and 1 pass; 2 and 3 fail on the account. If the address limiter were
	// charged for request 2, address 0 would be full and the office user
	// (address 0, own account) would be cut.
	p := Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 2, Key: KeyBoth}
	out := runPolicy(w, p)
	if out.Clients[0].Admitted != 2 || out.Clients[1].Admitted != 1 {
		t.Errorf("admitted %+v, want stuffer 2, office user 1", out.Clients)
	}
	if out.LegitAccounts != 1 || out.LegitAccountsLocked != 0 {
		t.Errorf("legit accounts %d locked %d, want 1, 0", out.LegitAccounts, out.LegitAccountsLocked)
	}
	// By address alone the stuffer fills address 0 and the office user is locked out.
	p.Key = KeyAddress
	out = runPolicy(w, p)
	if out.Clients[1].Admitted != 0 || out.LegitAccountsLocked != 1 {
		t.Errorf("by address: office user admitted %d, locked %d; want 0, 1", out.Clients[1].Admitted, out.LegitAccountsLocked)
	}
}

// Local state on N nodes behind a round-robin balancer admits N × limit of a
// burst; shared state admits the limit; a lag lets each node admit its own.
func TestNodesOverAdmission(t *testing.T) {
	w := keyedScenario(t, `
name: burst
duration_s: 60
clients:
  - name: burst
    class: abusive
    stage: none
    segments: [[0, 1, 100]]
`)
	for _, alg := range []Policy{
		{Algorithm: FixedWindow, WindowS: 60, Limit: 10},
		{Algorithm: SlidingWindow, WindowS: 60, Limit: 10},
		{Algorithm: TokenBucket, Rate: 0.1, Capacity: 10},
		{Algorithm: GCRA, Rate: 0.1, Capacity: 10},
	} {
		for _, n := range []int{1, 2, 3, 5, 10, 20} {
			p := alg
			p.Nodes = n
			if got, want := runPolicy(w, p).Clients[0].Admitted, int64(min(10*n, 100)); got != want {
				t.Errorf("%v local: admitted %d, want %d", p, got, want)
			}
			p.State = Shared
			if got := runPolicy(w, p).Clients[0].Admitted; got != 10 {
				t.Errorf("%v shared: admitted %d, want 10", p, got)
			}
			p.SyncMs = 100 // the burst arrives at one instant: no write is visible to the other nodes
			if got, want := runPolicy(w, p).Clients[0].Admitted, int64(min(10*n, 100)); got != want {
				t.Errorf("%v shared, lag: admitted %d, want %d", p, got, want)
			}
		}
	}
}

// With a lag, over-admission grows with the lag and the number of nodes and
// never goes below the atomic store's admissions on the lesson scenario.
func TestLagMonotone(t *testing.T) {
	w := lessonWorkload(t, Arrivals{Process: Uniform})
	p := Policy{Algorithm: SlidingWindow, WindowS: 60, Limit: 600, State: Shared, Nodes: 4}
	base := runPolicy(w, p).Missed
	prev := base
	for _, lag := range []float64{10, 100, 1000, 10000} {
		p.SyncMs = lag
		m := runPolicy(w, p).Missed
		if m < prev {
			t.Errorf("lag %v ms: missed %d < %d at a smaller lag", lag, m, prev)
		}
		prev = m
	}
	if prev <= base {
		t.Errorf("a 10 s lag on 4 nodes missed %d, no more than the atomic store's %d", prev, base)
	}
}

// Memory: a sliding log grows with the traffic it holds, counters do not.
func TestStateSize(t *testing.T) {
	w := lessonWorkload(t, Arrivals{})
	fw := runPolicy(w, Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 600, Key: KeyAddress})
	if !fw.StateMeasured || fw.StateKeysPeak != 7 || fw.StateBytesPeak != 7*16 {
		t.Errorf("fixed window: keys %d bytes %d measured %v, want 7, 112, true", fw.StateKeysPeak, fw.StateBytesPeak, fw.StateMeasured)
	}
	sw := runPolicy(w, Policy{Algorithm: SlidingWindow, WindowS: 60, Limit: 600, Key: KeyAddress})
	if sw.StateBytesPeak <= 7*16 || sw.StateBytesPeak > 7*600*8 {
		t.Errorf("sliding window: %d bytes, want between one counter per key and 600 timestamps per key", sw.StateBytesPeak)
	}
	sl := runPolicy(w, Policy{Algorithm: SlidingLog, WindowS: 60, Limit: 600, Key: KeyAddress})
	if sl.StateBytesPeak <= sw.StateBytesPeak {
		t.Errorf("sliding log (every attempt) %d bytes <= sliding window (admitted only) %d", sl.StateBytesPeak, sw.StateBytesPeak)
	}
	if plain := runPolicy(w, Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 600}); plain.StateMeasured {
		t.Error("the lesson's path claims to measure state")
	}
}

func TestKeysYAML(t *testing.T) {
	src := `name: "k"
duration_s: 10
clients:
  - name: "a"
    class: abusive
    stage: code
    segments: [[0, 10, 3]]
    addresses: 20
    accounts: 10000
    account_pool: "users"
    spread: random
  - name: "b"
    class: legit
    segments: [[0, 10, 1]]
`
	sc, err := ParseScenario([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	k := sc.Clients[0].Keys
	if k.Addresses != 20 || k.Accounts != 10000 || k.AccountPool != "users" || k.Spread != SpreadRandom || !sc.Keyed() {
		t.Errorf("decoded %+v", k)
	}
	if got := string(sc.YAML()); got != src {
		t.Errorf("canonical YAML:\n%s\nwant\n%s", got, src)
	}
	if lesson, _ := ParseScenario(configs.Lesson); lesson.Keyed() {
		t.Error("the lesson scenario is keyed")
	}
	for _, c := range []struct{ yml, want string }{
		{"    accounts: 0\n", "line 8: clients[0].accounts: must be a whole number between 1"},
		{"    addresses: x\n", "line 8: clients[0].addresses"},
		{"    spread: zigzag\n", "line 8: clients[0].spread: must be round_robin or random"},
		{"    account: 3\n", "line 8"},
	} {
		bad := "name: k\nduration_s: 10\nclients:\n  - name: a\n    class: abusive\n    stage: code\n    segments: [[0, 10, 3]]\n" + c.yml
		_, err := ParseScenario([]byte(bad))
		var ye *yamlx.Error
		if !errors.As(err, &ye) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yml, err, c.want)
		}
	}
}

func TestRandomSpreadReplicates(t *testing.T) {
	w := keyedScenario(t, `
name: r
duration_s: 60
clients:
  - name: a
    class: legit
    accounts: 50
    spread: random
    segments: [[0, 60, 5]]
`)
	if !w.Stochastic() {
		t.Fatal("random spread is not stochastic")
	}
	p := Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 6, Key: KeyAccount}
	s := w.NewSimulator()
	var a, b, c Outcome
	s.SetReplicate(1, 0)
	s.Run(p, &a)
	s.SetReplicate(1, 1)
	s.Run(p, &b)
	s.SetReplicate(1, 0)
	s.Run(p, &c)
	if a.Clients[0] != c.Clients[0] {
		t.Errorf("replicate 0 twice: %+v then %+v", a.Clients[0], c.Clients[0])
	}
	if a.Clients[0] == b.Clients[0] && a.LegitAccountsLocked == b.LegitAccountsLocked {
		t.Logf("replicates 0 and 1 agree by chance: %+v", a.Metrics)
	}
	if a.LegitAccounts != 50 {
		t.Errorf("legit accounts %d, want 50", a.LegitAccounts)
	}
}

// A random balancer spreads a burst unevenly: with local state on two nodes
// it admits more than one node's limit and at most two; the draw depends on
// the seed and replicate only.
func TestRandomLB(t *testing.T) {
	w := keyedScenario(t, `
name: burst
duration_s: 60
clients:
  - name: burst
    class: abusive
    stage: none
    segments: [[0, 1, 30]]
`)
	p := Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 10, Nodes: 2, LB: RandomLB}
	s := w.NewSimulator()
	seen := map[int64]bool{}
	for rep := range 20 {
		var a, b Outcome
		s.SetReplicate(7, rep)
		s.Run(p, &a)
		s.Run(p, &b)
		n := a.Clients[0].Admitted
		if n != b.Clients[0].Admitted {
			t.Errorf("replicate %d: %d then %d admitted", rep, n, b.Clients[0].Admitted)
		}
		if n <= 10 || n > 20 {
			t.Errorf("replicate %d: %d admitted, want 11..20", rep, n)
		}
		seen[n] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 replicates all admitted %v: the balancer does not vary", seen)
	}
}

func BenchmarkRunKeyed(b *testing.B) {
	data, err := configs.FS.ReadFile("next-step.yaml")
	if err != nil {
		b.Fatal(err)
	}
	sc, err := ParseScenario(data)
	if err != nil {
		b.Fatal(err)
	}
	w, err := NewWorkload(sc)
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []Policy{
		{Algorithm: SlidingWindow, WindowS: 60, Limit: 600, Key: KeyAccount},
		{Algorithm: FixedWindow, WindowS: 60, Limit: 600, Key: KeyBoth},
		{Algorithm: TokenBucket, Rate: 10, Capacity: 900, Key: KeyAddress, Nodes: 4},
		{Algorithm: SlidingWindow, WindowS: 60, Limit: 600, State: Shared, Nodes: 4, SyncMs: 1000},
	} {
		s := w.NewSimulator()
		b.Run(p.String(), func(b *testing.B) {
			var o Outcome
			b.ReportAllocs()
			for b.Loop() {
				s.Run(p, &o)
			}
		})
	}
}

// aws_waf_rate's blocks in a keyed scenario: two clients behind one
// address pool (a key they share) are blocked together, as often and as
// long as one limiter fed with both clients' requests says (its blocks
// start with its checks, not with a request).
func TestAWSBlocksOnSharedKey(t *testing.T) {
	w := keyedScenario(t, `
name: shared
duration_s: 600
clients:
  - {name: a, class: abusive, stage: none, addresses: 1, segments: [[0, 600, 2]], address_pool: nat}
  - {name: b, class: legit, addresses: 1, segments: [[0, 600, 1]], address_pool: nat}
`)
	p := Policy{Algorithm: AWSWAFRate, WindowS: 60, Limit: 100, Key: KeyAddress}
	out := runPolicy(w, p)
	d := newDecider(Policy{Algorithm: AWSWAFRate, WindowS: 60, Limit: 100})
	var times []int64
	for _, ts := range w.Realise(0, 0, nil) {
		times = append(times, ts...)
	}
	slices.Sort(times)
	for _, tm := range times {
		d.Allow(tm)
	}
	n, ns, _ := BlockStats(d, 600*secondNs)
	if n == 0 || out.Blocks != n || out.Clients[0].BlockedNs != ns || out.Clients[1].BlockedNs != ns || out.LegitBlockedS != float64(ns)/1e9 {
		t.Errorf("keyed run: %d blocks, clients blocked %d and %d ns, legit %v s; one limiter: %d blocks, %d ns",
			out.Blocks, out.Clients[0].BlockedNs, out.Clients[1].BlockedNs, out.LegitBlockedS, n, ns)
	}
}

// A keyed simulator reuses a key's limiter from one policy to the next only
// when it is the bare algorithm's: a plain policy run first must not leave
// its unwrapped decider to a policy of the same algorithm with a penalty
// box or count_if (which then ran without them, or panicked).
func TestKeyedModifiedAfterPlain(t *testing.T) {
	w := keyedScenario(t, `
name: reuse
duration_s: 10
clients:
  - {name: a, class: abusive, stage: none, addresses: 2, fail_share: 1, segments: [[0, 10, 4]]}
`)
	plain := Policy{Algorithm: TokenBucket, Rate: 1, Capacity: 2, Key: KeyAddress}
	boxed, counted := plain, plain
	boxed.BlockS = 60
	counted.CountIf = "200"
	sim := w.NewSimulator()
	for _, p := range []Policy{boxed, counted} {
		var first, after Outcome
		w.NewSimulator().Run(p, &first)
		sim.Run(plain, &after)
		sim.Run(p, &after)
		if first.Clients[0].Admitted != after.Clients[0].Admitted {
			t.Errorf("%s after %s: admitted %d, alone %d", p, plain, after.Clients[0].Admitted, first.Clients[0].Admitted)
		}
	}
	if got := runPolicy(w, boxed).Clients[0].Admitted; got != 6 { // per address 2 at 0 s, 1 at 1 s, then blocked
		t.Errorf("%s: admitted %d, want 6", boxed, got)
	}
}

// A penalty box on key org blocks the clients of the organisation.
func TestKeyedOrgBlocks(t *testing.T) {
	w := keyedScenario(t, `
name: org blocks
duration_s: 10
clients:
  - {name: a, class: legit, org: acme, segments: [[0, 1, 3]]}
  - {name: b, class: legit, org: acme, segments: [[5, 6, 1]]}
  - {name: c, class: legit, segments: [[0, 10, 1]]}
`)
	out := runPolicy(w, Policy{Algorithm: FixedWindow, WindowS: 60, Limit: 2, Key: KeyOrg, BlockS: 8})
	if out.Blocks != 2 || out.Clients[0].Admitted != 2 || out.Clients[1].Admitted != 0 || out.Clients[2].Admitted != 2 {
		t.Fatalf("blocks %d, admitted %+v", out.Blocks, out.Clients)
	}
	if got := []int64{out.Clients[0].BlockedNs, out.Clients[1].BlockedNs, out.Clients[2].BlockedNs}; got[0] != 8e9 || got[1] != 8e9 || got[2] != 8e9 {
		t.Errorf("blocked ns %v, want 8 s for the organisation's clients and for c (blocked from 2 s on)", got)
	}
}
