package model_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// loginScenario is the classic login throttle: a credential stuffer whose
// attempts fail 95% of the time, a user who mistypes twice in three
// attempts, and a busy user who logs in successfully 20 times in each 300 s.
const loginScenario = `name: login throttle
duration_s: 600
arrivals: %s
clients:
  - {name: credential stuffer, class: abusive, stage: none, segments: [[0, 600, 1]], fail_share: 0.95}
  - {name: user with two typos, class: legit, segments: [[100, 103, 1]], fail_share: 0.67}
  - {name: busy user, class: legit, segments: [[0, 20, 1], [300, 320, 1]]}
`

// Counting only failed logins (count_if status 401) at 5 per 300 s catches
// the stuffer and cuts no user; counting every request at the same limit
// cuts the busy user. The keyed simulation (two nodes sharing state
// atomically) decides as the one-key-per-client path.
func TestCountIfLoginThrottle(t *testing.T) {
	for _, arrivals := range []string{"uniform", "fluid"} {
		sc, err := model.ParseScenario([]byte(fmt.Sprintf(loginScenario, arrivals)))
		if err != nil {
			t.Fatal(err)
		}
		if back, err := model.ParseScenario(sc.YAML()); err != nil || !reflect.DeepEqual(back, sc) {
			t.Fatalf("canonical YAML reads back as %+v, %v", back, err)
		}
		w, err := model.NewWorkload(sc)
		if err != nil {
			t.Fatal(err)
		}
		sim := w.NewSimulator()
		for rep := range 5 {
			sim.SetReplicate(7, rep)
			p := model.Policy{Algorithm: model.FixedWindow, WindowS: 300, Limit: 5, CountIf: "401"}
			var o, keyed, plain model.Outcome
			sim.Run(p, &o)
			stuffer, typos := o.Clients[0], o.Clients[1]
			// Each 300 s window admits the stuffer's first 5 failures and
			// the successes before the 5th: about 5.3 on average.
			if stuffer.Admitted > 2*10 || stuffer.Admitted < 2*5 {
				t.Errorf("%s rep %d: stuffer admitted %d of %d, want 10 to 20", arrivals, rep, stuffer.Admitted, stuffer.Offered)
			}
			if o.FalseCut != 0 || typos.Offered != 3 {
				t.Errorf("%s rep %d: %d legitimate requests cut (typo user offered %d)", arrivals, rep, o.FalseCut, typos.Offered)
			}
			if o.MissedPct > 4 {
				t.Errorf("%s rep %d: missed %.1f%% of the stuffer's attempts", arrivals, rep, o.MissedPct)
			}
			pk := p
			pk.Nodes, pk.State = 2, model.Shared
			sim.Run(pk, &keyed)
			for i := range o.Clients {
				if keyed.Clients[i] != o.Clients[i] {
					t.Errorf("%s rep %d client %d: keyed %+v, per-client %+v", arrivals, rep, i, keyed.Clients[i], o.Clients[i])
				}
			}
			p.CountIf = ""
			sim.Run(p, &plain)
			if plain.Clients[2].Cut() == 0 {
				t.Errorf("%s rep %d: counting every request cut nothing of the busy user", arrivals, rep)
			}
		}
	}
}
