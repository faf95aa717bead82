package redisstate

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/configs"
	"github.com/ratesweep/ratesweep/model"
)

// addr is the Redis server the tests use, $RATESWEEP_REDIS (host:port).
// `make test-redis` installs Debian's redis-server if needed, starts it on a
// free loopback port without persistence, sets it and stops the server by
// its PID afterwards. Unset: the tests skip.
var addr = os.Getenv("RATESWEEP_REDIS")

func client(t *testing.T) *Client {
	t.Helper()
	if addr == "" {
		t.Skip("RATESWEEP_REDIS is not set: run make test-redis")
	}
	c, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Do("FLUSHDB"); err != nil {
		t.Fatal(err)
	}
	return c
}

func workload(t *testing.T, data []byte, arrivals model.ArrivalProcess) *model.Workload {
	t.Helper()
	sc, err := model.ParseScenario(data)
	if err != nil {
		t.Fatal(err)
	}
	sc.Arrivals = model.Arrivals{Process: arrivals}
	w, err := model.NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func nextStep(t *testing.T) []byte {
	data, err := configs.FS.ReadFile("next-step.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// keyOf is the limiter key of a request under p.Key.
func keyOf(p model.Policy, r model.Request) (string, int) {
	switch p.Key {
	case model.KeyAddress:
		return "a" + strconv.Itoa(r.Address), r.Address
	case model.KeyAccount:
		return "u" + strconv.Itoa(r.Account), r.Account
	case model.KeyGlobal:
		return "g", 0
	}
	return "c" + strconv.Itoa(r.Client), r.Client
}

const ttl = 24 * time.Hour // longer than any replay: keys expire on the virtual clock's terms only

// baseUs is the Unix time in µs at which the replays start (an hour
// boundary in 2026): production's times have this magnitude, about 2^50.6,
// where a double still holds every µs (in ns, about 2^60.6, it does not).
const baseUs = 1_796_601_600_000_000

// usOf is the time the scripts get for a request at tNs of the scenario: µs
// since the Unix epoch, the request's µs (the model gets usOf's time too,
// through nsOf).
func usOf(tNs int64) int64 { return baseUs + tNs/1000 }

// nsOf is the scenario's time of usOf's µs, ns.
func nsOf(tNs int64) int64 { return tNs / 1000 * 1000 }

var scriptPolicies = []model.Policy{
	{Algorithm: model.FixedWindow, WindowS: 60, Limit: 10},
	{Algorithm: model.FixedWindow, WindowS: 60, Limit: 600, PhaseS: 17},
	{Algorithm: model.SlidingWindow, WindowS: 60, Limit: 10},
	{Algorithm: model.SlidingWindow, WindowS: 60, Limit: 600},
	{Algorithm: model.SlidingLog, WindowS: 60, Limit: 10},
	{Algorithm: model.TokenBucket, Rate: 10, Capacity: 900},
	{Algorithm: model.TokenBucket, Rate: 2.5, Capacity: 7},
}

// The scripts decide every request of the next-step scenario (uniform
// arrivals, so times fall inside seconds) exactly as the model's limiters do,
// one limiter per account, and the totals are Run's.
func TestScriptsAgreeWithModel(t *testing.T) {
	c := client(t)
	for _, arrivals := range []model.ArrivalProcess{model.Uniform, model.Fluid} {
		w := workload(t, nextStep(t), arrivals)
		reqs := w.Requests(0, 0)
		for i, p := range scriptPolicies {
			if arrivals == model.Fluid && i%2 == 1 {
				continue // fluid batches: every other policy is enough
			}
			for _, key := range []model.Key{model.KeyAccount, model.KeyAddress} {
				p.Key = key
				lim, err := NewLimiter(c, p, fmt.Sprintf("agree:%s:%v", arrivals, p), ttl)
				if err != nil {
					t.Fatal(err)
				}
				deciders := map[int]model.Decider{}
				admitted := make([]int64, len(w.Scenario.Clients))
				mismatches := 0
				for j, r := range reqs {
					k, id := keyOf(p, r)
					d := deciders[id]
					if d == nil {
						d, _ = model.NewDeciderAt(p, baseUs*1000) // windows on the Unix clock, as the script's
						deciders[id] = d
					}
					want := d.Allow(nsOf(r.TNs))
					got, err := lim.Allow(k, usOf(r.TNs))
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						if mismatches < 5 {
							t.Errorf("%s %v: request %d (t=%d ns, key %s): redis %v, model %v", arrivals, p, j, r.TNs, k, got, want)
						}
						mismatches++
					}
					if got {
						admitted[r.Client]++
					}
				}
				var out model.Outcome
				w.NewSimulator().Run(p, &out)
				for i, cr := range out.Clients {
					if cr.Admitted != admitted[i] {
						t.Errorf("%s %v: client %d admitted %d through Redis, %d by Run", arrivals, p, i, admitted[i], cr.Admitted)
					}
				}
				t.Logf("%s %v: %d requests, %d mismatches; caught %d missed %d false cut %d",
					arrivals, p, len(reqs), mismatches, out.Caught, out.Missed, out.FalseCut)
			}
		}
	}
}

// Several nodes share one Redis; each node's writes reach it lag ms late
// (the node counts its own writes in flight). The replay through the scripts
// gives the model's numbers for state: shared and sync_ms: lag, and the
// table shows what N and the lag do to them (go test -v).
func TestSharedRedisWithLag(t *testing.T) {
	c := client(t)
	w := workload(t, configs.Lesson, model.Uniform)
	reqs := w.Requests(0, 0)
	var b strings.Builder
	b.WriteString("| policy | nodes | sync lag | caught | missed | false cut | model agrees |\n|---|---|---|---|---|---|---|\n")
	for _, base := range []model.Policy{
		{Algorithm: model.SlidingWindow, WindowS: 60, Limit: 600},
		{Algorithm: model.FixedWindow, WindowS: 60, Limit: 600},
		{Algorithm: model.TokenBucket, Rate: 10, Capacity: 900},
	} {
		for _, nodes := range []int{1, 4} {
			for _, lagMs := range []int64{0, 100, 1000, 10000} {
				if nodes == 1 && (lagMs == 100 || lagMs == 10000) {
					continue // one node: every lag gives the single-node numbers
				}
				p := base
				p.Nodes, p.State, p.SyncMs = nodes, model.Shared, float64(lagMs)
				lim, err := NewLimiter(c, p, fmt.Sprintf("lag:%v", p), ttl)
				if err != nil {
					t.Fatal(err)
				}
				admitted := replayNodes(t, lim, p, reqs, len(w.Scenario.Clients), lagMs*1e6)
				var out model.Outcome
				w.NewSimulator().Run(p, &out)
				agree := true
				for i, cr := range out.Clients {
					if cr.Admitted != admitted[i] {
						agree = false
						t.Errorf("%v: client %d admitted %d through Redis, %d by the model", p, i, admitted[i], cr.Admitted)
					}
				}
				res := make([]model.ClientResult, len(admitted))
				for i := range res {
					res[i] = model.ClientResult{Offered: out.Clients[i].Offered, Admitted: admitted[i]}
				}
				m := w.Metrics(res)
				fmt.Fprintf(&b, "| %s | %d | %d ms | %d | %d | %d | %v |\n", base, nodes, lagMs, m.Caught, m.Missed, m.FalseCut, agree)
			}
		}
	}
	if testing.Verbose() {
		fmt.Print(b.String())
	}
}

// replayNodes sends request j to node j mod nodes. With lag 0 each decision
// is one atomic script call; otherwise a node peeks at the store plus its own
// writes in flight and its admitted requests reach the store lag later.
func replayNodes(t *testing.T, lim *Limiter, p model.Policy, reqs []model.Request, clients int, lagNs int64) []int64 {
	type write struct {
		t   int64
		key string
	}
	var queue []write
	pending := map[string][]int64{} // node/key → own writes in flight
	admitted := make([]int64, clients)
	for j, r := range reqs {
		node := j % max(1, p.Nodes)
		k, _ := keyOf(p, r)
		var ok bool
		var err error
		if lagNs == 0 {
			ok, err = lim.Allow(k, usOf(r.TNs))
		} else {
			for len(queue) > 0 && queue[0].t+lagNs <= r.TNs {
				if err := lim.Charge(queue[0].key, usOf(queue[0].t)); err != nil {
					t.Fatal(err)
				}
				queue = queue[1:]
			}
			pk := strconv.Itoa(node) + "/" + k
			pend := pending[pk]
			for len(pend) > 0 && pend[0]+lagNs <= r.TNs {
				pend = pend[1:]
			}
			pendUs := make([]int64, len(pend))
			for i, t := range pend {
				pendUs[i] = usOf(t)
			}
			if ok, err = lim.Peek(k, usOf(r.TNs), pendUs); ok {
				queue = append(queue, write{r.TNs, k})
				pend = append(pend, r.TNs)
			}
			pending[pk] = pend
		}
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			admitted[r.Client]++
		}
	}
	return admitted
}

// A time in ns since the Unix epoch (above 2^53) is refused before it
// reaches a script, naming the unit.
func TestLimiterRefusesNs(t *testing.T) {
	l := &Limiter{p: model.Policy{Algorithm: model.FixedWindow, WindowS: 60, Limit: 10}}
	for _, tUs := range []int64{time.Now().UnixNano(), MaxTimeUs, -1} {
		if _, err := l.Allow("k", tUs); err == nil || !strings.Contains(err.Error(), "µs") {
			t.Errorf("Allow at %d: %v, want an error naming µs", tUs, err)
		}
	}
	if _, err := l.Peek("k", baseUs, []int64{time.Now().UnixNano()}); err == nil {
		t.Error("Peek with a write in flight in ns: accepted")
	}
}
