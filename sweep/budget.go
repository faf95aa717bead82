package sweep

import (
	"context"
	"errors"
	"math/bits"

	"github.com/ratesweep/ratesweep/ingest"
)

// LogBudget is the budget of reading a log whole within maxMemory bytes
// (0 or less: none), as inspect and init --from-log do: the runtime, then
// the compiled log's bytes a request and a key.
func LogBudget(maxMemory int64) ingest.Budget {
	if maxMemory <= 0 {
		return ingest.Budget{}
	}
	return ingest.Budget{Limit: maxMemory, Base: memBase, PerRequest: memPerLogRequest, PerKey: memPerLogKey, Flag: "--max-memory"}
}

// logBudget is the budget of a run's log read within maxMemory bytes (0
// or less: none): the estimate's items besides the log, then the log's
// bytes a request and a key.
func (e *Estimate) logBudget(maxMemory int64) ingest.Budget {
	if maxMemory <= 0 || e.logPerRequest == 0 {
		return ingest.Budget{}
	}
	return ingest.Budget{Limit: maxMemory, Base: e.logBase, PerRequest: e.logPerRequest, PerKey: memPerLogKey, Flag: "--max-memory"}
}

// withLogBudget is spec whose log reads (and spilled partitions' loads)
// check b.
func withLogBudget(spec *Spec, b ingest.Budget) *Spec {
	if spec.Traffic == nil || b.Limit <= 0 {
		return spec
	}
	sub := *spec
	tr := *spec.Traffic
	tr.Options.Budget = b
	if len(tr.Options.Spills) > 0 {
		spills := make(map[string]*ingest.Spill, len(tr.Options.Spills))
		for k, sp := range tr.Options.Spills {
			spills[k] = sp.WithBudget(b)
		}
		tr.Options.Spills = spills
	}
	sub.Traffic = &tr
	return &sub
}

// passesFor is the least power of two P, at least from, whose key
// partitions of requests requests and keys keys (1/P of them each, with a
// quarter more for unevenness) fit b; 0 when none up to maxSpillPasses
// does.
func passesFor(b ingest.Budget, requests, keys int64, from int) int {
	for p := max(from, 2); p <= maxSpillPasses; p *= 2 {
		share := func(n int64) int64 { return n/int64(p) + n/int64(4*p) + 1 }
		if r := b.Requests(share(keys)); r > 0 && share(requests) <= r {
			return p
		}
	}
	return 0
}

// overBudget answers a log read that stopped at its memory budget: a run
// that key passes can split (files, the whole grid's run, not a key shard
// already) spills the log into as many key partitions as its share
// read so far says it needs (runSpilled checks them once written); any
// other stops with the budget's error, which names --max-memory.
func overBudget(ctx context.Context, spec *Spec, opts Options, be *ingest.BudgetError) (*Result, error) {
	if opts.keyShard.Count > 0 {
		return nil, inputErrorf("%v (or in more key shards: --shard I/N with a larger N)", be)
	}
	if opts.NoOutput || be.Stdin || CheckKeySharding(spec) != nil {
		return nil, inputErrorf("%v", be)
	}
	reqs := max(be.Projected(), 2*be.Requests)
	p := passesFor(be.Budget, reqs, be.Keys, 2)
	if p == 0 {
		return nil, inputErrorf("%v", be)
	}
	return runSpilled(ctx, spec, opts, p)
}

// nextPow2 is the least power of two >= n (n >= 1).
func nextPow2(n int64) int64 {
	if n <= 1 {
		return 1
	}
	return 1 << (64 - bits.LeadingZeros64(uint64(n-1)))
}

// isBudget reports whether err is a log read stopped at its budget.
func isBudget(err error) (*ingest.BudgetError, bool) {
	var be *ingest.BudgetError
	ok := errors.As(err, &be)
	return be, ok
}

// checkLogFiles refuses a replay of standard input before anything reads
// it: a run's log must be a file (its hash identifies the run), and an
// endless stream would otherwise be read for ever.
func checkLogFiles(spec *Spec) error {
	if spec.Traffic == nil {
		return nil
	}
	for _, log := range append([]string{spec.Traffic.Log}, spec.Traffic.Logs...) {
		if log == ingest.Stdin {
			return inputErrorf("traffic.log: - (standard input): a sweep needs the log as a file (its hash identifies the run); save it to a file first, or profile the stream with ratesweep inspect -")
		}
	}
	return nil
}
