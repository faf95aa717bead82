package model

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// traefikLib is Traefik's in-memory rateLimit for one source written with
// golang.org/x/time/rate itself (inMemoryRateLimiter.Allow and
// rateLimiter.ServeHTTP): the bucket kept in a map entry with a whole-second
// expiry, Reserve at the request's time, served when the delay is at most
// maxDelay, else Cancel.
type traefikLib struct {
	limit     rate.Limit
	burst     int
	maxDelay  time.Duration
	ttlS      int64
	lim       *rate.Limiter
	expiryS   int64
	lastDelay time.Duration
}

func (l *traefikLib) allow(now time.Time) bool {
	if l.lim == nil || l.expiryS <= now.Unix() {
		l.lim = rate.NewLimiter(l.limit, l.burst)
	}
	l.expiryS = now.Add(time.Duration(l.ttlS) * time.Second).Unix()
	res := l.lim.ReserveN(now, 1)
	if !res.OK() {
		return false
	}
	delay := res.DelayFrom(now)
	if delay > l.maxDelay {
		res.CancelAt(now)
		return false
	}
	l.lastDelay = delay
	return true
}

// The model decides and delays as x/time/rate driven as Traefik drives it,
// on hostile traces: bursts, rates just above the limit, idle gaps around
// the TTL, several origins within a second.
func TestTraefikAgainstRateLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 1))
	for trial := range 300 {
		avg, per := int64(1+rng.IntN(50)), time.Duration(1+rng.IntN(6))*time.Second
		if trial%3 == 0 {
			avg, per = int64(1+rng.IntN(3)), time.Duration(2+rng.IntN(30))*time.Second // below 1 r/s
		}
		p, limited, err := TraefikPolicy(avg, per, int64(rng.IntN(12)))
		if err != nil || !limited {
			t.Fatalf("TraefikPolicy(%d, %v): %v %v", avg, per, limited, err)
		}
		origin := int64(1_700_000_000)*1e9 + rng.Int64N(1e9)
		d, err := NewDeciderAt(p, origin)
		if err != nil {
			t.Fatal(err)
		}
		lib := &traefikLib{limit: rate.Limit(p.Rate), burst: int(p.Capacity), maxDelay: time.Duration(traefikMaxDelayNs(p.Rate)), ttlS: traefikTTLS(p.Rate)}
		gap := float64(time.Second) / p.Rate
		var tNs int64
		for i := range 400 {
			switch rng.IntN(6) {
			case 0: // a burst
			case 1, 2: // just above the rate
				tNs += int64(gap * (0.8 + 0.19*rng.Float64()))
			case 3:
				tNs += rng.Int64N(int64(gap) + 1)
			case 4: // around the TTL
				tNs += int64((0.5 + 4.5*rng.Float64()) * float64(lib.ttlS) * 1e9)
			case 5:
				tNs += rng.Int64N(3e9)
			}
			want := lib.allow(time.Unix(0, origin+tNs))
			got := d.Allow(tNs)
			if got != want {
				t.Fatalf("%s at origin %d: request %d at %d ns: model %v, x/time/rate %v", p.Canonical(), origin, i, tNs, got, want)
			}
			if sd := d.(Shaper).DelayNs(); got && sd != int64(lib.lastDelay) {
				t.Fatalf("%s: request %d: delay %d ns, x/time/rate %v", p.Canonical(), i, sd, lib.lastDelay)
			}
		}
	}
}

// Traefik's mapping of average, period and burst, its maxDelay and TTL.
func TestTraefikMapping(t *testing.T) {
	for _, c := range []struct {
		avg      int64
		per      time.Duration
		burst    int64
		limited  bool
		rate     float64
		capacity int64
		maxDelay time.Duration
		ttlS     int64
	}{
		{0, 0, 5, false, 0, 0, 0, 0},
		{10, 0, 0, true, 10, 1, 50 * time.Millisecond, 2},
		{5, 3 * time.Second, 100, true, 5.0 / 3, 100, 500 * time.Millisecond, 2},
		{3, 2 * time.Second, 4, true, 1.5, 4, 500 * time.Millisecond, 2},
		{1, 10 * time.Second, 1, true, 0.1, 1, 500 * time.Millisecond, 11},
		{2, 3 * time.Second, 2, true, 2.0 / 3, 2, 500 * time.Millisecond, 2},
		{3, 1500 * time.Millisecond, 2, true, 2, 2, 250 * time.Millisecond, 2},
		{7, time.Second, 1, true, 7, 1, time.Second / 14, 2},
	} {
		p, limited, err := TraefikPolicy(c.avg, c.per, c.burst)
		if err != nil || limited != c.limited {
			t.Fatalf("TraefikPolicy(%d, %v, %d) = %v, %v", c.avg, c.per, c.burst, limited, err)
		}
		if !limited {
			continue
		}
		if p.Rate != c.rate || p.Capacity != c.capacity {
			t.Errorf("TraefikPolicy(%d, %v, %d) = %s", c.avg, c.per, c.burst, p.Canonical())
		}
		if got := time.Duration(traefikMaxDelayNs(p.Rate)); got != c.maxDelay {
			t.Errorf("%s: maxDelay %v, want %v", p.Canonical(), got, c.maxDelay)
		}
		if got := traefikTTLS(p.Rate); got != c.ttlS {
			t.Errorf("%s: ttl %d s, want %d", p.Canonical(), got, c.ttlS)
		}
		avg, per, ok := TraefikRate(p.Rate)
		if !ok || traefikLimit(avg, per) != p.Rate {
			t.Errorf("TraefikRate(%v) = %d per %v, %v", p.Rate, avg, per, ok)
		}
	}
	for _, c := range []struct {
		avg   int64
		per   time.Duration
		field string
	}{{-1, 0, "average"}, {1, -time.Second, "period"}} {
		if _, _, err := TraefikPolicy(c.avg, c.per, 1); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("TraefikPolicy(%d, %v): %v, want an error naming %s", c.avg, c.per, err, c.field)
		}
	}
	if _, _, ok := TraefikRate(1.2345678912345); ok {
		t.Error("TraefikRate wrote a rate with no whole average per period up to a day")
	}
}

// A delay equal to maxDelay is served; the TTL runs in whole Unix seconds
// from the last request, rejected ones too, and a new bucket is full.
func TestTraefikEdges(t *testing.T) {
	// 2 r/s, burst 1: maxDelay 250 ms. Second request 250 ms after the
	// first waits exactly 250 ms: served; at 249 ms it would wait 251 ms.
	p := Policy{Algorithm: Traefik, Rate: 2, Capacity: 1}
	d, _ := NewDeciderAt(p, 0)
	if !d.Allow(0) || !d.Allow(250e6) || d.(Shaper).DelayNs() != 250e6 {
		t.Fatalf("a delay equal to maxDelay is not served")
	}
	d.Reset()
	if !d.Allow(0) || d.Allow(249e6) {
		t.Fatalf("a delay beyond maxDelay is served")
	}
	// 0.1 r/s, burst 5: TTL 11 s, maxDelay 0.5 s. Five requests at 0.9 s
	// empty the bucket and set its expiry to Unix 0 + 11.
	burst := func(d Decider, t int64) int64 { return d.AllowN(t, 5) }
	p = Policy{Algorithm: Traefik, Rate: 0.1, Capacity: 5}
	d, _ = NewDeciderAt(p, 0)
	if burst(d, 900e6) != 5 || burst(d, 10_990e6) != 1 {
		t.Fatal("a bucket was dropped before its expiry (Unix 11)")
	}
	d.Reset()
	if burst(d, 900e6) != 5 || burst(d, 11_000e6) != 5 {
		t.Fatal("a bucket idle until its expiry was not recreated full")
	}
	// A rejected request at 5 s moves the expiry to Unix 16: at 11.5 s the
	// bucket is kept (1.06 tokens).
	d.Reset()
	if burst(d, 900e6) != 5 || d.Allow(5e9) || burst(d, 11_500e6) != 1 {
		t.Fatal("a rejected request did not refresh the expiry")
	}
	// Origin: the same requests 0.2 s later on the Unix clock cross Unix 11 at 10.8 s.
	d, _ = NewDeciderAt(p, 200e6)
	if burst(d, 700e6) != 5 || burst(d, 10_800e6) != 5 {
		t.Fatal("the TTL does not count whole Unix seconds from the origin")
	}
}
