package model

// Helpers for the operations on deciders that keyed and distributed
// simulation needs beyond Allow (the decider interface's peek, charge,
// cloneInto and stateSize, which each algorithm's file implements).

// countsRejected reports whether the algorithm charges rejected requests to
// its state (sliding_log logs every attempt; fixed_window_anchored counts
// every hit).
func countsRejected(a Algorithm) bool { return a.Describe().CountsRejected }

// copyInto is cloneInto for deciders without buffers: dst if it is one of
// src's type, else a new one, set to a copy of src.
func copyInto[T any, P interface {
	*T
	decider
}](dst decider, src P) decider {
	d, _ := dst.(P)
	if d == nil {
		d = P(new(T))
	}
	*d = *src
	return d
}

// Nominal state sizes, bytes: one 8-byte word per number a limiter keeps for
// a key, and 8 bytes per request a log holds (one timestamp each, as a Redis
// sorted set holds one member per request). Key names are not counted.
const (
	wordBytes = 8
)
