package reference

import (
	"container/heap"
	"math"

	"github.com/ratesweep/ratesweep/model"
)

// Clients that retry (docs/retries.md), without jitter, budgets, throttling
// or Retry-After.

// Retry is how a client answers a rejection: it sends the request again,
// up to MaxRetries times, at once (BaseS 0) or after a back-off whose sleep
// before retry k+1 (k = 0, 1, …) is min(CapS, BaseS·2^k) seconds (CapS 0:
// no cap).
type Retry struct {
	MaxRetries  int
	BaseS, CapS float64
}

// EvaluateRetries decides the intended requests reqs (time order) and the
// retries their clients make (retry(client)): served[i] says whether
// request i was admitted on some try; blocks counts the blocks started. A retry keeps its request's keys,
// status and cost; one that would fall at or after endNs is not made. At one
// instant intended requests go first, in order, then retries in the order
// they were scheduled.
func EvaluateRetries(p model.Policy, reqs []Request, originNs, endNs int64, retry func(client int64) Retry) (served []bool, blocks int64, err error) {
	if err := p.Validate(); err != nil {
		return nil, 0, err
	}
	top, err := newPolicy(p, originNs)
	if err != nil {
		return nil, 0, err
	}
	served = make([]bool, len(reqs))
	q := &tries{}
	for i, r := range reqs {
		heap.Push(q, try{t: r.TimeNs, seq: i, req: i})
	}
	seq := len(reqs)
	for n := 0; q.Len() > 0; n++ {
		x := heap.Pop(q).(try)
		r := reqs[x.req]
		r.TimeNs = x.t
		d := top.decide(r, n)
		if d.Started {
			blocks++
		}
		if d.Admitted {
			served[x.req] = true
			continue
		}
		rt := retry(r.Client)
		if x.n >= rt.MaxRetries {
			continue
		}
		sleep := rt.BaseS * math.Pow(2, float64(x.n))
		if rt.CapS > 0 {
			sleep = min(sleep, rt.CapS)
		}
		if t := x.t + int64(math.Round(sleep*1e9)); t < endNs {
			heap.Push(q, try{t: t, retry: true, seq: seq, req: x.req, n: x.n + 1})
			seq++
		}
	}
	return served, blocks, nil
}

// try is one attempt of request req: n retries before it.
type try struct {
	t           int64
	retry       bool
	seq, req, n int
}

// tries is a heap of attempts by time, intended requests before retries,
// then in order.
type tries []try

func (q tries) Len() int { return len(q) }
func (q tries) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.t != b.t {
		return a.t < b.t
	}
	if a.retry != b.retry {
		return !a.retry
	}
	return a.seq < b.seq
}
func (q tries) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *tries) Push(x any)   { *q = append(*q, x.(try)) }
func (q *tries) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
