package model

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
)

// Exact token arithmetic.
//
// A rate is a fraction num/den tokens per second with den <= 10^9 (ratio).
// It is recovered from the float64 the spec holds as the number the user
// wrote:
//   - a decimal with at most 9 fractional digits (0.1, 2.5, 0.016) is that
//     decimal exactly, reduced (0.1 = 1/10): its shortest float64 rendering
//     is what was written;
//   - any other value (a quotient such as 1/60 or 7/3 from the adapters, a
//     log-scaled grid value) is the first continued-fraction convergent of
//     the float that rounds back to it, so n requests per period is n/period
//     exactly and gcra's emission interval is period/n truncated as
//     throttled truncates it; failing that, the last convergent with
//     den <= 10^9, within 1/(den·10^9) requests/s of the float.
//
// Nano-tokens (rate·10^9 as an integer) were the other candidate: exact for
// decimals, but 1/3 or 1/60 requests/s would be off by up to 3·10^-9 of the
// rate, which moves gcra's emission interval of 1 request/min by 1.2 µs.
//
// Tokens are then integers of units: 1/den token in the per-second kernels
// (stepBucket), 1/(den·10^9) token on event times in ns, where rate·1 ns is
// num units (tokenBucketLimiter). A bucket too large for one int64 count of
// units is a whole count plus a remainder, with 128-bit products, so
// capacities up to maxCapacity stay exact; nothing drifts.

// ratio is a rate of num/den tokens (requests) per second, num >= 1,
// 1 <= den <= maxDen.
type ratio struct{ num, den int64 }

const (
	maxDen      = 1_000_000_000 // largest rate denominator
	minRate     = 1e-9          // smallest token_bucket/gcra rate, requests/s
	maxCapacity = 1 << 62       // largest token_bucket capacity, requests
)

// ratioOf returns the exact fraction of a rate in [minRate, maxRate] (see
// the file comment).
func ratioOf(rate float64) ratio {
	if rate == math.Trunc(rate) {
		return ratio{int64(rate), 1}
	}
	var buf [48]byte
	s := strconv.AppendFloat(buf[:0], rate, 'f', -1, 64)
	var num, den int64 = 0, 1
	dot := false
	for _, c := range s {
		switch {
		case c == '.':
			dot = true
		case dot && den == maxDen: // more than 9 fractional digits
			return ratioCF(rate)
		default:
			num = num*10 + int64(c-'0')
			if dot {
				den *= 10
			}
		}
	}
	g := gcd(num, den)
	return ratio{num / g, den / g}
}

// ratioCF is the first continued-fraction convergent of rate that rounds
// back to rate, or the last one with a denominator <= maxDen.
func ratioCF(rate float64) ratio {
	x := new(big.Rat).SetFloat64(rate)
	num, den := new(big.Int).Set(x.Num()), new(big.Int).Set(x.Denom())
	h0, h1 := big.NewInt(0), big.NewInt(1) // convergent numerators h_{n-2}, h_{n-1}
	k0, k1 := big.NewInt(1), big.NewInt(0) // denominators
	best := ratio{0, 1}
	a, r, t := new(big.Int), new(big.Int), new(big.Int)
	for den.Sign() != 0 {
		a.QuoRem(num, den, r)
		h0, h1 = h1, t.Add(t.Mul(a, h1), h0)
		t = new(big.Int)
		k0, k1 = k1, t.Add(t.Mul(a, k1), k0)
		t = new(big.Int)
		if !k1.IsInt64() || k1.Int64() > maxDen || !h1.IsInt64() {
			break
		}
		best = ratio{h1.Int64(), k1.Int64()}
		if f, _ := new(big.Rat).SetFrac(h1, k1).Float64(); f == rate {
			break
		}
		num, den, r = den, r, num
	}
	return best
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// stepBucket is SPEC's token bucket, one step per second, in exact
// arithmetic: tokens = whole + frac/den, 0 <= frac < den, 0 <= tokens <= capacity.
type stepBucket struct {
	whole, frac int64
	rw, rf, den int64 // the rate: rw + rf/den tokens per second
	capacity    int64
}

// newStepBucket returns a full bucket of capacity tokens refilled at r.
func newStepBucket(r ratio, capacity int64) stepBucket {
	return stepBucket{whole: capacity, rw: r.num / r.den, rf: r.num % r.den, den: r.den, capacity: capacity}
}

// step adds one second of refill, capped at capacity, and admits min(x,
// floor(tokens)).
func (b *stepBucket) step(x int64) int64 {
	w, f := b.whole, b.frac+b.rf
	if f >= b.den {
		f -= b.den
		w++
	}
	if room := b.capacity - w; b.rw > room || (b.rw == room && f > 0) {
		w, f = b.capacity, 0
	} else {
		w += b.rw
	}
	n := min(x, w)
	b.whole, b.frac = w-n, f
	return n
}

// add adds m·d units (1/den token) and caps the tokens at limit (>= 0).
func (b *stepBucket) add(m, d, limit int64) {
	q, r, ok := mulDiv(m, d, b.den)
	if !ok || b.whole > limit || q > limit-b.whole {
		b.whole, b.frac = limit, 0
		return
	}
	w, f := b.whole+q, b.frac+r
	if f >= b.den {
		f -= b.den
		w++
	}
	if w >= limit {
		w, f = limit, 0
	}
	b.whole, b.frac = w, f
}

// units returns the tokens in units of 1/den token, 128 bits.
func (b *stepBucket) units() (hi, lo uint64) {
	hi, lo = bits.Mul64(uint64(b.whole), uint64(b.den))
	lo, c := bits.Add64(lo, uint64(b.frac), 0)
	return hi + c, lo
}

// drainSteps returns min(m, floor(tokens/d)), d in units of 1/den token.
func (b *stepBucket) drainSteps(m, d int64) int64 {
	hi, lo := b.units()
	if hi >= uint64(d) {
		return m
	}
	q, _ := bits.Div64(hi, lo, uint64(d))
	return int64(min(q, uint64(m)))
}

// sub removes m·d units (at most the tokens held).
func (b *stepBucket) sub(m, d int64) {
	hi, lo := b.units()
	phi, plo := bits.Mul64(uint64(m), uint64(d))
	lo, borrow := bits.Sub64(lo, plo, 0)
	hi, _ = bits.Sub64(hi, phi, borrow)
	q, r := bits.Div64(hi, lo, uint64(b.den))
	b.whole, b.frac = int64(q), int64(r)
}

// mulDiv returns m·d / den and m·d % den for m, d >= 0, den > 0; ok is false
// when the quotient does not fit in int64.
func mulDiv(m, d, den int64) (q, r int64, ok bool) {
	hi, lo := bits.Mul64(uint64(m), uint64(d))
	if hi >= uint64(den) {
		return 0, 0, false
	}
	uq, ur := bits.Div64(hi, lo, uint64(den))
	if uq > math.MaxInt64 {
		return 0, 0, false
	}
	return int64(uq), int64(ur), true
}
