package model

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// Any bytes given as a scenario decode to a valid scenario or to
// *yamlx.Error lines (never a panic); a valid scenario's canonical
// YAML decodes to itself, and a small one simulates the same whether
// compiled or streamed.
func FuzzParseScenario(f *testing.F) {
	for _, name := range []string{"lesson.yaml", "next-step.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "configs", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("name: x\nduration_s: 10\narrivals: {process: clustered, burst_size: 3, spread_s: 0.5}\nclients:\n  - {name: a, class: abusive, stage: none, segments: [[0, 10, 2.5]], addresses: 3, spread: random}\n"))
	f.Add([]byte("name: x\nduration_s: 5\nclients: [{name: a, class: legit, segments: [[0, 5, 1e9]]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario(data)
		if err != nil {
			var ye *yamlx.Error
			if !errors.As(err, &ye) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			// One line per error (a spec's errors come all at once).
			for _, l := range strings.Split(err.Error(), "\n") {
				if strings.TrimSpace(l) == "" {
					t.Fatalf("an empty error line: %q", err)
				}
			}
			return
		}
		canon := sc.YAML()
		sc2, err := ParseScenario(canon)
		if err != nil {
			t.Fatalf("canonical YAML does not decode: %v\n%s", err, canon)
		}
		if again := sc2.YAML(); string(again) != string(canon) {
			t.Fatalf("canonical YAML changes on a round trip:\n%s\n%s", canon, again)
		}
		var reqs float64
		for _, c := range sc.Clients {
			for _, g := range c.Segments {
				reqs += float64(g.T1-g.T0) * g.Rate
			}
		}
		if int64(len(sc.Clients))*int64(sc.DurationS) > 1e5 || reqs > 1e5 {
			return
		}
		w, err := NewWorkload(sc)
		if err != nil {
			t.Fatal(err)
		}
		sw, err := NewStreamedWorkload(sc)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []Policy{
			{Algorithm: SlidingWindow, WindowS: 7, Limit: 5},
			{Algorithm: TokenBucket, Rate: 1.5, Capacity: 4},
			{Algorithm: FixedWindow, WindowS: 3, Limit: 2, Key: KeyGlobal},
		} {
			var a, b Outcome
			w.NewSimulator().Run(p, &a)
			sw.NewSimulator().Run(p, &b)
			if a.Metrics != b.Metrics {
				t.Fatalf("%v: compiled %+v, streamed %+v", p, a.Metrics, b.Metrics)
			}
		}
	})
}
