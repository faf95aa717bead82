package sweep

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/RussellLuo/slidingwindow"
	"golang.org/x/time/rate"

	"github.com/ratesweep/ratesweep/model"
)

// replayAdmitted replays a CSV log of times (per key, Unix) through the
// sweep's log replay under policy p and window_origin origin, and returns
// the requests admitted.
func replayAdmitted(t *testing.T, keys [][]time.Time, p model.Policy, origin string) int64 {
	t.Helper()
	var lines []string
	for k, ts := range keys {
		for _, at := range ts {
			lines = append(lines, fmt.Sprintf("%s,10.0.0.%d", at.UTC().Format(time.RFC3339Nano), k))
		}
	}
	log := filepath.Join(t.TempDir(), "log.csv")
	if err := os.WriteFile(log, []byte("ts,client\n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`name: align
traffic:
  log: %q
  format: csv
  csv: {time_format: rfc3339, columns: {time: ts, ip: client}}
  top_keys: 1000
  max_backwards_s: -1  # the keys are written one after the other
  window_origin: %s
sweep:
  - {algorithm: token_bucket, rate: 1, capacity: 1}
`, log, origin)
	s, err := ParseSpec([]byte(spec), nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := newSource(context.Background(), s, false)
	if err != nil {
		t.Fatal(err)
	}
	names, _, _ := src.rows()
	sim := src.newSim()
	sim.setReplicate(0, 0)
	m := sim.run(p, make([]model.ClientResult, len(names)))
	return m.OfferedLegit - m.FalseCut
}

// randomLog returns 1–3 keys' request times from a random Unix instant of a
// day (on no window boundary), mixing bursts at one instant, sub-second gaps
// and idle spells around period.
func randomLog(rng *rand.Rand, period time.Duration) [][]time.Time {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(24 * time.Hour))))
	keys := make([][]time.Time, 1+rng.IntN(3))
	for k := range keys {
		at := start.Add(time.Duration(rng.Int64N(int64(period))))
		for range 30 + rng.IntN(120) {
			switch rng.IntN(5) {
			case 0: // same instant
			case 1, 2:
				at = at.Add(time.Duration(rng.Int64N(int64(period) / 4)))
			case 3:
				at = at.Add(time.Duration(rng.Int64N(2 * int64(period))))
			case 4:
				at = at.Add(time.Duration(rng.Int64N(8 * int64(period))))
			}
			keys[k] = append(keys[k], at)
		}
	}
	return keys
}

// Log replay puts windows on the Unix epoch by default (window_origin:
// epoch): per algorithm, the requests a replay admits equal the real library
// (or a direct count on Unix windows) run on the requests' own Unix times,
// from random origins on no window boundary. With window_origin: log_start
// the windows start at the log's first second instead. The other algorithms
// have no windows and give the same under either origin. Times are on a
// millisecond grid (a log's finest) so that x/time/rate's float64 tokens
// meet no exact 1 ns boundary.
func TestReplayWindowsOnTheEpoch(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	windows := []int{1, 2, 5, 10, 30, 60, 300} // divide a day: see model's dayWindows
	for trial := range 60 {
		w := windows[rng.IntN(len(windows))]
		limit := int64(1 + rng.IntN(12))
		size := time.Duration(w) * time.Second
		keys := randomLog(rng, size/time.Duration(limit))
		for _, ts := range keys {
			for i := range ts {
				ts[i] = ts[i].Truncate(time.Millisecond)
			}
		}
		first := keys[0][0]
		for _, ts := range keys {
			if ts[0].Before(first) {
				first = ts[0]
			}
		}
		logStart := first.Truncate(time.Second) // the replay's time 0

		// sliding_counter: RussellLuo on its own clock; from the log's start,
		// the same library on a clock moved so that logStart is on a boundary.
		counter := model.Policy{Algorithm: model.SlidingCounter, WindowS: w, Limit: limit}
		shift := logStart.Sub(logStart.Truncate(size))
		var lib, libStart int64
		for _, ts := range keys {
			a, b := newRussellLuo(size, limit), newRussellLuo(size, limit)
			for _, at := range ts {
				lib += b2i(a.AllowN(at, 1))
				libStart += b2i(b.AllowN(at.Add(-shift), 1))
			}
		}
		if got := replayAdmitted(t, keys, counter, "epoch"); got != lib {
			t.Fatalf("trial %d %v from %v: replay admits %d, RussellLuo %d", trial, counter, logStart, got, lib)
		}
		if got := replayAdmitted(t, keys, counter, "log_start"); got != libStart {
			t.Fatalf("trial %d %v log_start: replay admits %d, RussellLuo from the log's start %d", trial, counter, got, libStart)
		}

		// fixed_window with phase_s: a count per Unix window.
		fixed := model.Policy{Algorithm: model.FixedWindow, WindowS: w, Limit: limit, PhaseS: rng.IntN(w)}
		var want, wantStart int64
		for _, ts := range keys {
			count, countStart := map[int64]int64{}, map[int64]int64{}
			for _, at := range ts {
				k := (at.UnixNano() - int64(fixed.PhaseS)*1e9) / int64(size)
				ks := (at.Sub(logStart) - time.Duration(fixed.PhaseS)*time.Second + 1000*size) / size
				if count[k] < limit {
					count[k]++
					want++
				}
				if countStart[int64(ks)] < limit {
					countStart[int64(ks)]++
					wantStart++
				}
			}
		}
		if got := replayAdmitted(t, keys, fixed, "epoch"); got != want {
			t.Fatalf("trial %d %v from %v: replay admits %d, Unix windows %d", trial, fixed, logStart, got, want)
		}
		if got := replayAdmitted(t, keys, fixed, "log_start"); got != wantStart {
			t.Fatalf("trial %d %v log_start: replay admits %d, windows from the log's start %d", trial, fixed, got, wantStart)
		}

		// token_bucket: x/time/rate on its own clock, under either origin.
		r := []float64{0.5, 1, 2, 4, 10}[rng.IntN(5)]
		bucket := model.Policy{Algorithm: model.TokenBucket, Rate: r, Capacity: limit}
		var libBucket int64
		for _, ts := range keys {
			l := rate.NewLimiter(rate.Limit(r), int(limit))
			for _, at := range ts {
				libBucket += b2i(l.AllowN(at, 1))
			}
		}
		for _, origin := range []string{"epoch", "log_start"} {
			if got := replayAdmitted(t, keys, bucket, origin); got != libBucket {
				t.Fatalf("trial %d %v %s: replay admits %d, x/time/rate %d", trial, bucket, origin, got, libBucket)
			}
		}
	}
}

func newRussellLuo(size time.Duration, limit int64) *slidingwindow.Limiter {
	l, _ := slidingwindow.NewLimiter(size, limit, func() (slidingwindow.Window, slidingwindow.StopFunc) {
		return slidingwindow.NewLocalWindow()
	})
	return l
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Issue 13's minimal case through the log replay: window 60 s, limit 10, one
// key; 10 requests at 00:00:30.000, 10 at 00:01:00.500, 10 at 00:01:30.500.
// On the epoch (default) the replay admits 16, as RussellLuo/slidingwindow
// does on its own clock; from the log's first second it admits 11.
func TestReplaySlidingCounterMinimalCase(t *testing.T) {
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var key []time.Time
	lib := newRussellLuo(time.Minute, 10)
	var want int64
	for _, at := range []time.Duration{30 * time.Second, 60500 * time.Millisecond, 90500 * time.Millisecond} {
		for range 10 {
			key = append(key, day.Add(at))
			want += b2i(lib.AllowN(day.Add(at), 1))
		}
	}
	p := model.Policy{Algorithm: model.SlidingCounter, WindowS: 60, Limit: 10}
	epoch, start := replayAdmitted(t, [][]time.Time{key}, p, "epoch"), replayAdmitted(t, [][]time.Time{key}, p, "log_start")
	if want != 16 || epoch != 16 || start != 11 {
		t.Errorf("admitted: RussellLuo %d, replay on the epoch %d, from the log's start %d; want 16, 16, 11", want, epoch, start)
	}
}
