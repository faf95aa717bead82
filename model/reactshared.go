package model

// One key for all: every client's requests and retries to one decider in time
// order.

import (
	"container/heap"
)

// runShared sends every client's requests and retries to one decider d in
// time order: at one time intended requests go before retries; intended
// requests in scenario order of their clients, retries in the order they
// were scheduled (whichever client scheduled them).
func (rs *reactSim) runShared(d decider, nc int, endNs int64, shaped *delayStats) {
	d.Reset()
	q := &rs.queue
	*q = (*q)[:0]
	rs.seq = 0
	for i := range nc {
		r := rs.rs[i]
		r.counter = &rs.seq
		if n, ok := r.nextShared(i); ok {
			*q = append(*q, n)
		}
	}
	heap.Init(q)
	for len(*q) > 0 {
		c := (*q)[0].client
		r := rs.rs[c]
		r.step(d, endNs, shaped)
		if n, ok := r.nextShared(c); ok {
			(*q)[0] = n
			heap.Fix(q, 0)
		} else {
			heap.Pop(q)
		}
	}
}

// nextShared is client c's next request in a shared key's queue; ok is
// false when the client is done.
func (r *reactor) nextShared(c int) (n clientNext, ok bool) {
	t, isRetry, ok := r.pending()
	n = clientNext{t: t, isRetry: isRetry, client: c}
	if isRetry {
		n.seq = r.retries[0].seq
	}
	return n, ok
}

// clientNext is a client's next request in a shared key's queue.
type clientNext struct {
	t       int64
	isRetry bool
	seq     int64 // a retry's number in the order of scheduling
	client  int
}

// clientQueue is a min-heap of clients by (t, isRetry, seq, client).
type clientQueue []clientNext

func (q clientQueue) Len() int { return len(q) }

func (q clientQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.t != b.t {
		return a.t < b.t
	}
	if a.isRetry != b.isRetry {
		return !a.isRetry
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return a.client < b.client
}

func (q clientQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

func (q *clientQueue) Push(x any) { *q = append(*q, x.(clientNext)) }

func (q *clientQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
