// Package oracle records the decisions of Traefik's own rateLimit middleware
// (github.com/traefik/traefik/v3, pkg/middlewares/ratelimiter, in-memory
// buckets) on hostile traces, in virtual time (testing/synctest), for the
// model's traefik algorithm to be checked against (model/traefik_oracle_test.go).
//
//	go test -run TestRecord -count=1 -args -out ../../model/testdata/traefik-recordings.csv.gz
//
// It is a module of its own: Traefik's module graph is large (a cold build
// takes minutes and gigabytes), so the main module and its tests never
// build it.
package oracle

import (
	"bufio"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	ptypes "github.com/traefik/paerser/types"
	"github.com/traefik/traefik/v3/pkg/config/dynamic"
	"github.com/traefik/traefik/v3/pkg/middlewares/ratelimiter"
)

var out = flag.String("out", "", "write the recordings to this file (gzip-compressed CSV)")

// setting is one rateLimit configuration: average requests per period,
// burst requests.
type setting struct {
	average int64
	period  time.Duration
	burst   int64
}

// settings cover Traefik's mapping (period 0, burst 0, average 0), rates
// below, at and above 1 request/s (maxDelay 0.5 s, TTL 1 + int(1/rate) s
// or 2 s) and non-whole rates.
var settings = []setting{
	{5, 3 * time.Second, 100}, // 1.67 r/s
	{2, time.Second, 10},
	{1, time.Second, 1},
	{10, time.Second, 5},
	{100, time.Second, 20},
	{1, 10 * time.Second, 3}, // 0.1 r/s: TTL 11 s
	{2, 3 * time.Second, 2},  // 0.67 r/s: TTL 2 s
	{3, 2 * time.Second, 4},  // 1.5 r/s: maxDelay 0.5 s
	{7, time.Second, 1},      // maxDelay 1/14 s
	{1, time.Second, 0},      // burst 0 is 1
	{50, 0, 10},              // period 0 is 1 s
	{0, time.Second, 5},      // no limit
	{1000, time.Second, 50},  // maxDelay 0.5 ms
	{3, 1500 * time.Millisecond, 2},
	{1, 7 * time.Second, 2}, // 0.14 r/s: TTL 8 s
}

// request is one arrival: at (ns from the trace's start), from source src.
type request struct {
	at  int64
	src int
}

// limit is the rate the setting means, requests/s (0: none).
func (s setting) limit() float64 {
	if s.average == 0 {
		return 0
	}
	p := s.period
	if p == 0 {
		p = time.Second
	}
	return float64(s.average) * float64(time.Second) / float64(p)
}

// ttl is Traefik's idle TTL for the setting, s.
func (s setting) ttl() float64 {
	r := s.limit()
	switch {
	case r >= 1 || r == 0:
		return 2
	}
	return 1 + float64(int(1/r))
}

// traces are hostile traces for a setting: bursts after idle gaps of 0.5–5
// TTLs from several sources, rates just above the limit, sources far above
// it, arrivals on the edges of maxDelay and of whole seconds.
func traces(s setting, rng *rand.Rand) [][]request {
	r := s.limit()
	if r == 0 {
		r = 10
	}
	gap := float64(time.Second) / r
	burst := max(s.burst, 1)
	ttl := s.ttl() * 1e9
	var all [][]request

	// Bursts and idle gaps, four sources.
	var tr []request
	for src := range 4 {
		t := rng.Int64N(1e9)
		for range 8 {
			n := 1 + rng.Int64N(burst+burst/2+2)
			for range n {
				tr = append(tr, request{t, src})
				t += rng.Int64N(int64(gap/4) + 1)
			}
			t += int64((0.5 + 4.5*rng.Float64()) * ttl)
		}
	}
	all = append(all, tr)

	// Just above the limit, three sources at 1.01–1.3 times the rate, with
	// jitter and an occasional idle gap.
	tr = nil
	for src := range 3 {
		t := rng.Int64N(1e9)
		f := 1.01 + 0.29*rng.Float64()
		for i := range 300 {
			tr = append(tr, request{t, src})
			t += int64(gap / f * (0.7 + 0.6*rng.Float64()))
			if i%97 == 96 {
				t += int64((0.5 + 4.5*rng.Float64()) * ttl)
			}
		}
	}
	all = append(all, tr)

	// Hammering: three sources at 2–4 times the rate, in clumps, so most
	// requests are rejected and each rejection gives its token back.
	tr = nil
	for src := range 3 {
		t := rng.Int64N(1e9)
		f := 2 + 2*rng.Float64()
		for range 250 {
			tr = append(tr, request{t, src})
			if rng.IntN(4) > 0 {
				t += int64(gap / f * 2 * rng.Float64())
			}
		}
	}
	all = append(all, tr)

	// Edges: two sources. Pairs one interval minus maxDelay apart (the
	// second request's delay is maxDelay, ± 1 ns), and requests 1 ns either
	// side of whole seconds after idle gaps of a whole TTL.
	tr = nil
	maxDelay := int64(500 * time.Millisecond)
	if r >= 1 {
		maxDelay = int64(time.Second / (time.Duration(r) * 2))
	}
	t := int64(0)
	for i := range 120 {
		src := i % 2
		switch i % 4 {
		case 0: // empty the bucket, then one request at the edge of maxDelay
			for range burst {
				tr = append(tr, request{t, src})
			}
			t += int64(gap) - maxDelay + int64(i%3) - 1
			tr = append(tr, request{t, src})
			t += 1
		case 1: // idle until a whole second plus the TTL, ± 1 ns
			sec := (t/1e9 + int64(s.ttl()) + 1) * 1e9
			t = sec + int64(i%3) - 1
			tr = append(tr, request{t, src})
		default:
			t += rng.Int64N(int64(gap) + 1)
			tr = append(tr, request{t, src})
		}
	}
	all = append(all, tr)
	return all
}

// decision is what the middleware did with a request: its status and, when
// served, how long after its arrival (ns).
type decision struct {
	code  int
	delay int64
}

// run drives the middleware over tr in virtual time: one goroutine per
// request, each started at its arrival time, synctest.Wait() after each.
func run(t *testing.T, s setting, tr []request) (origin int64, ds []decision) {
	ds = make([]decision, len(tr))
	synctest.Test(t, func(t *testing.T) {
		next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
		cfg := dynamic.RateLimit{
			Average:         s.average,
			Period:          ptypes.Duration(s.period),
			Burst:           s.burst,
			SourceCriterion: &dynamic.SourceCriterion{RequestHeaderName: "X-Source"},
		}
		h, err := ratelimiter.New(context.Background(), next, cfg, "ratesweep")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		origin = start.UnixNano()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, rq := range tr {
			if d := start.Add(time.Duration(rq.at)).Sub(time.Now()); d > 0 {
				time.Sleep(d)
			}
			req := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
			req.Header.Set("X-Source", fmt.Sprint("s", rq.src))
			arrived := time.Now()
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				mu.Lock()
				ds[i] = decision{rec.Code, int64(time.Since(arrived))}
				mu.Unlock()
			}()
			synctest.Wait()
		}
		wg.Wait()
	})
	return origin, ds
}

// TestRecord writes, for every setting and trace, the line
// "setting,average,period_ns,burst,start_unix_ns", then one line per
// request, "gap_ns,source,status,delay_ns": its arrival after the one
// before (the first: after the start), its source, Traefik's status and,
// when served, how long after its arrival.
func TestRecord(t *testing.T) {
	if *out == "" {
		t.Skip("no -out file")
	}
	f, err := os.Create(*out)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	w := bufio.NewWriter(zw)
	fmt.Fprintln(w, "# Traefik v3.6.12 rateLimit (in-memory), recorded by scripts/traefik-oracle: setting,average,period_ns,burst,start_unix_ns then gap_ns,source,status,delay_ns per request")
	rng := rand.New(rand.NewPCG(3, 612))
	var n, served, late int
	for _, s := range settings {
		for _, tr := range traces(s, rng) {
			sortByTime(tr)
			origin, ds := run(t, s, tr)
			fmt.Fprintf(w, "setting,%d,%d,%d,%d\n", s.average, int64(s.period), s.burst, origin)
			prev := int64(0)
			for i, rq := range tr {
				fmt.Fprintf(w, "%d,%d,%d,%d\n", rq.at-prev, rq.src, ds[i].code, ds[i].delay)
				prev = rq.at
				n++
				if ds[i].code == http.StatusOK {
					served++
					if ds[i].delay > 0 {
						late++
					}
				}
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d settings, %d decisions: %d served (%d late), %d rejected", len(settings), n, served, late, n-served)
}

// sortByTime orders a trace by arrival, stably (a source's requests keep
// their order).
func sortByTime(tr []request) {
	for i := 1; i < len(tr); i++ {
		for j := i; j > 0 && tr[j].at < tr[j-1].at; j-- {
			tr[j], tr[j-1] = tr[j-1], tr[j]
		}
	}
}
