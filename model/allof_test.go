package model

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// The worked case of stacked limits: 5 a minute per integrator and 10 a
// minute per organisation; integrator A sends 8 requests in a minute, then
// integrator B of the same organisation sends 5. With rejected_counts all,
// A's 3 rejected requests still count against the organisation, so B gets
// 2; with none they do not, and B gets 5.
func TestStackWorkedCase(t *testing.T) {
	w := keyedScenario(t, `
name: integrators
duration_s: 60
clients:
  - {name: integrator A, class: legit, org: acme, segments: [[0, 8, 1]]}
  - {name: integrator B, class: legit, org: acme, segments: [[10, 15, 1]]}
`)
	for _, tc := range []struct {
		rc    string
		wantB int64
	}{{"all", 2}, {"none", 5}} {
		for _, alg := range []string{"sliding_window", "fixed_window", "sliding_log"} {
			label := fmt.Sprintf("all_of rejected_counts=%s [%s window_s=60 limit=5] [%s window_s=60 limit=10 key=org]", tc.rc, alg, alg)
			p, err := ParseLabel(label)
			if err != nil {
				t.Fatal(err)
			}
			out := runPolicy(w, p)
			// sliding_log logs A's 3 rejections in A's own log; with none
			// the organisation's log never sees them, so B still gets 5.
			if a, b := out.Clients[0].Admitted, out.Clients[1].Admitted; a != 5 || b != tc.wantB {
				t.Errorf("%s: A admitted %d, B admitted %d; want 5 and %d", label, a, b, tc.wantB)
			}
		}
	}
}

// A token bucket spends no token on a request another component rejects
// when rejected_counts is none, and spends one when it is all.
func TestStackTokenBucketSpends(t *testing.T) {
	steps := []struct {
		rc   string
		want []bool
	}{
		// bucket of 3 at 1/60 s; window of 2 in 30 s. Requests at t0..t3:
		// all: the bucket pays for t2 (which the window rejects), so t3
		// finds it empty. none: t2 costs nothing, but t3 is still over the
		// window's limit.
		{"all", []bool{true, true, false, false}},
		{"none", []bool{true, true, false, false}},
	}
	for _, s := range steps {
		p, err := ParseLabel("all_of rejected_counts=" + s.rc + " [token_bucket rate=0.016666666666666666 capacity=3] [fixed_window window_s=30 limit=2]")
		if err != nil {
			t.Fatal(err)
		}
		d := newDecider(p)
		for i, want := range s.want {
			if got := d.Allow(int64(i) * secondNs); got != want {
				t.Errorf("%s step %d: got %v, want %v", s.rc, i, got, want)
			}
		}
		// The next window admits again if a token is left: at 30 s the
		// bucket has 3 + 30/60 - 3 tokens (all) or 3 + 30/60 - 2 (none).
		got := d.Allow(30 * secondNs)
		if want := s.rc == "none"; got != want {
			t.Errorf("%s: at 60 s got %v, want %v (tokens left: %v)", s.rc, got, want, want)
		}
	}
}

func TestStackLabelRoundTrip(t *testing.T) {
	for _, l := range []string{
		"all_of rejected_counts=all [fixed_window window_s=60 limit=5] [fixed_window window_s=60 limit=10 key=org]",
		"all_of rejected_counts=none [token_bucket rate=10 capacity=20] [sliding_window window_s=3600 limit=1000 key=global]",
		"all_of rejected_counts=none [nginx rate=2 burst=5 delay=5]",
	} {
		p, err := ParseLabel(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Canonical(); got != l {
			t.Errorf("round trip:\n got %s\nwant %s", got, l)
		}
		q := p
		if !q.Set("all_of[0].key", 4) || q.Stack == p.Stack || p.Canonical() != l {
			t.Errorf("Set changed the original: %s", p.Canonical())
		}
	}
	for _, bad := range []string{
		"all_of [fixed_window window_s=60 limit=5]",
		"all_of rejected_counts=some [fixed_window window_s=60 limit=5]",
		"all_of rejected_counts=all [fixed_window window_s=60 limit=5",
		"all_of rejected_counts=all [fixed_window window_s=60 limit=5 key=both]",
		"all_of rejected_counts=all [fixed_window window_s=60 limit=5 nodes=2]",
		"all_of rejected_counts=all",
		"all_of rejected_counts=all limit=5",
	} {
		if _, err := ParseLabel(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// refComponent is the property test's reference for one component: an
// x/time/rate Limiter per key (token_bucket) or a hand-written window per
// key, independent of the model's deciders.
type refComponent struct {
	alg      string
	key      string // client, org or global
	limit    int64
	windowNs int64
	rate     float64
	capacity int

	buckets map[int]*rate.Limiter
	logs    map[int][]int64 // sliding window: admitted times
	fixed   map[int][2]int64
}

var refBase = time.Unix(1_700_000_000, 0)

func (c *refComponent) policy() string {
	var s string
	switch c.alg {
	case "token_bucket":
		s = fmt.Sprintf("token_bucket rate=%g capacity=%d", c.rate, c.capacity)
	default:
		s = fmt.Sprintf("%s window_s=%d limit=%d", c.alg, c.windowNs/secondNs, c.limit)
	}
	if c.key != "client" {
		s += " key=" + c.key
	}
	return s
}

func (c *refComponent) keyOf(client, org int) int {
	switch c.key {
	case "org":
		return org
	case "global":
		return 0
	}
	return client
}

// would reports whether the component admits a request of key k at t.
func (c *refComponent) would(k int, t int64) bool {
	switch c.alg {
	case "token_bucket":
		return c.bucket(k).TokensAt(refBase.Add(time.Duration(t))) >= 1
	case "sliding_window":
		n := int64(0)
		for _, a := range c.logs[k] {
			if a > t-c.windowNs {
				n++
			}
		}
		return n < c.limit
	}
	f := c.fixed[k]
	return f[0] != t/c.windowNs || f[1] < c.limit
}

// commit counts an admitted request of key k at t.
func (c *refComponent) commit(k int, t int64) {
	switch c.alg {
	case "token_bucket":
		if !c.bucket(k).AllowN(refBase.Add(time.Duration(t)), 1) {
			panic("commit of a request the bucket rejects")
		}
	case "sliding_window":
		c.logs[k] = append(c.logs[k], t)
	default:
		f := c.fixed[k]
		if f[0] != t/c.windowNs {
			f = [2]int64{t / c.windowNs, 0}
		}
		f[1]++
		c.fixed[k] = f
	}
}

func (c *refComponent) bucket(k int) *rate.Limiter {
	b := c.buckets[k]
	if b == nil {
		b = rate.NewLimiter(rate.Limit(c.rate), c.capacity)
		c.buckets[k] = b
	}
	return b
}

// Stacked limits against an independent reference loop on random traces:
// random clients in random organisations, 2 or 3 components of random
// algorithms on random keys, both rejected_counts.
func TestStackProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	algs := []string{"token_bucket", "sliding_window", "fixed_window"}
	keys := []string{"client", "org", "global"}
	var cut, differ int // traces where the stack cut, and where all and none differ
	for trace := range 60 {
		var yml strings.Builder
		yml.WriteString("name: random\nduration_s: 120\nclients:\n")
		nc := 2 + rng.IntN(5)
		orgs := make([]int, nc)
		for i := range nc {
			orgs[i] = rng.IntN(3)
			fmt.Fprintf(&yml, "  - {name: c%d, class: legit, org: o%d, segments: [", i, orgs[i])
			t0 := 0
			for g := 0; t0 < 119 && g < 4; g++ {
				t1 := t0 + 1 + rng.IntN(119-t0)
				if g > 0 {
					yml.WriteString(", ")
				}
				fmt.Fprintf(&yml, "[%d, %d, %d]", t0, t1, rng.IntN(4))
				t0 = min(t1+rng.IntN(10), 119)
			}
			yml.WriteString("]}\n")
		}
		w := keyedScenario(t, yml.String())
		orgID := w.Scenario.orgIDs()
		var admitted [2]int64
		for k, rc := range []string{"all", "none"} {
			var comps []*refComponent
			label := "all_of rejected_counts=" + rc
			for range 2 + rng.IntN(2) {
				c := &refComponent{alg: algs[rng.IntN(len(algs))], key: keys[rng.IntN(len(keys))],
					limit: int64(1 + rng.IntN(12)), windowNs: int64(1+rng.IntN(30)) * secondNs,
					rate: []float64{0.5, 1, 2, 4}[rng.IntN(4)], capacity: 1 + rng.IntN(8),
					buckets: map[int]*rate.Limiter{}, logs: map[int][]int64{}, fixed: map[int][2]int64{}}
				comps = append(comps, c)
				label += " [" + c.policy() + "]"
			}
			p, err := ParseLabel(label)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]int64, nc)
			for _, r := range w.Requests(0, 0) {
				ks := make([]int, len(comps))
				ok := true
				for i, c := range comps {
					ks[i] = c.keyOf(r.Client, int(orgID[r.Client]))
				}
				if rc == "all" {
					for i, c := range comps {
						if c.would(ks[i], r.TNs) {
							c.commit(ks[i], r.TNs)
						} else {
							ok = false
						}
					}
				} else {
					for i, c := range comps {
						ok = ok && c.would(ks[i], r.TNs)
					}
					for i, c := range comps {
						if ok {
							c.commit(ks[i], r.TNs)
						}
					}
				}
				if ok {
					want[r.Client]++
				}
			}
			out := runPolicy(w, p)
			admitted[k] = out.Metrics.OfferedLegit - out.Metrics.FalseCut
			if out.Metrics.FalseCut > 0 {
				cut++
			}
			for i := range nc {
				if out.Clients[i].Admitted != want[i] {
					t.Fatalf("trace %d, %s: client %d admitted %d, reference %d", trace, label, i, out.Clients[i].Admitted, want[i])
				}
			}
		}
		if admitted[0] != admitted[1] {
			differ++
		}
	}
	if cut < 60 || differ < 10 {
		t.Errorf("weak traces: %d of 120 runs cut, %d of 60 traces differ between all and none", cut, differ)
	}
	t.Logf("%d of 120 runs cut, %d of 60 traces differ between all and none", cut, differ)
}

// randomStack is a random all_of policy of 1 to 3 components of the other
// algorithms on the client's key, for the tests that loop over every
// algorithm.
func randomStack(rng *rand.Rand) Policy {
	p := Policy{Algorithm: AllOf, Stack: &Stack{RejectedCounts: RejectedCounts(rng.IntN(2))}}
	for range 1 + rng.IntN(3) {
		a := Algorithms[rng.IntN(len(Algorithms))]
		for a == AllOf {
			a = Algorithms[rng.IntN(len(Algorithms))]
		}
		p.Stack.Components = append(p.Stack.Components, randomPolicy(rng, a))
	}
	return p
}
