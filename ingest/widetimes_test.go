package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// TestWholeSecondColumn builds random logs three times, times kept in
// whole seconds while they can be (placed by key in one pass, or permuted
// as for a large log) and in ns from the start (permuted in place), and
// wants the same Traffic: with and without
// request rules, rate rules and costs, times going back, and a time that
// does not fit whole seconds (a fraction, or 100 years away) at the start,
// the middle or the end.
func TestWholeSecondColumn(t *testing.T) {
	rules := []Rule{
		{Name: "wp", Stage: model.StageDesign, Scope: ScopeRequest, Path: mustRe(`^/wp`)},
		{Name: "burst", Stage: model.StageCode, Path: mustRe(`^/login`), Scope: ScopeKey, Rate: &Rate{Requests: 3, WindowS: 2}},
		{Name: "errors", Stage: model.StageNone, Scope: ScopeRequest, Statuses: []StatusRange{{500, 599}}},
	}
	variants := []struct {
		name string
		opt  Options
	}{
		{"plain", Options{}},
		{"rules", Options{Rules: rules}},
		{"statuses", Options{Statuses: true, Rules: rules[1:2]}},
	}
	csv := Options{Reader: ReaderOptions{Format: FormatCSV, CSV: CSVOptions{Columns: map[string]string{"time": "ts", "ip": "ip", "path": "path", "status": "status"}}}}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 31))
		n := 1 + rng.IntN(9000)
		odd := -1 // the line whose time does not fit
		oddKind := rng.IntN(3)
		if seed%4 != 0 {
			odd = []int{0, n / 2, n - 1}[rng.IntN(3)]
		}
		var b strings.Builder
		b.WriteString("ts,ip,path,status\n")
		t0 := int64(1_600_000_000)
		back := []int64{4, 900}[seed%2] // a little back at times, or far (beyond insertBack requests of a key)
		for i := range n {
			ts := fmt.Sprint(t0 + int64(i)/7 - rng.Int64N(back))
			if i == odd {
				switch oddKind {
				case 0:
					ts = fmt.Sprintf("%d.25", t0+int64(i)/7)
				case 1:
					ts = fmt.Sprint(t0 + 100*365*86400) // beyond 2³¹ s forward
				default:
					ts = fmt.Sprint(t0 - 40*365*86400) // far back (max_backwards_s unbounded)
				}
			}
			path := []string{"/", "/wp-login.php", "/login", "/x"}[rng.IntN(4)]
			status := []string{"200", "503", "401"}[rng.IntN(3)]
			fmt.Fprintf(&b, "%s,10.0.0.%d,%s,%s\n", ts, rng.IntN(1+rng.IntN(60)), path, status)
		}
		for _, v := range variants {
			opt := v.opt
			opt.Reader = csv.Reader
			opt.MaxBackS = -1
			for _, lines := range []int64{0, int64(n) + 10} {
				build := func(wide, large bool) *Traffic {
					o := opt
					o.wide, o.large = wide, large
					tr, err := buildN(context.Background(), strings.NewReader(b.String()), o, lines)
					if err != nil {
						t.Fatal(err)
					}
					return tr
				}
				ns := build(true, false)
				for _, large := range []bool{false, true} {
					if got := build(false, large); !reflect.DeepEqual(got, ns) {
						t.Fatalf("seed %d, %s, %d lines (odd line %d, kind %d): whole seconds (as for a large log: %v) give\n%+v\nns give\n%+v",
							seed, v.name, lines, odd, oddKind, large, got, ns)
					}
				}
				if ns.Requests() != int64(n) {
					t.Fatalf("seed %d: %d requests of %d", seed, ns.Requests(), n)
				}
			}
		}
	}
}
