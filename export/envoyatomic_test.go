package export

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// envoyAtomicBucket is the token bucket envoy's local_ratelimit filter has
// used since the timer-based fill went away (AtomicTokenBucket over
// AtomicTokenBucketImpl, source/common/common/token_bucket_impl.cc; the
// runtime guard no_timer_based_rate_limit_token_bucket defaulted to true,
// then removed): its state is a time in seconds of the monotonic clock, as
// a double; the tokens at now are min(max_tokens, (now − time)·fill_rate);
// a request takes one when there is at least one (the filter's consume
// callback: total < 1 ? 0 : 1), moving time to now − (tokens − 1)/fill_rate;
// at or before time nothing is taken. It starts full (init_fill: time =
// now − max_tokens/fill_rate), fill_rate = tokens_per_fill / fill_interval
// in seconds.
type envoyAtomicBucket struct {
	max, rate, time float64
}

func newEnvoyAtomicBucket(maxTokens, tokensPerFill uint32, fillMs int64, nowS float64) *envoyAtomicBucket {
	rate := float64(tokensPerFill) / (float64(fillMs) / 1000)
	return &envoyAtomicBucket{max: float64(maxTokens), rate: rate, time: nowS - float64(maxTokens)/rate}
}

func (b *envoyAtomicBucket) consume(nowS float64) bool {
	ok, _ := b.consumeEdge(nowS)
	return ok
}

// consumeEdge is consume, and whether the decision was taken at a whole
// token within envoy's rounding (the bucket's time is a double of the
// seconds since boot: about 1e-10 s apart at a month's uptime), where it
// can go either way.
func (b *envoyAtomicBucket) consumeEdge(nowS float64) (ok, edge bool) {
	if nowS <= b.time {
		return false, nowS == b.time
	}
	total := math.Min(b.max, (nowS-b.time)*b.rate)
	edge = math.Abs(total-math.Round(total)) < 1e-6
	if total < 1 {
		return false, edge
	}
	b.time = nowS - (total-1)/b.rate
	return true, edge
}

// follow makes the bucket take (ok) or not take a token at nowS, whatever
// its rounding said: a decision at a whole token goes the model's way.
func (b *envoyAtomicBucket) follow(nowS float64, ok bool) {
	total := math.Min(b.max, math.Max(0, (nowS-b.time)*b.rate))
	if ok {
		b.time = nowS - max(total-1, 0)/b.rate
	}
}

// The exported local_ratelimit bucket decides as the model's token_bucket:
// envoy's atomic bucket, written from its source above, on random request
// times (µs: bursts at one instant, idle gaps, steady streams) with the
// monotonic clock at a machine's uptime, for rates envoyFill writes
// exactly. Every decision is equal but those at a whole token within
// envoy's rounding (counted; the bucket then follows the model): the full
// bucket right after start, which envoy's subtraction can leave a hair
// under max_tokens, and refills that end exactly at a request (times on a
// µs grid hit them; about 2 in 1,000 decisions here).
func TestEnvoyAtomicBucketEqualsModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 45))
	rates := []float64{0.5, 1, 2, 2.5, 3, 5, 10, 1.6666666666666667, 20, 100}
	decisions, edges := 0, 0
	for trial := range 400 {
		rate := rates[r.IntN(len(rates))]
		capacity := int64(1 + r.IntN(20))
		tokens, ms, ok := envoyFill(rate)
		if !ok {
			t.Fatalf("envoyFill(%v)", rate)
		}
		p := model.Policy{Algorithm: model.TokenBucket, Rate: rate, Capacity: capacity}
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		boot := float64(r.IntN(30*86400)) + float64(r.IntN(1e6))/1e6 // the monotonic clock at the first request, s
		env := newEnvoyAtomicBucket(uint32(capacity), uint32(tokens), ms, boot)
		var tUs int64
		for i := range 300 {
			switch r.IntN(10) {
			case 0:
				tUs += int64(r.IntN(20e6)) // idle
			case 1, 2, 3:
				// the same instant: a burst
			default:
				tUs += int64(r.IntN(int(2e6/rate) + 1))
			}
			nowS := boot + float64(tUs)/1e6
			want, edge := env.consumeEdge(nowS)
			got := d.Allow(tUs * 1e3)
			decisions++
			if got != want {
				if !edge {
					t.Fatalf("trial %d (rate %v, capacity %d: %d tokens per %d ms), request %d at %d µs: model %v, envoy %v",
						trial, rate, capacity, tokens, ms, i, tUs, got, want)
				}
				edges++
				env.follow(nowS, got)
			}
		}
	}
	if edges*100 > decisions {
		t.Errorf("%d of %d decisions at a whole token within envoy's rounding: more than 1 in 100", edges, decisions)
	}
	t.Logf("%d decisions: %d equal, %d at a whole token within envoy's rounding", decisions, decisions-edges, edges)
}
