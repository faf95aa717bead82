package model

import (
	"time"
)

// secondNs is one second in nanoseconds, the unit of every event time.
const secondNs = int64(time.Second)

// Decider is one key's limiter, deciding request by request. Times are
// nanoseconds since the start of the scenario; they must not decrease from
// one call to the next (until Reset), as with the real libraries.
//
// The event simulation runs every algorithm through its Decider, and the
// oracle tests compare the same Deciders with real limiter libraries.
type Decider interface {
	// Reset returns the decider to the state of a key never seen.
	Reset()
	// Allow reports whether a request arriving at tNs is admitted.
	Allow(tNs int64) bool
	// AllowN offers n >= 0 requests arriving together at tNs and returns how
	// many are admitted; it is the same as n calls Allow(tNs).
	AllowN(tNs, n int64) int64
}

// Shaper is a Decider that may delay the requests it admits (nginx).
type Shaper interface {
	Decider
	// DelayNs is how long the request last admitted by Allow waits before it
	// is served, ns.
	DelayNs() int64
}

// NewDecider returns a Decider for policy p, in the state of a new key.
func NewDecider(p Policy) (Decider, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return newDecider(p), nil
}

// NewDeciderAt returns a Decider for policy p whose event times are ns
// since originNs, a Unix time in ns (a replayed log's first second), with
// its windows on the wall clock as deployed limiters put them: fixed_window's
// boundaries at Unix phase_s + k·window_s (envoy, Kong, a Redis INCR per
// window), sliding_counter's windows at Unix k·window_s (Cloudflare,
// RussellLuo/slidingwindow's time.Truncate). Every other algorithm has no
// boundaries and decides as NewDecider's; fixed_window_anchored's windows
// open at each key's first request (express-rate-limit, ulule/limiter).
// NewDecider is NewDeciderAt with the origin itself on a boundary (a
// scenario's t = 0).
func NewDeciderAt(p Policy, originNs int64) (Decider, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	d := newDecider(p)
	atOrigin(d, originNs)
	return d, nil
}

// atOrigin moves a configured decider's window boundaries for event times
// counted from originNs (NewDeciderAt).
// Deciders with window boundaries implement it (originer); the others have
// none to move.
func atOrigin(d decider, originNs int64) {
	if o, ok := d.(originer); ok {
		o.atOrigin(originNs)
	}
}

// originer is a decider with window boundaries on the clock.
type originer interface{ atOrigin(originNs int64) }

// floorMod is a mod b in [0, b) (b > 0).
func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// decider is a Decider that can be reconfigured without allocating, so the
// Simulator keeps one per algorithm, with the operations keyed and
// distributed simulation need beyond Allow: look without committing (peek),
// commit without deciding (charge), copy (cloneInto) and measure
// (stateSize).
type decider interface {
	Decider
	// configure sets the parameters of a valid policy and resets the state,
	// keeping buffers.
	configure(p Policy)
	// peek reports whether the decider would admit a request at t, leaving
	// its decisions unchanged (a sliding log may drop entries that have
	// expired by t).
	peek(t int64) bool
	// charge commits one request at t (not before the last charge) to the
	// state as an admitted request would, whether or not it would be
	// admitted: a shared store applies the writes the nodes send it.
	charge(t int64)
	// cloneInto makes dst (a decider of the same algorithm, or nil) a copy
	// of the decider and returns it, reusing dst's buffers.
	cloneInto(dst decider) decider
	// stateSize reports whether the decider holds live state for its key at
	// t (state a new key would not have, and that a store with expiry would
	// still keep) and how many bytes it takes (charge.go).
	stateSize(t int64) (live bool, bytes int64)
}

func newDecider(p Policy) decider {
	desc := p.Algorithm.Describe()
	if desc == nil {
		panic("model: no decider for " + p.Algorithm.String())
	}
	d := desc.decider()
	d.configure(p)
	return modify(d, p)
}

// admitBatches runs d over per-second batches (fluid arrivals: the a[t]
// requests of second t arrive together at t seconds), writes the admitted
// requests per second into adm and returns the total. When d shapes and
// delays is not nil, the delay of every admitted request is recorded.
func admitBatches(d Decider, a, adm []int32, delays *delayStats) int64 {
	adm = adm[:len(a)]
	sh, shapes := d.(Shaper)
	shapes = shapes && delays != nil
	d.Reset()
	var total int64
	for t, x := range a {
		tNs := int64(t) * secondNs
		var n int64
		if shapes {
			for ; n < int64(x) && d.Allow(tNs); n++ {
				delays.add(sh.DelayNs())
			}
		} else if x > 0 {
			n = d.AllowN(tNs, int64(x))
		}
		adm[t] = int32(n)
		total += n
	}
	return total
}

// admitEvents runs d over request times (non-decreasing, ns) and returns the
// number admitted, recording delays as admitBatches does.
func admitEvents(d Decider, times []int64, delays *delayStats) int64 {
	d.Reset()
	var total int64
	if sh, ok := d.(Shaper); ok && delays != nil {
		for _, t := range times {
			if d.Allow(t) {
				total++
				delays.add(sh.DelayNs())
			}
		}
		return total
	}
	if c, ok := d.(eventCounter); ok {
		return c.countAdmitted(times)
	}
	for _, t := range times {
		if d.Allow(t) {
			total++
		}
	}
	return total
}

// eventCounter is a decider with its own loop over a key's requests, whose
// direct calls the compiler can inline: the same decisions as admitEvents's
// loop through the interface, at a fraction of the cost per request, and
// free of where the linker happens to place the callee.
type eventCounter interface {
	countAdmitted(times []int64) int64
}

// admitted is how many of n requests fit below limit when used requests
// already count against it.
func admitted(limit, used, n int64) int64 { return min(n, max(0, limit-used)) }

// floorDiv is a/b rounded towards minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
