package ingest

import (
	"fmt"
	"strings"
)

// WindowOrigin is where a replay puts the boundaries of windowed limiters
// (fixed_window, sliding_counter): on the wall clock, as deployed limiters
// do, or at the log's first second.
type WindowOrigin uint8

const (
	// OriginEpoch (the default) puts windows on the Unix epoch: fixed_window
	// boundaries at Unix phase_s + k·window_s (envoy, Kong, a Redis key per
	// window), sliding_counter windows at Unix k·window_s (Cloudflare,
	// RussellLuo/slidingwindow).
	OriginEpoch WindowOrigin = iota
	// OriginLogStart starts the first window at the second of the log's first
	// request, as a scenario's windows start at t = 0.
	OriginLogStart
)

var windowOriginNames = []string{"epoch", "log_start"}

func (o WindowOrigin) String() string { return windowOriginNames[o] }

// ParseWindowOrigin parses epoch or log_start.
func ParseWindowOrigin(s string) (WindowOrigin, error) {
	for i, n := range windowOriginNames {
		if s == n {
			return WindowOrigin(i), nil
		}
	}
	return 0, fmt.Errorf("unknown window_origin %q (known: %s)", s, strings.Join(windowOriginNames, ", "))
}

// OriginNs is the Unix time, ns, that a replay of t under origin o passes to
// model.NewDeciderAt: times are ns since t.StartUnix, so with OriginEpoch the
// origin is t.StartUnix itself, and with OriginLogStart it is 0, which puts
// a window boundary at the log's first second.
func (o WindowOrigin) OriginNs(t *Traffic) int64 {
	if o == OriginLogStart {
		return 0
	}
	return t.StartUnix * secondNs
}
