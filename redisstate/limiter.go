package redisstate

import (
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/ratesweep/ratesweep/model"
)

var (
	//go:embed fixed_window.lua
	fixedWindowLua string
	//go:embed sliding_log.lua
	slidingLogLua string
	//go:embed token_bucket.lua
	tokenBucketLua string
)

// Script returns the Lua source of the script that keeps p's algorithm in
// Redis, and whether there is one (fixed_window, sliding_window, sliding_log,
// token_bucket).
func Script(a model.Algorithm) (string, bool) {
	switch a {
	case model.FixedWindow:
		return fixedWindowLua, true
	case model.SlidingWindow, model.SlidingLog:
		return slidingLogLua, true
	case model.TokenBucket:
		return tokenBucketLua, true
	}
	return "", false
}

// Limiter is one policy's limiter with its state in Redis, one Redis key
// (fixed window: one per window) per limiter key. Times are passed in, µs
// since an epoch of the caller's choice (time.Now().UnixMicro() in
// production), from 0 to below MaxTimeUs so that Lua's doubles hold them
// exactly; the model decides the same requests at the same times in ns
// (µs × 1000).
type Limiter struct {
	c      *Client
	p      model.Policy
	prefix string
	sha    string
	ttlMs  string
	seq    int64 // sorted-set members
}

// NewLimiter loads p's script into the server. Keys are prefix + ":" + key;
// they expire ttl after their last write (production passes the window, or
// the time to refill; replays on a virtual clock pass more than they last).
func NewLimiter(c *Client, p model.Policy, prefix string, ttl time.Duration) (*Limiter, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("redisstate: %w", err)
	}
	src, ok := Script(p.Algorithm)
	if !ok {
		return nil, fmt.Errorf("redisstate: no Redis script for %s", p.Algorithm)
	}
	sha, err := c.Do("SCRIPT", "LOAD", src)
	if err != nil {
		return nil, err
	}
	return &Limiter{c: c, p: p, prefix: prefix, sha: sha.(string), ttlMs: strconv.FormatInt(max(1, ttl.Milliseconds()), 10)}, nil
}

// MaxTimeUs bounds the times passed to a Limiter, µs: 2^53, below which a
// double holds every integer (Unix µs reach it in the year 2255).
const MaxTimeUs = 1 << 53

// Allow decides a request on key at tUs (µs) atomically (one script call).
func (l *Limiter) Allow(key string, tUs int64) (bool, error) { return l.eval("decide", key, tUs, nil) }

// Peek reports whether a request on key at tUs (µs) would be admitted given
// the store's state plus the caller's own writes still in flight (their
// times in µs, ascending), without writing.
func (l *Limiter) Peek(key string, tUs int64, inFlight []int64) (bool, error) {
	return l.eval("peek", key, tUs, inFlight)
}

// Charge writes one admitted request on key at tUs, µs (a node's delayed
// write).
func (l *Limiter) Charge(key string, tUs int64) error {
	_, err := l.eval("charge", key, tUs, nil)
	return err
}

func (l *Limiter) eval(mode, key string, tUs int64, inFlight []int64) (bool, error) {
	for _, t := range append([]int64{tUs}, inFlight...) {
		if t < 0 || t >= MaxTimeUs {
			return false, fmt.Errorf("redisstate: time %d µs is outside 0 to 2^53 µs (pass µs since an epoch, e.g. time.Now().UnixMicro(), not ns)", t)
		}
	}
	i := strconv.FormatInt
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	args := []string{"EVALSHA", l.sha, "1", l.prefix + ":" + key, mode, i(tUs, 10), l.ttlMs}
	p := l.p
	switch p.Algorithm {
	case model.FixedWindow:
		args = append(args, i(int64(p.WindowS)*1e6, 10), i(int64(p.PhaseS)*1e6, 10), i(p.Limit, 10))
	case model.SlidingWindow, model.SlidingLog:
		l.seq++
		cr := "0"
		if p.Algorithm == model.SlidingLog {
			cr = "1"
		}
		args = append(args, i(int64(p.WindowS)*1e6, 10), i(p.Limit, 10), cr, i(l.seq, 10))
	case model.TokenBucket:
		args = append(args, f(p.Rate), i(p.Capacity, 10))
	}
	for _, t := range inFlight {
		args = append(args, i(t, 10))
	}
	v, err := l.c.Do(args...)
	if err != nil {
		return false, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, fmt.Errorf("redisstate: unexpected reply %v", v)
	}
	return n == 1, nil
}
