package model

// Operations on deciders that keyed and distributed simulation needs beyond
// Allow: look without committing (peek), commit without deciding (charge),
// copy (cloneInto) and measure (stateSize). Each decider implements them in
// its algorithm's file; these are the simulators' names for them.

// countsRejected reports whether the algorithm charges rejected requests to
// its state (sliding_log logs every attempt; fixed_window_anchored counts
// every hit).
func countsRejected(a Algorithm) bool { return a.Describe().CountsRejected }

// peek reports whether d would admit a request at t, leaving its decisions
// unchanged.
func peek(d decider, t int64) bool { return d.peek(t) }

// charge commits one request at t to d's state as an admitted request
// would.
func charge(d decider, t int64) { d.charge(t) }

// cloneInto makes dst (a decider of the same algorithm, or nil) a copy of
// src and returns it.
func cloneInto(dst, src decider) decider { return src.cloneInto(dst) }

// stateSize reports whether d holds live state for its key at t and how
// many bytes it takes.
func stateSize(d decider, t int64) (live bool, bytes int64) { return d.stateSize(t) }

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
