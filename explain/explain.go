// Package explain says why a policy cuts each legitimate client's requests
// (and admits each abusive client's), by re-simulating exactly that
// client's requests under counterfactual policies.
//
// A legitimate request the policy cuts gets the first cause, in this order,
// whose counterfactual admits it:
//
//   - SharedKey: the policy with the client alone on its keys (the same
//     keys, no other client's requests on them);
//   - WindowShape: a sliding_log at the same rate and window (Shape), the
//     client alone on its keys;
//   - Burst: the policy at twice its burst or capacity (Burst), the client
//     alone on its keys;
//   - SustainedRate: none of these.
//
// An abusive request the policy admits (missed) gets the mirror: the first
// counterfactual that cuts it, with half the burst or capacity instead of
// twice.
//
// The requests are realisation (seed, 0) of the scenario, the one the sweep
// simulated as replicate 0. Explain checks that its replay admits exactly
// what the simulation admits for every client, and refuses otherwise.
package explain

import (
	"errors"
	"fmt"
	"math"

	"github.com/ratesweep/ratesweep/model"
)

// Cause is why a request was cut (or, for an abusive client, admitted).
type Cause uint8

const (
	SharedKey     Cause = iota // the key is shared with other clients
	WindowShape                // the window's shape, not its rate
	Burst                      // too small a burst or capacity
	SustainedRate              // the rate itself
	NumCauses
)

var causeNames = [NumCauses]string{"shared_key", "window_shape", "burst", "sustained_rate"}

func (c Cause) String() string {
	if c < NumCauses {
		return causeNames[c]
	}
	return fmt.Sprintf("Cause(%d)", uint8(c))
}

// Client is one client's explanation under one policy.
type Client struct {
	Index int    // in the scenario
	Name  string // the scenario's name for it
	Class model.Class
	// Offered is the requests it sent; Affected those the policy cut
	// (legitimate client) or admitted (abusive client, missed).
	Offered, Affected int64
	// ByCause splits Affected by cause.
	ByCause [NumCauses]int64
}

// Result is a policy's explanation over a scenario.
type Result struct {
	Policy model.Policy
	Label  string // the policy's canonical label
	// Shape is the sliding_log of WindowShape; Burst and Tight the policy
	// at twice and at half its burst or capacity. HasBurst is false for
	// window algorithms, whose limit is both rate and burst: Burst never
	// applies to them.
	Shape, Burst, Tight model.Policy
	HasBurst            bool
	Clients             []Client // every client, in scenario order
}

// UnsupportedError is a combination explain refuses rather than explain
// wrongly.
type UnsupportedError struct{ Err error }

func (e *UnsupportedError) Error() string { return e.Err.Error() }
func (e *UnsupportedError) Unwrap() error { return e.Err }

// Supported reports why p over sc cannot be explained, or nil.
func Supported(sc *model.Scenario, p model.Policy) error {
	switch {
	case sc.Reacts():
		return errors.New("clients that react to rejections (retries, throttling) are not supported")
	case p.Stacked():
		return errors.New("all_of policies are not supported")
	case p.Weighed():
		return errors.New("policies that weigh requests (costs, count_if) are not supported")
	case p.Nodes > 1 || p.State != model.Local || p.SyncMs != 0:
		return errors.New("policies over several nodes or on shared state are not supported")
	case p.BlockS > 0 || p.BlockLevels != nil:
		return errors.New("penalty boxes (block_s) are not supported")
	case p.Key != model.KeyClient && p.Key != model.KeyAddress && p.Key != model.KeyAccount && p.Key != model.KeyGlobal:
		return fmt.Errorf("key %s is not supported (client, address, account and global are)", p.Key)
	}
	if _, _, _, err := counterfactuals(p); err != nil {
		return err
	}
	return nil
}

// counterfactuals returns p's sliding_log (window shape), p at twice and at
// half its burst or capacity, and whether p has a burst apart from its rate.
//
// Same rate and window: a window algorithm keeps window_s and limit. A
// bucket (token_bucket, gcra, traefik: capacity C at rate R; nginx: burst
// B, so C = B+1 pass at once) becomes the sliding log of window_s =
// ceil(C/R) seconds (the time the bucket takes to refill from empty) and
// limit = round(R·window_s), at least C.
//
// Twice the burst: capacity 2C; for nginx, burst and delay such that twice
// as many pass at once (2(B+1)−1, and 2(D+1)−1 when delay < burst, else
// nodelay kept). Half: capacity max(1, C/2) rounded down; nginx likewise.
func counterfactuals(p model.Policy) (shape, burst, tight model.Policy, err error) {
	shape = model.Policy{Algorithm: model.SlidingLog}
	burst, tight = p, p
	switch p.Algorithm {
	case model.FixedWindow, model.FixedWindowAnchored, model.SlidingWindow, model.SlidingLog, model.SlidingCounter:
		shape.WindowS, shape.Limit = p.WindowS, p.Limit
		return shape, p, p, nil
	case model.TokenBucket, model.GCRA, model.Traefik:
		c := p.Capacity
		shape.WindowS, shape.Limit = bucketWindow(float64(c), p.Rate)
		burst.Capacity, tight.Capacity = 2*c, max(1, c/2)
	case model.Nginx:
		c := p.Burst + 1
		shape.WindowS, shape.Limit = bucketWindow(float64(c), p.Rate)
		burst.Burst, tight.Burst = 2*c-1, max(1, c/2)-1
		burst.Delay, tight.Delay = nginxDelay(p, burst.Burst, 2), nginxDelay(p, tight.Burst, 0.5)
	default:
		return shape, burst, tight, fmt.Errorf("algorithm %s is not supported (window algorithms, token_bucket, gcra, nginx and traefik are)", p.Algorithm)
	}
	for _, q := range []model.Policy{shape, burst, tight} {
		if err := q.Validate(); err != nil {
			return shape, burst, tight, fmt.Errorf("counterfactual %s: %w", q.Canonical(), err)
		}
	}
	return shape, burst, tight, nil
}

// bucketWindow is the sliding log of a bucket of capacity c refilled at
// rate r (requests/s): window ceil(c/r) s, limit round(r·window), >= c.
func bucketWindow(c, r float64) (windowS int, limit int64) {
	w := max(1, math.Ceil(c/r-1e-9))
	return int(w), max(int64(c), int64(math.Round(r*w)))
}

// nginxDelay scales nginx's delay with its burst (factor f on delay+1),
// keeping nodelay (delay >= burst) as nodelay.
func nginxDelay(p model.Policy, burst int64, f float64) int64 {
	if p.Delay >= p.Burst {
		return burst
	}
	return min(burst, max(0, int64(math.Floor(float64(p.Delay+1)*f))-1))
}

// Explain explains p over w's realisation (seed, 0).
func Explain(w *model.Workload, p model.Policy, seed uint64) (*Result, error) {
	sc := w.Scenario
	if err := Supported(sc, p); err != nil {
		return nil, &UnsupportedError{fmt.Errorf("%s: %w", p.Canonical(), err)}
	}
	shape, burst, tight, _ := counterfactuals(p)
	res := &Result{Policy: p, Label: p.Canonical(), Shape: shape, Burst: burst, Tight: tight, HasBurst: burst != p}
	reqs := w.Requests(seed, 0)
	// The policy as simulated: one decider per key.
	admitted := make([]bool, len(reqs))
	deciders := map[int]model.Decider{}
	keyOf := func(r model.Request) int {
		switch p.Key {
		case model.KeyAddress:
			return r.Address
		case model.KeyAccount:
			return r.Account
		case model.KeyGlobal:
			return 0
		}
		return r.Client
	}
	for j, r := range reqs {
		k := keyOf(r)
		d := deciders[k]
		if d == nil {
			var err error
			if d, err = model.NewDecider(p); err != nil {
				return nil, err
			}
			deciders[k] = d
		}
		admitted[j] = d.Allow(r.TNs)
	}
	// Each client's requests, in time order.
	own := make([][]int, len(sc.Clients))
	for j, r := range reqs {
		own[r.Client] = append(own[r.Client], j)
	}
	if err := verify(w, p, seed, own, admitted); err != nil {
		return nil, err
	}
	alone, err := newReplayer(p, keyOf)
	if err != nil {
		return nil, err
	}
	sh, err := newReplayer(shape, keyOf)
	if err != nil {
		return nil, err
	}
	wide, err := newReplayer(burst, keyOf)
	if err != nil {
		return nil, err
	}
	narrow, err := newReplayer(tight, keyOf)
	if err != nil {
		return nil, err
	}
	for i := range sc.Clients {
		c := &sc.Clients[i]
		ex := Client{Index: i, Name: c.Name, Class: c.Class, Offered: int64(len(own[i]))}
		legit := c.Class == model.Legit
		cf := [3]*replayer{alone, sh, wide}
		if !legit {
			cf[2] = narrow
		}
		var got [3][]bool
		for k, r := range cf {
			got[k] = r.replay(reqs, own[i])
		}
		for n, j := range own[i] {
			if admitted[j] == legit { // a legitimate request admitted, or an abusive one cut
				continue
			}
			ex.Affected++
			cause := SustainedRate
			for k := range got {
				if Cause(k) == Burst && !res.HasBurst {
					continue
				}
				if got[k][n] == legit {
					cause = Cause(k)
					break
				}
			}
			ex.ByCause[cause]++
		}
		res.Clients = append(res.Clients, ex)
	}
	return res, nil
}

// verify checks the replay against the simulation: every client's
// admitted requests equal.
func verify(w *model.Workload, p model.Policy, seed uint64, own [][]int, admitted []bool) error {
	s := w.NewSimulator()
	s.SetReplicate(seed, 0)
	var out model.Outcome
	s.Run(p, &out)
	for i, idx := range own {
		var n int64
		for _, j := range idx {
			if admitted[j] {
				n++
			}
		}
		if got := out.Clients[i]; got.Offered != int64(len(idx)) || got.Admitted != n {
			return &UnsupportedError{fmt.Errorf("%s: the replay admits %d of client %q's %d requests, the simulation %d of %d: this combination cannot be explained",
				p.Canonical(), n, w.Scenario.Clients[i].Name, len(idx), got.Admitted, got.Offered)}
		}
	}
	return nil
}

// replayer decides one client's requests alone: on the keys they have
// under the policy's key, with no other client's requests on them.
type replayer struct {
	p    model.Policy
	key  func(model.Request) int
	live map[int]model.Decider
	free []model.Decider
	buf  []bool
}

func newReplayer(p model.Policy, key func(model.Request) int) (*replayer, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &replayer{p: p, key: key, live: map[int]model.Decider{}}, nil
}

// replay returns the decisions on reqs[idx] in order, every key new
// (valid until the next call).
func (r *replayer) replay(reqs []model.Request, idx []int) []bool {
	for k, d := range r.live {
		r.free = append(r.free, d)
		delete(r.live, k)
	}
	r.buf = r.buf[:0]
	for _, j := range idx {
		k := r.key(reqs[j])
		d := r.live[k]
		if d == nil {
			if n := len(r.free); n > 0 {
				d, r.free = r.free[n-1], r.free[:n-1]
			} else {
				d, _ = model.NewDecider(r.p) // validated in newReplayer
			}
			d.Reset()
			r.live[k] = d
		}
		r.buf = append(r.buf, d.Allow(reqs[j].TNs))
	}
	return r.buf
}
