package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// Lines parsed through a clfClock (the Reader's way) give the records and
// errors of ParseCombined line by line, whatever the order of repeated,
// new, malformed and zone-shifted times.
func TestCLFClockDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 7))
	stamps := []string{
		"01/Jul/1995:00:00:01 -0400", "01/Jul/1995:00:00:01 -0400", "01/Jul/1995:00:00:02 -0400",
		"01/Jul/1995:00:00:01 +0000", "31/Dec/2016:23:59:60 +0000", "29/Feb/2023:00:00:00 +0000",
		"01/Jux/1995:00:00:01 -0400", "01/Jul/1995:0a:00:01 -0400", "01/Jul/1995:00:00:01 -0400",
	}
	var clock clfClock
	var got, want Record
	for i := range 5000 {
		line := []byte(fmt.Sprintf(`10.0.0.%d - - [%s] "GET /%d HTTP/1.1" 200 %d "-" "ua"`, rng.IntN(9), stamps[rng.IntN(len(stamps))], i, rng.IntN(999)))
		gerr := clock.parseCombined(line, &got)
		werr := ParseCombined(line, &want)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("line %d %q: clock %+v %v, plain %+v %v", i, line, got, gerr, want, werr)
		}
	}
}

// The clock's two minutes, read again for their seconds only, give what a
// full parse gives: random times around minute, day and leap boundaries,
// in several zones, seconds up to 69 (60 is a leap second; above, an
// error).
func TestCLFClockMinutes(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 8))
	var clock clfClock
	var got, want Record
	days := []string{"28/Feb/2023", "28/Feb/2024", "29/Feb/2024", "29/Feb/2023", "30/Apr/2024", "31/Dec/2016"}
	zones := []string{"+0000", "-0400", "+0530"}
	for i := range 20000 {
		stamp := fmt.Sprintf("%s:23:%02d:%02d %s", days[rng.IntN(len(days))], 57+rng.IntN(3), rng.IntN(70), zones[rng.IntN(len(zones))])
		line := []byte(fmt.Sprintf(`10.0.0.1 - - [%s] "GET /%d HTTP/1.1" 200 1 "-" "ua"`, stamp, i))
		gerr := clock.parseCombined(line, &got)
		werr := ParseCombined(line, &want)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("line %d %q: clock %+v %v, plain %+v %v", i, line, got, gerr, want, werr)
		}
	}
}

// TestIndexSpace checks indexSpace against bytes.IndexByte on every
// position of a space (and none) in fields up to 40 bytes, other bytes
// near a space's value among them.
func TestIndexSpace(t *testing.T) {
	for n := range 41 {
		for at := -1; at < n; at++ {
			b := make([]byte, n)
			for i := range b {
				b[i] = "!\x1f\xa0a\x00\xa1\xff\xe0\x21"[i%9]
			}
			if at >= 0 {
				b[at] = ' '
				if at+2 < n {
					b[at+2] = ' '
				}
			}
			if got, want := indexSpace(b), bytes.IndexByte(b, ' '); got != want {
				t.Fatalf("indexSpace(%q) = %d, want %d", b, got, want)
			}
		}
	}
}

// TestHasNUL checks hasNUL against bytes.IndexByte for a NUL at every
// place of keys up to 24 bytes, and none.
func TestHasNUL(t *testing.T) {
	for n := range 25 {
		for at := -1; at < n; at++ {
			v := bytes.Repeat([]byte{0x80, 0x01, 0xff, '1'}, 7)[:n]
			if at >= 0 {
				v[at] = 0
			}
			if got, want := hasNUL(v), at >= 0; got != want {
				t.Fatalf("hasNUL(%q) = %v", v, got)
			}
		}
	}
}

// TestSplitRequest checks splitRequest against the plain reading (the
// first space ends the method, the last begins the protocol) on request
// lines of random words, spaces and protocols.
func TestSplitRequest(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	words := []string{"GET", "GETX", "GE", "POST", "-", "/", "/a", "/a b", "HTTP/1.1", "HTTP/2.0", "HTTP/1.10", "HTTP/1 1", "", " ", "\t", "x"}
	for range 20000 {
		var b []byte
		for range rng.IntN(5) {
			b = append(b, words[rng.IntN(len(words))]...)
			if rng.IntN(3) > 0 {
				b = append(b, ' ')
			}
		}
		var got, want Record
		splitRequest(b, &got)
		if i := bytes.IndexByte(b, ' '); i < 0 {
			want.Method = b
		} else {
			want.Method = b[:i]
			rest := b[i+1:]
			if j := bytes.LastIndexByte(rest, ' '); j >= 0 {
				want.Path, want.Proto = rest[:j], rest[j+1:]
			} else {
				want.Path = rest
			}
		}
		for _, f := range [][2][]byte{{got.Method, want.Method}, {got.Path, want.Path}, {got.Proto, want.Proto}} {
			if !bytes.Equal(f[0], f[1]) || (f[0] == nil) != (f[1] == nil) {
				t.Fatalf("splitRequest(%q): method %q path %q proto %q, want %q %q %q", b, got.Method, got.Path, got.Proto, want.Method, want.Path, want.Proto)
			}
		}
	}
}
