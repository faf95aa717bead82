// Package reference is a reference interpreter of rate-limit policies: it
// decides a model.Policy over a stream of requests one request at a time,
// written from the documentation (docs/algorithms.md, docs/keys.md,
// docs/costs.md, docs/penalty-box.md, docs/stacked-limits.md) rather than
// from the model's code, with no fast path inside. The model's simulators,
// batch replays and closed forms are tested against it.
//
// The textbook algorithms are written here in exact arithmetic (big.Rat for
// the buckets). The product-specific algorithms (nginx, haproxy_rate,
// aws_waf_rate, cloudflare_rule, fastly_erl) are driven through the model's
// bare-leaf decider (model.NewDeciderAt), which is tested against the real
// products elsewhere; everything around them (keys, count_if, the penalty
// box, all_of) is this package's own.
package reference

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

const secondNs = int64(1_000_000_000)

// Request is one request of a stream.
type Request struct {
	// TimeNs is the request's time, ns since the origin given to Evaluate;
	// times must not decrease.
	TimeNs int64
	// Client, Address, Account and Org are the request's key of each kind
	// (docs/keys.md); equal values share a limiter.
	Client, Address, Account, Org int64
	// Status is the response's status (0: unknown, never matches count_if).
	Status int
	// Cost is what the request costs, units (0 means 1); it is spent only
	// by a policy whose traffic is costed (Policy.Costed).
	Cost int64
}

// Decision is what the policy did to one request.
type Decision struct {
	Admitted bool
	// Blocked says the request fell in a block of a penalty box (block_s)
	// started by an earlier request; Started that its rejection started one.
	Blocked, Started bool
}

// ErrUnsupported is returned for what the reference does not interpret:
// a random load balancer, lagged shared state.
var ErrUnsupported = errors.New("reference: not interpreted")

// Evaluate decides p over reqs in order. originNs is the Unix time of time
// 0, ns: fixed_window and sliding_counter put their window boundaries on
// the Unix clock (a scenario passes 0). p must be valid (model.Validate).
func Evaluate(p model.Policy, reqs []Request, originNs int64) ([]Decision, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	top, err := newPolicy(p, originNs)
	if err != nil {
		return nil, err
	}
	out := make([]Decision, len(reqs))
	for i, r := range reqs {
		out[i] = top.decide(r, i)
	}
	return out, nil
}

// limiter decides requests of one policy over all its keys. i is the
// request's index in the stream (its node: i mod nodes, round robin).
type limiter interface {
	// fits reports whether r would be admitted now, changing nothing.
	fits(r Request, i int) bool
	// decide decides r and commits it as the policy's rules say.
	decide(r Request, i int) Decision
}

// newPolicy builds p's limiter: all_of, key both, or a keyed leaf with its
// modifiers. Nodes with local state each keep their own limiters; shared
// state without lag is one node's.
func newPolicy(p model.Policy, originNs int64) (limiter, error) {
	if p.Nodes > 1 && (p.LB != model.RoundRobin || p.SyncMs != 0) {
		return nil, fmt.Errorf("%w: random load balancing, sync_ms", ErrUnsupported)
	}
	if p.State == model.Shared {
		p.Nodes = 1
	}
	if p.Stack != nil {
		s := &stack{none: p.Stack.RejectedCounts == model.RejectedCountedByNone}
		for _, c := range p.Stack.Components {
			c.Costed = c.Costed || p.Costed // each component charges the request's cost
			l, err := newPolicy(c, originNs)
			if err != nil {
				return nil, err
			}
			s.parts = append(s.parts, l)
		}
		return s, nil
	}
	if p.Key == model.KeyBoth { // two limits, charged only if both pass
		a, b := p, p
		a.Key, b.Key = model.KeyAddress, model.KeyAccount
		la, _ := newPolicy(a, originNs)
		lb, _ := newPolicy(b, originNs)
		return &stack{none: true, parts: []limiter{la, lb}}, nil
	}
	k := &keyed{p: p, origin: originNs, keys: map[[2]int64]*unit{}}
	if p.CountIf != "" {
		sts, err := model.CountIfStatuses(p.CountIf)
		if err != nil {
			return nil, err
		}
		k.match = map[int]bool{}
		for _, s := range sts {
			k.match[s] = true
		}
	}
	return k, nil
}

// stack is all_of: a request is admitted iff every part admits it. With
// rejected_counts all each part decides as if alone; with none the parts
// look first, commit only when all admit, and a part that rejects applies
// its own rule for a request it rejects.
type stack struct {
	none  bool
	parts []limiter
}

func (s *stack) fits(r Request, i int) bool {
	for _, l := range s.parts {
		if !l.fits(r, i) {
			return false
		}
	}
	return true
}

func (s *stack) decide(r Request, i int) Decision {
	ok := true
	if !s.none {
		for _, l := range s.parts {
			if !l.decide(r, i).Admitted {
				ok = false
			}
		}
		return Decision{Admitted: ok}
	}
	fit := make([]bool, len(s.parts))
	for j, l := range s.parts {
		fit[j] = l.fits(r, i)
		ok = ok && fit[j]
	}
	for j, l := range s.parts {
		if ok || !fit[j] {
			l.decide(r, i)
		}
	}
	return Decision{Admitted: ok}
}

// keyed is one policy (a leaf and its modifiers) with one unit per node
// and key.
type keyed struct {
	p      model.Policy
	origin int64
	match  map[int]bool // count_if's statuses (nil: every request counts)
	keys   map[[2]int64]*unit
}

// unit is one key's state: its leaf and its penalty box.
type unit struct {
	leaf   leaf
	until  int64 // end of the key's last block, ns (exclusive)
	blocks int64 // blocks started
}

func (k *keyed) unit(r Request, i int) *unit {
	v := map[model.Key]int64{model.KeyClient: r.Client, model.KeyAddress: r.Address, model.KeyAccount: r.Account, model.KeyOrg: r.Org}[k.p.Key] // global: 0
	at := [2]int64{int64(i % max(1, k.p.Nodes)), v}
	u := k.keys[at]
	if u == nil {
		u = &unit{leaf: newLeaf(k.p, k.origin), until: math.MinInt64}
		k.keys[at] = u
	}
	return u
}

// cost is what r spends: its cost on costed traffic, else 1.
func (k *keyed) cost(r Request) int64 {
	if k.p.Costed && r.Cost > 1 {
		return r.Cost
	}
	return 1
}

func (k *keyed) fits(r Request, i int) bool {
	u := k.unit(r, i)
	return r.TimeNs >= u.until && u.leaf.fits(r.TimeNs, k.cost(r))
}

// decide: during a block the request is rejected unseen; otherwise a
// request that count_if does not match is admitted iff it fits and spends
// nothing, any other spends its cost all or nothing; a rejection starts a
// block when block_s > 0.
func (k *keyed) decide(r Request, i int) Decision {
	u := k.unit(r, i)
	t := r.TimeNs
	if t < u.until {
		return Decision{Blocked: true}
	}
	var ok bool
	if k.match != nil && !k.match[r.Status] {
		ok = u.leaf.fits(t, k.cost(r))
	} else {
		ok = u.leaf.take(t, k.cost(r))
	}
	if !ok && k.p.BlockS > 0 {
		n := blockNs(k.p.BlockS)
		if k.p.BlockLevels != nil {
			for _, l := range *k.p.BlockLevels {
				if u.blocks >= l.After {
					n = blockNs(l.BlockS)
				}
			}
		}
		u.until = t + n
		u.blocks++
		return Decision{Started: true}
	}
	return Decision{Admitted: ok}
}

// blockNs is a block of s seconds in ns (a whole number of ms).
func blockNs(s float64) int64 { return int64(math.Round(s*1000)) * 1_000_000 }

// leaf is one key's algorithm. take decides a request of cost c at t and
// commits it as the algorithm does (a rejected request changes the state
// only where the algorithm counts rejections); fits reports whether take
// would admit it, changing nothing.
type leaf interface {
	fits(t, c int64) bool
	take(t, c int64) bool
}

func newLeaf(p model.Policy, origin int64) leaf {
	switch p.Algorithm.String() {
	case "fixed_window":
		return &fixedWindow{limit: p.Limit, w: int64(p.WindowS) * secondNs, shift: origin - int64(p.PhaseS)*secondNs}
	case "fixed_window_anchored":
		return &anchored{limit: p.Limit, w: int64(p.WindowS) * secondNs}
	case "sliding_window":
		return &slidingLog{limit: p.Limit, w: int64(p.WindowS) * secondNs}
	case "sliding_log":
		return &slidingLog{limit: p.Limit, w: int64(p.WindowS) * secondNs, logRejected: true}
	case "concurrency": // in flight for service_s: the admitted requests of the last service_s
		return &slidingLog{limit: p.Limit, w: int64(math.Round(p.ServiceS * 1e9))}
	case "sliding_counter":
		return &slidingCounter{limit: p.Limit, w: int64(p.WindowS) * secondNs, origin: origin}
	case "token_bucket":
		r := rateOf(p.Rate)
		return &tokenBucket{rate: r, capacity: p.Capacity, tokens: new(big.Rat).SetInt64(p.Capacity),
			slack: new(big.Rat).Quo(r, new(big.Rat).SetInt64(secondNs))}
	case "gcra":
		r := rateOf(p.Rate) // T = 1/rate in whole ns, truncated
		T := new(big.Int).Quo(new(big.Int).Mul(r.Denom(), big.NewInt(secondNs)), r.Num()).Int64()
		return &gcra{period: T, tau: (p.Capacity - 1) * T, fresh: true}
	}
	bare := p // the algorithm alone: keys, nodes and modifiers are this package's
	bare.Key, bare.Nodes, bare.State, bare.BlockS, bare.BlockLevels, bare.CountIf, bare.Costed = 0, 0, 0, 0, nil, "", false
	return &product{p: bare, origin: origin}
}

// fixedWindow counts the units admitted in each window [phase_s +
// k·window_s, phase_s + (k+1)·window_s) of the Unix clock; a request is
// admitted iff its units fit within limit. shift is origin − phase_s, ns.
type fixedWindow struct {
	limit, w, shift int64
	win, count      int64
	used            bool
}

func (f *fixedWindow) at(t int64) int64 {
	k := floorDiv(t+f.shift, f.w)
	if !f.used || k != f.win {
		return 0
	}
	return f.count
}

func (f *fixedWindow) fits(t, c int64) bool { return f.at(t)+c <= f.limit }

func (f *fixedWindow) take(t, c int64) bool {
	n := f.at(t)
	if n+c > f.limit {
		return false
	}
	f.win, f.count, f.used = floorDiv(t+f.shift, f.w), n+c, true
	return true
}

// anchored is fixed_window_anchored: the first hit after the last window
// ended opens a window [t, t + window_s); every hit counts its units,
// admitted or not, and is admitted iff the hits stay within limit.
type anchored struct {
	limit, w  int64
	end, hits int64
	opened    bool
}

func (a *anchored) at(t int64) int64 {
	if !a.opened || t >= a.end {
		return 0
	}
	return a.hits
}

func (a *anchored) fits(t, c int64) bool { return a.at(t)+c <= a.limit }

func (a *anchored) take(t, c int64) bool {
	if !a.opened || t >= a.end {
		a.opened, a.end, a.hits = true, t+a.w, 0
	}
	a.hits += c
	return a.hits <= a.limit
}

// slidingLog logs units at their times; a request is admitted iff the
// units logged in (t − w, t] plus its own stay within limit. It logs the
// admitted requests (sliding_window, concurrency) or every attempt
// (sliding_log).
type slidingLog struct {
	limit, w    int64
	logRejected bool
	log         []struct{ t, c int64 }
}

func (s *slidingLog) inWindow(t int64) (n int64) {
	for _, e := range s.log {
		if e.t > t-s.w {
			n += e.c
		}
	}
	return n
}

func (s *slidingLog) fits(t, c int64) bool { return s.inWindow(t)+c <= s.limit }

func (s *slidingLog) take(t, c int64) bool {
	ok := s.fits(t, c)
	if ok || s.logRejected {
		s.log = append(s.log, struct{ t, c int64 }{t, c})
	}
	return ok
}

// slidingCounter is Cloudflare's sliding window counter (RussellLuo/
// slidingwindow): windows [k·W, (k+1)·W) of the Unix clock count admitted
// units; at t, elapsed e into the current window, the estimate is
// floor((W − e)/W · prev) + curr in float64 as the library computes it, and
// a request is admitted iff estimate + c <= limit.
type slidingCounter struct {
	limit, w, origin int64
	win, prev, curr  int64
	used             bool
}

// state returns t's window, the previous window's count and the current one's.
func (s *slidingCounter) state(t int64) (k, prev, curr int64) {
	k = floorDiv(t+s.origin, s.w)
	switch {
	case !s.used || k > s.win+1:
		return k, 0, 0
	case k == s.win+1:
		return k, s.curr, 0
	}
	return k, s.prev, s.curr
}

func (s *slidingCounter) estimate(t int64) (k, prev, curr, est int64) {
	k, prev, curr = s.state(t)
	e := t + s.origin - k*s.w
	return k, prev, curr, int64(float64(s.w-e)/float64(s.w)*float64(prev)) + curr
}

func (s *slidingCounter) fits(t, c int64) bool {
	_, _, _, est := s.estimate(t)
	return est+c <= s.limit
}

func (s *slidingCounter) take(t, c int64) bool {
	k, prev, curr, est := s.estimate(t)
	if est+c > s.limit {
		return false
	}
	s.win, s.prev, s.curr, s.used = k, prev, curr+c, true
	return true
}

// tokenBucket starts full with capacity tokens and refills continuously at
// rate tokens/s up to capacity. A request of cost c <= capacity is admitted
// iff the tokens it leaves are above −(rate · 1 ns): x/time/rate truncates
// the wait for the deficit to whole ns, so a deficit worth less than 1 ns of
// refill passes. Rejected requests leave the bucket as it was.
type tokenBucket struct {
	rate, tokens, slack *big.Rat // tokens/s; tokens at last; rate · 1 ns
	capacity, last      int64
}

func (b *tokenBucket) at(t int64) *big.Rat {
	x := new(big.Rat).Mul(b.rate, big.NewRat(t-b.last, secondNs))
	x.Add(x, b.tokens)
	if cp := new(big.Rat).SetInt64(b.capacity); x.Cmp(cp) > 0 {
		return cp
	}
	return x
}

func (b *tokenBucket) left(t, c int64) (*big.Rat, bool) {
	if c > b.capacity {
		return nil, false
	}
	x := b.at(t)
	x.Sub(x, new(big.Rat).SetInt64(c))
	return x, new(big.Rat).Add(x, b.slack).Sign() > 0
}

func (b *tokenBucket) fits(t, c int64) bool { _, ok := b.left(t, c); return ok }

func (b *tokenBucket) take(t, c int64) bool {
	x, ok := b.left(t, c)
	if ok {
		b.tokens, b.last = x, t
	}
	return ok
}

// gcra keeps a theoretical arrival time (TAT). With emission interval T
// (1/rate in whole ns, truncated) and tolerance τ = (capacity − 1)·T, a
// request of cost c at t is admitted iff max(TAT, t) − t + (c − 1)·T <= τ,
// and then TAT = max(TAT, t) + c·T; a new key's TAT is t.
type gcra struct {
	period, tau, tat int64
	fresh            bool
}

func (g *gcra) fits(t, c int64) bool {
	tat := t
	if !g.fresh {
		tat = max(g.tat, t)
	}
	return tat-t+(c-1)*g.period <= g.tau
}

func (g *gcra) take(t, c int64) bool {
	if !g.fits(t, c) {
		return false
	}
	if g.fresh {
		g.tat = t
	}
	g.tat, g.fresh = max(g.tat, t)+c*g.period, false
	return true
}

// product is an algorithm modelled on a product (nginx, haproxy_rate, the
// managed rules): its bare decider (model.NewDeciderAt, tested against the
// product elsewhere) decides each request it is shown; fits replays the
// requests shown so far into a new decider and asks it, so nothing but the
// decider's own rule is involved. Costs are refused for these (Validate).
type product struct {
	p      model.Policy
	origin int64
	d      model.Decider
	shown  []int64
}

func (q *product) decider() model.Decider {
	d, err := model.NewDeciderAt(q.p, q.origin)
	if err != nil {
		panic(err) // the policy was validated
	}
	return d
}

func (q *product) fits(t, _ int64) bool {
	d := q.decider()
	for _, s := range q.shown {
		d.Allow(s)
	}
	return d.Allow(t)
}

func (q *product) take(t, _ int64) bool {
	if q.d == nil {
		q.d = q.decider()
	}
	q.shown = append(q.shown, t)
	return q.d.Allow(t)
}

// rateOf reads a rate as the number written: a decimal of at most 9
// fractional digits is that decimal exactly (0.1 = 1/10); any other float
// (1/60, a log-scaled grid value) is the first continued-fraction
// convergent that rounds back to it, else the last one whose denominator is
// at most 10^9.
func rateOf(rate float64) *big.Rat {
	s := strconv.FormatFloat(rate, 'f', -1, 64)
	if _, frac, _ := strings.Cut(s, "."); len(frac) <= 9 {
		r, _ := new(big.Rat).SetString(s)
		return r
	}
	x := new(big.Rat).SetFloat64(rate)
	var best *big.Rat
	h0, h1, k0, k1 := big.NewInt(0), big.NewInt(1), big.NewInt(1), big.NewInt(0)
	num, den := new(big.Int).Set(x.Num()), new(big.Int).Set(x.Denom())
	for den.Sign() != 0 {
		a, rem := new(big.Int).QuoRem(num, den, new(big.Int))
		h0, h1 = h1, new(big.Int).Add(new(big.Int).Mul(a, h1), h0)
		k0, k1 = k1, new(big.Int).Add(new(big.Int).Mul(a, k1), k0)
		if k1.Cmp(big.NewInt(1_000_000_000)) > 0 {
			break
		}
		best = new(big.Rat).SetFrac(h1, k1)
		if f, _ := best.Float64(); f == rate {
			break
		}
		num, den = den, rem
	}
	return best
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
