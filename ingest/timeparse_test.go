package ingest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// rfc3339Slow is parseRFC3339 without its fast path: time.Parse.
func rfc3339Slow(s string) (sec, ns int64, err error) {
	t, perr := time.Parse(time.RFC3339Nano, s)
	if perr != nil && len(s) > 10 && s[10] == ' ' {
		t, perr = time.Parse(time.RFC3339Nano, s[:10]+"T"+s[11:])
	}
	if perr != nil {
		return 0, 0, perr
	}
	if t.Unix() < 0 || t.Unix() > maxUnix {
		return 0, 0, fmt.Errorf("out of range")
	}
	return t.Unix(), int64(t.Nanosecond()), nil
}

// Wherever rfc3339Fast answers, time.Parse accepts the same text and gives
// the same instant; it answers for the usual forms. Random times, zones and
// precisions, then random edits of them (digits, separators, lengths,
// out-of-range fields, leap days and seconds).
func TestRFC3339FastEqualsTimeParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 39))
	answered, declined := 0, 0
	for n := range 200_000 {
		tm := time.Unix(rng.Int64N(maxUnix+1), rng.Int64N(1e9))
		zone := time.UTC
		if rng.IntN(2) == 0 {
			zone = time.FixedZone("", (rng.IntN(48)-24)*1800+rng.IntN(2)*60*rng.IntN(30))
		}
		layout := []string{time.RFC3339, time.RFC3339Nano, "2006-01-02T15:04:05.000Z07:00", "2006-01-02 15:04:05.000000Z07:00"}[rng.IntN(4)]
		s := []byte(tm.In(zone).Format(layout))
		if n%2 == 1 { // an edit
			switch i := rng.IntN(len(s)); rng.IntN(6) {
			case 0:
				s[i] = byte('0' + rng.IntN(10))
			case 1:
				s[i] = " -:.TZz+,9"[rng.IntN(10)]
			case 2:
				s = append(s[:i], s[i+1:]...)
			case 3:
				s = append(s[:i], append([]byte{byte('0' + rng.IntN(10))}, s[i:]...)...)
			case 4:
				s = []byte(fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02dZ", rng.IntN(10000), rng.IntN(14), rng.IntN(33), rng.IntN(25), rng.IntN(61), rng.IntN(62)))
			case 5:
				s = []byte(fmt.Sprintf("%04d-02-29T00:00:00.%dZ", 1900+rng.IntN(300), rng.Int64N(1e12)))
			}
		}
		sec, ns, ok := rfc3339Fast(s)
		wsec, wns, werr := rfc3339Slow(string(s))
		if !ok {
			declined++
			if n%2 == 0 {
				t.Fatalf("%q: the fast path declines a usual form", s)
			}
			continue
		}
		answered++
		if werr != nil || sec != wsec || ns != wns {
			t.Fatalf("%q: fast %d.%09d, time.Parse %d.%09d (%v)", s, sec, ns, wsec, wns, werr)
		}
	}
	t.Logf("%d answered, %d left to time.Parse", answered, declined)
}

// The fast path allocates nothing.
func TestRFC3339FastAllocs(t *testing.T) {
	b := []byte("2026-12-01T04:05:06.123456+01:00")
	if n := testing.AllocsPerRun(100, func() { parseTime(b, TimeRFC3339) }); n != 0 {
		t.Errorf("parseTime allocates %v times per RFC 3339 time", n)
	}
}

// An integer time (the fast path) reads as the same number with a decimal
// point does (the general path), in every unit, in range or not.
func TestParseUnixInteger(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for range 20000 {
		digits := 1 + rng.IntN(20)
		b := make([]byte, digits)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		for _, scale := range []int{0, 3, 6, 9} {
			sec, ns, err := parseUnixDecimal(b, scale)
			wsec, wns, werr := parseUnixDecimal(append(append([]byte{}, b...), '.', '0'), scale)
			if sec != wsec || ns != wns || (err == nil) != (werr == nil) {
				t.Fatalf("%s at scale %d: %d %d %v; with a point %d %d %v", b, scale, sec, ns, err, wsec, wns, werr)
			}
		}
	}
}
