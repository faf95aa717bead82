package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// randomTimes returns sorted request times, ns, with bursts, sub-second gaps
// and idle spells around a window of w ns.
func randomTimes(rng *rand.Rand, n int, w int64) []int64 {
	out := make([]int64, n)
	var t int64
	for i := range out {
		switch rng.IntN(4) {
		case 0:
		case 1:
			t += rng.Int64N(w / 20)
		case 2:
			t += rng.Int64N(w / 2)
		case 3:
			t += rng.Int64N(3 * w)
		}
		out[i] = t
	}
	return out
}

// The one-pass curve equals a direct count per request and limit: the exact
// side is ratesweep's sliding_log (which logs every attempt, so its
// decisions do not feed back) run from the same Unix origin, and the
// counter side is the estimate computed from scratch for each request.
func TestCountingMatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 13))
	for trial := range 300 {
		w := int64(1+rng.IntN(60)) * 1e9
		origin := int64(1_700_000_000+rng.IntN(86400)) * 1e9
		times := randomTimes(rng, 1+rng.IntN(200), w)
		const maxL = 40
		c := newCounting(maxL)
		c.add(times, origin, w)
		c.finish()
		for lim := 1; lim <= maxL; lim++ {
			d, err := model.NewDeciderAt(model.Policy{Algorithm: model.SlidingLog, WindowS: int(w / 1e9), Limit: int64(lim)}, origin)
			if err != nil {
				t.Fatal(err)
			}
			var allowed, limited, rejected int64
			for i, ti := range times {
				exactAdmits := d.Allow(ti)
				abs := origin + ti
				start := abs / w * w
				var prev, curr int64
				for _, tj := range times[:i] {
					switch aj := origin + tj; {
					case aj >= start:
						curr++
					case aj >= start-w:
						prev++
					}
				}
				est := int64(float64(w-(abs-start))/float64(w)*float64(prev)) + curr
				counterAdmits := est < int64(lim)
				if !exactAdmits {
					rejected++
				}
				switch {
				case counterAdmits && !exactAdmits:
					allowed++
				case exactAdmits && !counterAdmits:
					limited++
				}
			}
			if c.allowed[lim] != allowed || c.limits[lim] != limited || c.rejected[lim] != rejected {
				t.Fatalf("trial %d limit %d: one pass %d/%d/%d, direct %d/%d/%d (allowed/limited/rejected)",
					trial, lim, c.allowed[lim], c.limits[lim], c.rejected[lim], allowed, limited, rejected)
			}
		}
	}
}

// docs/cloudflare.md is what the logs give today (make cloudflare
// regenerates it); the figures quoted in its prose were read off these
// tables.
func TestDocsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the three logs")
	}
	out := t.TempDir()
	if err := run("../../configs/examples", out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, "cloudflare.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../docs/cloudflare.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("docs/cloudflare.md is stale: run make cloudflare")
	}
}
