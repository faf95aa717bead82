package explain

import (
	"fmt"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// Run is a run directory's scenario and grid, rebuilt from the spec its
// parts carry.
type Run struct {
	Dir      string
	Workload *model.Workload
	Seed     uint64 // the spec's seed: replicate 0 is realisation (Seed, 0)
	// Replicates is the spec's replicates; Explain explains replicate 0.
	Replicates int
	grid       *sweep.Grid
}

// OpenRun opens the run in dir through sweep.OpenRun (incomplete runs
// refused unless allowIncomplete) and rebuilds its scenario from its spec.
// A run that replays a log is refused (ErrUnsupported).
func OpenRun(dir string, allowIncomplete bool) (*Run, error) {
	rd, err := sweep.OpenRun(dir, sweep.OpenOptions{AllowIncomplete: allowIncomplete})
	if err != nil {
		return nil, err
	}
	if rd.SpecYAML == "" {
		return nil, fmt.Errorf("%s: its parts carry no spec, so its scenario cannot be rebuilt", dir)
	}
	spec, err := sweep.ParseSpec([]byte(rd.SpecYAML), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: its spec: %w", dir, err)
	}
	if spec.Scenario == nil {
		return nil, &UnsupportedError{fmt.Errorf("%s: runs that replay a log are not supported: explain re-simulates a scenario's clients", dir)}
	}
	w, err := model.NewWorkload(spec.Scenario)
	if err != nil {
		return nil, fmt.Errorf("%s: its scenario: %w", dir, err)
	}
	return &Run{Dir: dir, Workload: w, Seed: spec.Seed, Replicates: spec.Replicates, grid: sweep.NewGrid(spec)}, nil
}

// Policy returns the run's policy whose canonical label is label's, with
// what the grid adds to it (costs, count_if, block levels), or an error
// when the run did not sweep it.
func (r *Run) Policy(label string) (model.Policy, error) {
	p, err := model.ParseLabel(label)
	if err != nil {
		return p, err
	}
	want := p.Canonical()
	for id := range r.grid.Points() {
		if q := r.grid.Policy(id); q.Canonical() == want {
			return q, nil
		}
	}
	return p, fmt.Errorf("%s is not a policy of %s (labels as in its points table)", want, r.Dir)
}

// Explain explains p over the run's replicate 0.
func (r *Run) Explain(p model.Policy) (*Result, error) {
	return Explain(r.Workload, p, r.Seed)
}
