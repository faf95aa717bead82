package model

import (
	"bufio"
	"compress/gzip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// traefikRecordings are Traefik v3.6.12's own rateLimit middleware's
// decisions on hostile traces, driven in virtual time (scripts/traefik-oracle,
// make traefik-recordings).
const traefikRecordings = "testdata/traefik-recordings.csv.gz"

// The model's traefik decides every recorded request as Traefik did: served
// (200) or 429, and a served request after the same delay, to the ns; each
// source has its own bucket; average 0 serves everything at once.
func TestTraefikRecordings(t *testing.T) {
	f, err := os.Open(traefikRecordings)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	var (
		p         Policy
		limited   bool
		setting   string
		sources   map[string]Decider
		n, traces int
		tNs       int64 // Unix ns
		served    int
		late      int
	)
	for line := 0; sc.Scan(); line++ {
		s := sc.Text()
		if strings.HasPrefix(s, "#") {
			continue
		}
		fs := strings.Split(s, ",")
		num := func(i int) int64 {
			v, err := strconv.ParseInt(fs[i], 10, 64)
			if err != nil {
				t.Fatalf("%s:%d: field %d: %v", traefikRecordings, line+1, i+1, err)
			}
			return v
		}
		if fs[0] == "setting" {
			if len(fs) != 5 {
				t.Fatalf("%s:%d: %d fields, want 5", traefikRecordings, line+1, len(fs))
			}
			setting, traces, tNs = s, traces+1, num(4)
			if p, limited, err = TraefikPolicy(num(1), time.Duration(num(2)), num(3)); err != nil {
				t.Fatalf("%s:%d: %v", traefikRecordings, line+1, err)
			}
			sources = map[string]Decider{}
			continue
		}
		if len(fs) != 4 {
			t.Fatalf("%s:%d: %d fields, want 4", traefikRecordings, line+1, len(fs))
		}
		tNs += num(0)
		src, code, delay := fs[1], num(2), num(3)
		n++
		wantServed := code == 200
		if wantServed {
			served++
			if delay > 0 {
				late++
			}
		}
		if !limited {
			if !wantServed || delay != 0 {
				t.Fatalf("%s:%d (%s): no limit, but Traefik answered %d after %d ns", traefikRecordings, line+1, setting, code, delay)
			}
			continue
		}
		d := sources[src]
		if d == nil {
			if d, err = NewDeciderAt(p, 0); err != nil {
				t.Fatal(err)
			}
			sources[src] = d
		}
		got := d.Allow(tNs)
		if got != wantServed {
			t.Fatalf("%s:%d (%s as %s): source %s at Unix %d ns: model admits %v, Traefik answered %d", traefikRecordings, line+1, setting, p.Canonical(), src, tNs, got, code)
		}
		if got && d.(Shaper).DelayNs() != delay {
			t.Fatalf("%s:%d (%s): source %s at Unix %d ns: model delays %d ns, Traefik %d ns", traefikRecordings, line+1, setting, src, tNs, d.(Shaper).DelayNs(), delay)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 10000 || late == 0 || served == n {
		t.Fatalf("%d decisions in %d traces (%d served, %d late): not the recordings", n, traces, served, late)
	}
	t.Logf("%d decisions in %d traces equal (%d served, %d of them late; %d rejected)", n, traces, served, late, n-served)
}
