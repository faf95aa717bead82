package explain

import (
	"os"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// Over the lesson's and the keyed next step's scenarios, every supported
// family and key is explained (the replay admits what the simulation
// admits), and each client's causes add up to what it had cut or missed.
func TestConsistentWithSimulation(t *testing.T) {
	for _, c := range []struct {
		file     string
		poisson  bool
		policies []string
	}{
		{"../configs/lesson.yaml", false, []string{
			"fixed_window window_s=60 limit=600", "fixed_window window_s=60 limit=600 phase_s=30",
			"fixed_window_anchored window_s=60 limit=600", "sliding_window window_s=60 limit=600",
			"sliding_log window_s=60 limit=600", "sliding_counter window_s=60 limit=600",
			"token_bucket rate=10 capacity=900", "gcra rate=10 capacity=900",
			"nginx rate=10 burst=500 delay=0", "nginx rate=10 burst=500 delay=1000000", "traefik rate=10 capacity=900",
		}},
		{"../configs/lesson.yaml", true, []string{"sliding_counter window_s=60 limit=600", "token_bucket rate=10 capacity=900"}},
		{"../configs/next-step.yaml", false, []string{
			"fixed_window window_s=60 limit=600 key=address", "token_bucket rate=10 capacity=900 key=account",
			"sliding_window window_s=60 limit=600 key=global", "gcra rate=10 capacity=900",
			"nginx rate=10 burst=500 delay=100 key=address",
		}},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := model.ParseScenario(data)
		if err != nil {
			t.Fatal(err)
		}
		if c.poisson {
			sc.Arrivals.Process = model.Poisson
		}
		w, err := model.NewWorkload(sc)
		if err != nil {
			t.Fatal(err)
		}
		for _, label := range c.policies {
			p, err := model.ParseLabel(label)
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			res, err := Explain(w, p, 7)
			if err != nil {
				t.Errorf("%s, %s: %v", c.file, label, err)
				continue
			}
			s := w.NewSimulator()
			s.SetReplicate(7, 0)
			var out model.Outcome
			s.Run(p, &out)
			for i, ex := range res.Clients {
				var sum int64
				for _, n := range ex.ByCause {
					sum += n
				}
				want := out.Clients[i].Cut()
				if ex.Class == model.Abusive {
					want = out.Clients[i].Admitted
				}
				if sum != ex.Affected || ex.Affected != want {
					t.Errorf("%s, %s, %s: causes %v sum %d, affected %d, simulation %d", c.file, label, ex.Name, ex.ByCause, sum, ex.Affected, want)
				}
			}
		}
	}
}
