package model

// The reactors' small structures: the retry queue and the per-second windows
// of budgets and throttling.

// retry is a retry waiting in the queue.
type retry struct {
	t     int64   // when it is sent, ns
	seq   int64   // order of scheduling, among retries at one time
	req   int32   // the intended request it retries (index in times)
	try   int32   // 1 for the first retry
	sleep float64 // the sleep before it, s (decorrelated jitter)
}

// retryQueue is a min-heap of retries by (t, seq), typed so that a push
// or pop does not box a retry (container/heap's any would allocate each).
// (t, seq) is unique, so the order retries come out in is that of any heap.
type retryQueue []retry

func (q retryQueue) less(i, j int) bool {
	return q[i].t < q[j].t || q[i].t == q[j].t && q[i].seq < q[j].seq
}

// push adds x.
func (q *retryQueue) push(x retry) {
	h := append(*q, x)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

// pop removes and returns the earliest retry (q is not empty).
func (q *retryQueue) pop() retry {
	h := *q
	x := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
	*q = h
	return x
}

// secWindow is a sum over the trailing n whole seconds (the current one
// included), kept per second.
type secWindow struct {
	sums  []int64 // by second mod n
	last  int64   // the latest second seen
	total int64
}

func (w *secWindow) reset(n int) {
	if len(w.sums) != n {
		w.sums = make([]int64, n)
	}
	clear(w.sums)
	w.last, w.total = 0, 0
}

// advance drops the seconds that left the window by sec (not before last).
func (w *secWindow) advance(sec int64) {
	n := int64(len(w.sums))
	if sec-w.last >= n {
		clear(w.sums)
		w.total = 0
	} else {
		for s := w.last + 1; s <= sec; s++ {
			w.total -= w.sums[s%n]
			w.sums[s%n] = 0
		}
	}
	w.last = max(w.last, sec)
}

func (w *secWindow) add(sec, v int64) {
	w.advance(sec)
	w.sums[sec%int64(len(w.sums))] += v
	w.total += v
}

func (w *secWindow) sum(sec int64) int64 {
	w.advance(sec)
	return w.total
}
