package model

import (
	"fmt"
	"math"
)

// Algorithm names a rate-limiting algorithm.
type Algorithm uint8

const (
	FixedWindow   Algorithm = iota + 1 // counter reset at each window boundary
	SlidingWindow                      // admitted requests in the last window seconds
	TokenBucket                        // refilled bucket, starts full
)

var algorithmNames = map[Algorithm]string{
	FixedWindow:   "fixed_window",
	SlidingWindow: "sliding_window",
	TokenBucket:   "token_bucket",
}

// Algorithms lists every algorithm in a stable order.
var Algorithms = []Algorithm{FixedWindow, SlidingWindow, TokenBucket}

func (a Algorithm) String() string {
	if n, ok := algorithmNames[a]; ok {
		return n
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// ParseAlgorithm returns the algorithm with the given snake_case name.
func ParseAlgorithm(name string) (Algorithm, bool) {
	for a, n := range algorithmNames {
		if n == name {
			return a, true
		}
	}
	return 0, false
}

// Param describes one policy parameter. Its Name is also its Parquet column.
type Param struct {
	Name  string
	Int   bool   // an int64 column (whole numbers only); otherwise a double column
	Whole bool   // whole numbers only, even in a double column
	Unit  string // for help and axis labels
	Min   float64
	// MinOpen makes Min exclusive (value > Min) rather than inclusive.
	MinOpen bool
}

// Params lists every parameter of every algorithm, in column order.
var Params = []Param{
	{Name: "window_s", Whole: true, Unit: "s", Min: 0, MinOpen: true},
	{Name: "limit", Int: true, Unit: "requests", Min: 0},
	{Name: "rate", Unit: "tokens/s", Min: 0, MinOpen: true},
	{Name: "capacity", Int: true, Unit: "tokens", Min: 1},
}

// LookupParam returns the parameter called name.
func LookupParam(name string) (Param, bool) {
	for _, p := range Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// Params lists the parameter names an algorithm takes; all are required.
func (a Algorithm) Params() []string {
	switch a {
	case FixedWindow, SlidingWindow:
		return []string{"window_s", "limit"}
	case TokenBucket:
		return []string{"rate", "capacity"}
	}
	return nil
}

// Policy is one algorithm with one setting of its parameters, applied per key.
type Policy struct {
	Algorithm Algorithm
	WindowS   int     // fixed_window, sliding_window: window length, seconds
	Limit     int64   // fixed_window, sliding_window: requests admitted per window
	Rate      float64 // token_bucket: tokens added per second
	Capacity  int64   // token_bucket: bucket size, tokens (the bucket starts full)
}

// Validate reports parameters out of range for the policy's algorithm.
func (p Policy) Validate() error {
	switch p.Algorithm {
	case FixedWindow, SlidingWindow:
		if p.WindowS <= 0 {
			return fieldErr("window_s", "must be > 0 seconds, got %d", p.WindowS)
		}
		if p.Limit < 0 {
			return fieldErr("limit", "must be >= 0 requests, got %d", p.Limit)
		}
	case TokenBucket:
		if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
			return fieldErr("rate", "must be a finite number > 0 tokens/s, got %v", p.Rate)
		}
		if p.Capacity < 1 {
			return fieldErr("capacity", "must be >= 1 token, got %d", p.Capacity)
		}
	default:
		return fieldErr("algorithm", "unknown algorithm %d", p.Algorithm)
	}
	return nil
}

// Get returns the value of parameter name (0 for parameters p does not have).
func (p *Policy) Get(name string) float64 {
	switch name {
	case "window_s":
		return float64(p.WindowS)
	case "limit":
		return float64(p.Limit)
	case "rate":
		return p.Rate
	case "capacity":
		return float64(p.Capacity)
	}
	return 0
}

// Set sets parameter name to v; it reports false for an unknown name.
// Whole-number parameters are truncated; range checks are Validate's job.
func (p *Policy) Set(name string, v float64) bool {
	switch name {
	case "window_s":
		p.WindowS = int(v)
	case "limit":
		p.Limit = int64(v)
	case "rate":
		p.Rate = v
	case "capacity":
		p.Capacity = int64(v)
	default:
		return false
	}
	return true
}

func (p Policy) String() string {
	switch p.Algorithm {
	case FixedWindow, SlidingWindow:
		return fmt.Sprintf("%s limit=%d window_s=%d", p.Algorithm, p.Limit, p.WindowS)
	case TokenBucket:
		return fmt.Sprintf("%s rate=%g capacity=%d", p.Algorithm, p.Rate, p.Capacity)
	}
	return p.Algorithm.String()
}

// fixedWindow admits min(a, limit - counter) in each second; the counter resets
// whenever t % window == 0. adm receives the admitted count per second.
func fixedWindow(a, adm []int32, limit int64, window int) int64 {
	var total, counter int64
	for t, x := range a {
		if t%window == 0 {
			counter = 0
		}
		n := min(int64(x), max(0, limit-counter))
		counter += n
		total += n
		adm[t] = int32(n)
	}
	return total
}

// slidingWindow admits min(a, limit - admitted in the previous window-1 seconds).
// Rejected requests are not counted. A running sum keeps it O(len(a)).
func slidingWindow(a, adm []int32, limit int64, window int) int64 {
	var total, inWindow int64 // inWindow = sum(adm[t-window+1 .. t-1])
	for t, x := range a {
		n := min(int64(x), max(0, limit-inWindow))
		adm[t] = int32(n)
		total += n
		inWindow += n
		if old := t - window + 1; old >= 0 {
			inWindow -= int64(adm[old])
		}
	}
	return total
}

// tokenBucket starts full; each second it first adds rate tokens (capped at
// capacity), then admits min(a, floor(tokens)).
func tokenBucket(a, adm []int32, rate float64, capacity int64) int64 {
	var total int64
	c := float64(capacity)
	tokens := c
	for t, x := range a {
		tokens = min(c, tokens+rate)
		n := min(int64(x), int64(tokens))
		tokens -= float64(n)
		total += n
		adm[t] = int32(n)
	}
	return total
}

// Admit runs policy p over one key's offered requests per second a, writes
// the admitted requests per second into adm (len(adm) >= len(a)) and returns
// the total admitted. It is the step-by-step reference every fast path is
// checked against.
func Admit(p Policy, a, adm []int32) int64 {
	adm = adm[:len(a)]
	switch p.Algorithm {
	case FixedWindow:
		return fixedWindow(a, adm, p.Limit, p.WindowS)
	case SlidingWindow:
		return slidingWindow(a, adm, p.Limit, p.WindowS)
	case TokenBucket:
		return tokenBucket(a, adm, p.Rate, p.Capacity)
	}
	panic("model.Admit: unknown algorithm " + p.Algorithm.String())
}
