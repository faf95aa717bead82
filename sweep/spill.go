package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// maxSpillPasses bounds the key passes of a log replay larger than memory.
const maxSpillPasses = 1 << 16

// SpillPasses is the number of key passes a run of spec (shard, workers)
// takes to stay within maxMemory: 1 when the estimate fits (or cannot be
// helped by passes), else the least power of two P whose key shards of
// 1/P of the log's keys each fit. Only a whole log replay that key shards
// can split is spilled (CheckKeySharding); 0 means no P fits.
func SpillPasses(spec *Spec, shard Shard, workers int, maxMemory int64) int {
	if maxMemory <= 0 || spec.Traffic == nil || shard.Count > 1 {
		return 1
	}
	if estimateRun(spec, shard, 1, workers, maxMemory).MemoryBytes <= maxMemory {
		return 1
	}
	if CheckKeySharding(spec) != nil {
		return 1
	}
	for p := 2; p <= maxSpillPasses; p *= 2 {
		if estimateRun(spec, shard, p, workers, maxMemory).MemoryBytes <= maxMemory {
			return p
		}
	}
	return 0
}

// runSpilled replays the log in passes key shards: one streaming read of
// each log writes its requests into a file per key partition
// (RUN_DIR/spill/, compact binary rows: ingest.SpillLog), then pass i is
// key shard i of passes (RUN_DIR/keyshards/, resumable like any key shard)
// over partition i's file alone; the passes are merged into RUN_DIR as
// one run over the whole log, and the passes and spill files removed.
func runSpilled(ctx context.Context, spec *Spec, opts Options, passes int) (*Result, error) {
	dir := opts.OutDir
	if m, err := loadManifest(filepath.Join(dir, "manifest.json")); err == nil && opts.Resume &&
		m.KeyShards > 0 && m.SpecSHA256 == sha256Hex(spec.YAML()) && !fileExists(filepath.Join(dir, KeyShardsDir)) {
		// Complete: its passes were merged and removed.
		return &Result{Dir: dir, Points: m.Points, Rows: m.Rows, Parts: len(m.Parts), PartsSkipped: len(m.Parts),
			FalseCutSum: m.FalseCutSum, Manifest: filepath.Join(dir, "manifest.json"), Log: m.Log, Passes: passes}, nil
	}
	if fileExists(filepath.Join(dir, "spec.yaml")) && !opts.Resume {
		if !opts.Force {
			return nil, fmt.Errorf("%w: %s holds results of this or another spec; use --resume to complete it or --force to start again", ErrOutputExists, dir)
		}
		if err := clearRun(dir, true); err != nil {
			return nil, err
		}
	}
	sub, done, err := spillLogs(ctx, spec, dir, passes)
	defer func() { done() }()
	if err != nil {
		return nil, err
	}
	// The partitions' sizes are known once written: a log whose share read
	// before the budget stopped it (or whose size) understated it is
	// spilled again into enough partitions; one whose largest partition
	// more passes do not shrink (a key of more requests than the budget
	// holds) is refused.
	est := estimateRun(spec, opts.Shard, 1, opts.Workers, opts.MaxMemory)
	budget := est.logBudget(opts.MaxMemory)
	before := map[string]int64{} // per log: its largest partition's requests at the previous split
	for budget.Limit > 0 {
		more := 0
		for log, sp := range sub.Traffic.Options.Spills {
			r, k := sp.Largest(budget)
			if r <= budget.Requests(k) {
				continue
			}
			p := passesFor(budget, r*int64(passes), k*int64(passes), 2*passes)
			if prev, ok := before[log]; p == 0 || (ok && r > prev/4*3) {
				return nil, inputErrorf("%s: the largest of its %d key partitions holds %d requests of %d keys, about %s of memory, more than --max-memory %s, and more passes do not split it (a key's requests stay in one pass); raise --max-memory",
					log, passes, r, k, yamlx.FormatBytes(budget.Need(r, k)), yamlx.FormatBytes(budget.Limit))
			}
			before[log] = r
			more = max(more, min(p, 16*passes)) // a partition that does not shrink is found at the next split
		}
		if more == 0 {
			break
		}
		done()
		passes = more
		if sub, done, err = spillLogs(ctx, spec, dir, passes); err != nil {
			return nil, err
		}
	}
	sha, err := spec.WorkloadSHA256()
	if err != nil {
		return nil, err
	}
	total := NewGrid(spec).Points() * int64(spec.Replicates)
	res := &Result{Dir: dir, Passes: passes}
	for i := range passes {
		o := opts
		o.ShardBy, o.Shard, o.workloadSHA = ShardByKey, Shard{i, passes}, sha
		if opts.Progress != nil {
			o.Progress = func(done int64) { opts.Progress((int64(i)*total + done) / int64(passes)) }
		}
		r, err := Run(ctx, sub, o)
		if r != nil && res.Log == nil {
			res.Log = r.Log
		}
		if err != nil {
			return res, err
		}
		res.Parts, res.Points, res.Rows = r.Parts, r.Points, r.Rows
		res.PartsSkipped += r.PartsSkipped
		res.Computed += r.Computed
	}
	res.PartsSkipped /= passes
	res.Computed /= int64(passes)
	rep, err := Merge(ctx, dir, MergeOptions{Shards: passes, Workers: opts.Workers})
	if err != nil {
		if len(rep.Problems) > 0 {
			err = fmt.Errorf("%w: %s", err, rep.Problems[0])
		}
		return res, err
	}
	res.FalseCutSum = rep.Manifest.FalseCutSum
	res.Manifest = filepath.Join(dir, "manifest.json")
	return res, os.RemoveAll(filepath.Join(dir, KeyShardsDir))
}

// SpillDir is the directory of a run directory that holds a spilled run's
// partition files while it runs (ingest.SpillFile names them).
const SpillDir = "spill"

// spillLogs splits spec's logs into passes key partitions under
// dir/SpillDir (removing what a killed run left there first) and returns
// spec reading them; done removes the files.
func spillLogs(ctx context.Context, spec *Spec, dir string, passes int) (*Spec, func(), error) {
	sd := filepath.Join(dir, SpillDir)
	done := func() { os.RemoveAll(sd) }
	if err := refuseForeign(dir); err != nil {
		return nil, func() {}, err
	}
	os.RemoveAll(sd)
	if err := os.MkdirAll(sd, 0o755); err != nil {
		return nil, done, fmt.Errorf("cannot create the spill directory: %w", err)
	}
	opt, err := spec.weighedOptions()
	if err != nil {
		return nil, done, inputErrorf("%v", err)
	}
	logs := spec.Traffic.Logs
	if len(logs) == 0 {
		logs = []string{spec.Traffic.Log}
	}
	spills := map[string]*ingest.Spill{}
	for i, log := range logs {
		sp, err := ingest.SpillLog(ctx, log, opt, sd, i, passes)
		if err != nil {
			return nil, done, err
		}
		spills[log] = sp
	}
	sub := *spec
	tr := *spec.Traffic
	tr.Options.Spills = spills
	sub.Traffic = &tr
	return &sub, done, nil
}
