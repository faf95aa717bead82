package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/runfs"
	"github.com/ratesweep/ratesweep/model"
	"golang.org/x/sync/errgroup"
)

// DefaultMaxPoints is the largest grid run accepts unless raised.
const DefaultMaxPoints = 50_000_000

// Options control a run. The zero value runs all parts with one worker per core.
type Options struct {
	OutDir    string // run directory
	Workers   int    // simulation+writer goroutines; 0 = all cores
	Shard     Shard  // zero value = 0/1 (the whole grid)
	Resume    bool   // keep verified parts, compute only what is missing
	Force     bool   // replace an existing run
	NoOutput  bool   // simulate only, write nothing (benchmarks)
	MaxPoints int64  // points rows (points × replicates); 0 = DefaultMaxPoints
	MaxMemory int64  // bytes the run may need by its estimate; 0 = DefaultMaxMemory(), < 0 = no limit
	MaxOutput int64  // Parquet bytes the run may write by its estimate; 0 = no limit
	// MaxMalformed bounds a log's malformed lines (nil: 1%); more is an
	// input error naming the first bad lines.
	MaxMalformed *ingest.MalformedLimit
	// ShardBy says what Shard splits: the grid (default), or a log's keys
	// (keyshard.go).
	ShardBy ShardBy

	// Progress, when set, is called from workers with the rows (points ×
	// replicates) done so far.
	Progress func(done int64)

	now        func() time.Time
	beforePart func(Part) error        // test hook: fail or pause before writing a part
	afterBatch func(path string) error // test hook: fail part-way through writing a file
	keyShard   Shard                   // set by runKeyShard: the key shard this run computes
	// workloadSHA, when set, is spec.WorkloadSHA256(), computed once for
	// every pass of a spilled run (hashing the log reads all of it).
	workloadSHA string
}

// Result summarises a run.
type Result struct {
	Dir          string
	Points       int64 // grid points of this shard
	Rows         int64 // points rows of this shard (points × replicates)
	Parts        int   // parts of this shard
	PartsSkipped int   // parts kept by --resume
	Computed     int64 // grid points simulated by this call (not kept by --resume)
	FalseCutSum  int64 // Σ false_cut over the shard's rows (the peers' checksum)
	Manifest     string
	Log          *ingest.Accounting // a log replay's line accounting (nil for scenarios)
	Passes       int                // key passes of a log larger than memory (spill.go); 0 or 1: one
}

// ErrOutputExists is returned when the run directory holds a run already.
var ErrOutputExists = errors.New("output directory is not empty")

// InputError is bad input or usage found by the runner (exit 2).
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// Manifest lists a shard's completed parts. It is written last: its presence
// means the shard is complete.
type Manifest struct {
	Version        string             `json:"version"`
	Spec           string             `json:"spec"`
	SpecSHA256     string             `json:"spec_sha256"`
	ScenarioSHA256 string             `json:"scenario_sha256"`
	Shard          string             `json:"shard"`
	Points         int64              `json:"points"`
	Replicates     int                `json:"replicates"`
	Rows           int64              `json:"rows"`
	FalseCutSum    int64              `json:"false_cut_sum"`
	Parts          []ManifestPart     `json:"parts"`
	Finished       string             `json:"finished"`
	Log            *ingest.Accounting `json:"log,omitempty"`           // a log replay's line accounting
	MergedShards   int                `json:"merged_shards,omitempty"` // set by 'ratesweep merge': the shard count
	Compacted      bool               `json:"compacted,omitempty"`     // set by 'merge --compact': parts are merged-*.parquet
	KeyShard       string             `json:"key_shard,omitempty"`     // a key shard's run (I/N): its keys only
	KeyShards      int                `json:"key_shards,omitempty"`    // set by 'ratesweep merge' of key shards: their count
}

// ManifestPart is one part's files.
type ManifestPart struct {
	Index   int      `json:"index"`
	From    int64    `json:"first_point_id"`
	To      int64    `json:"end_point_id"`
	Points  fileMeta `json:"points"`
	Clients fileMeta `json:"clients"`
}

// ManifestName is the manifest file of a shard within the run directory.
func ManifestName(s Shard) string {
	if s.Count <= 1 {
		return "manifest.json"
	}
	return fmt.Sprintf("manifest.shard-%05d-of-%05d.json", s.Index, s.Count)
}

// partState is a part's progress within a run.
type partState struct {
	part          Part
	points, cl    fileMeta
	falseCut      int64
	done, resumed bool
}

// Run runs the spec's grid (this shard of it) and writes Parquet parts and a
// manifest under opts.OutDir. Cancelling ctx stops it between points; every
// part completed so far stays, and Run returns ctx's error.
func Run(ctx context.Context, spec *Spec, opts Options) (*Result, error) {
	if err := CheckGridSize(spec, opts.MaxPoints); err != nil {
		return nil, err // counted before anything is sized from the grid
	}
	if err := checkLogFiles(spec); err != nil {
		return nil, err
	}
	if opts.ShardBy == ShardByKey {
		return runKeyShard(ctx, spec, opts)
	}
	if err := setRunDefaults(spec, &opts); err != nil {
		return nil, err
	}
	if opts.keyShard.Count == 0 && !opts.NoOutput {
		if p := SpillPasses(spec, opts.Shard, opts.Workers, opts.MaxMemory); p > 1 {
			return runSpilled(ctx, spec, opts, p)
		}
	}
	est := estimateRun(keyShardSpec(spec, opts.keyShard), opts.Shard, max(1, opts.keyShard.Count), opts.Workers, opts.MaxMemory)
	if err := est.CheckLimits(spec, opts.MaxPoints, opts.MaxOutput, opts.MaxMemory, opts.NoOutput); err != nil {
		return nil, err
	}
	src, err := newSource(ctx, withLogBudget(keyShardSpec(spec, opts.keyShard), est.logBudget(opts.MaxMemory)), est.Streamed)
	if be, ok := isBudget(err); ok {
		return overBudget(ctx, spec, opts, be)
	}
	if err != nil {
		return nil, err
	}
	if sc, ok := src.(scenarioSource); ok {
		if err := checkStateSlots(spec, sc.wl); err != nil {
			return nil, err
		}
	}
	logAcc, err := logAccounting(src, opts)
	if err != nil {
		return &Result{Log: logAcc}, err
	}
	workloadSHA := opts.workloadSHA
	if workloadSHA == "" {
		if workloadSHA, err = spec.WorkloadSHA256(); err != nil {
			return nil, err
		}
	}
	grid := NewGrid(spec)
	parts := ShardParts(grid, opts.Shard)
	res := &Result{Dir: opts.OutDir, Parts: len(parts), Log: logAcc}
	for _, p := range parts {
		res.Points += p.Points()
	}
	res.Rows = res.Points * int64(spec.Replicates)

	specYAML := string(spec.YAML())
	meta, err := runMeta(opts, specYAML, workloadSHA, logAcc)
	if err != nil {
		return nil, err
	}
	states := make([]partState, len(parts))
	for i, p := range parts {
		states[i].part = p
	}
	if !opts.NoOutput {
		lock, err := prepareOutput(spec, opts, src, specYAML, states)
		if err != nil {
			return nil, err
		}
		defer lock.Release()
	}
	if err := runParts(ctx, spec, opts, src, grid, states, meta); err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, err
	}
	res.tally(states)
	if opts.NoOutput {
		return res, nil
	}
	return res, writeRunManifest(spec, opts, res, states, specYAML, meta[MetaScenarioSHA256])
}

// tally adds the parts' false cuts, and counts the points computed and the
// parts a resumed run skipped.
func (res *Result) tally(states []partState) {
	for _, st := range states {
		res.FalseCutSum += st.falseCut
		if st.resumed {
			res.PartsSkipped++
		} else {
			res.Computed += st.part.Points()
		}
	}
}

// setRunDefaults fills in the options left at zero and checks the shards.
func setRunDefaults(spec *Spec, opts *Options) error {
	if opts.Shard.Count == 0 {
		opts.Shard = Shard{0, 1}
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = DefaultMaxPoints
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	if opts.MaxMemory == 0 {
		opts.MaxMemory = DefaultMaxMemory()
	}
	if err := CheckShardCount(opts.Shard.Count); err != nil {
		return err
	}
	if opts.keyShard.Count > 0 {
		if err := CheckShardCount(opts.keyShard.Count); err != nil {
			return err
		}
	}
	return NewGrid(spec).CheckShard(opts.Shard)
}

// logAccounting sums the accounting of a log replay's logs (nil for a
// scenario) and refuses a log with more malformed lines than allowed.
func logAccounting(src source, opts Options) (*ingest.Accounting, error) {
	ts, ok := src.(*trafficSource)
	if !ok {
		return nil, nil
	}
	lim := ingest.DefaultMalformedLimit
	if opts.MaxMalformed != nil {
		lim = *opts.MaxMalformed
	}
	var accs []ingest.Accounting
	for _, tr := range ts.trs {
		accs = append(accs, tr.Accounting())
	}
	acc := ingest.SumAccounting(accs)
	for _, tr := range ts.trs {
		if lim.Exceeded(&tr.Stats) {
			return &acc, inputErrorf("%s: %s", tr.Source, lim.MalformedError(&tr.Stats))
		}
	}
	return &acc, nil
}

// runMeta is the metadata every part of the run carries.
func runMeta(opts Options, specYAML, workloadSHA string, logAcc *ingest.Accounting) (map[string]string, error) {
	meta := map[string]string{
		MetaVersion:        Version,
		MetaSpec:           specYAML,
		MetaScenarioSHA256: workloadSHA,
		MetaShard:          opts.Shard.String(),
	}
	if opts.keyShard.Count > 0 {
		meta[MetaKeyShard] = opts.keyShard.String()
	}
	if logAcc != nil {
		js, err := json.Marshal(logAcc)
		if err != nil {
			return nil, err
		}
		meta[MetaLog] = string(js)
	}
	return meta, nil
}

// prepareOutput takes the run directory's lock, prepares the directory
// (marking the parts a resumed run has) and writes a key shard's key rows.
func prepareOutput(spec *Spec, opts Options, src source, specYAML string, states []partState) (*runfs.Lock, error) {
	lock, err := prepareDir(opts, specYAML, spec.Replicates, states)
	if err != nil {
		return nil, err
	}
	if ts, ok := src.(*trafficSource); ok && opts.keyShard.Count > 0 {
		if err := writeKeyRows(opts.OutDir, keyRowsOf(ts, opts.keyShard)); err != nil {
			lock.Release()
			return nil, err
		}
	}
	if spec.Traffic == nil && opts.keyShard.Count > 0 {
		if err := writeKeyRows(opts.OutDir, scenarioKeyRows(spec.Scenario, opts.keyShard)); err != nil {
			lock.Release()
			return nil, err
		}
	}
	return lock, nil
}

// runParts simulates the parts not done yet on opts.Workers workers and
// writes each one's files.
func runParts(ctx context.Context, spec *Spec, opts Options, src source, grid *Grid, states []partState, meta map[string]string) error {
	pointsSchema, clientsSchema := schemas(meta)
	pointsSchema, clientsSchema = withReactions(pointsSchema, clientsSchema, specReacts(spec))
	pointsSchema, clientsSchema = withCosts(pointsSchema, clientsSchema, spec.Costed())
	todo := make(chan int)
	var done atomic.Int64
	for i := range states {
		if states[i].done {
			done.Add(states[i].part.Points() * int64(spec.Replicates))
		}
	}
	if opts.Progress != nil {
		opts.Progress(done.Load())
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(todo)
		for i := range states {
			if states[i].done {
				continue
			}
			select {
			case todo <- i:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	for range min(opts.Workers, max(len(states), 1)) {
		g.Go(func() (err error) {
			defer recoverPanic(&err)
			sim := src.newSim()
			r := &partResult{reps: spec.Replicates, mem: memory.DefaultAllocator, prepare: !opts.NoOutput}
			r.react.on = specReacts(spec)
			r.cost.on = spec.Costed()
			r.names, r.classes, r.stages = src.rows()
			for i := range todo {
				st := &states[i]
				if err := simulatePart(gctx, grid, sim, spec.Seed, st.part, r, &done, opts.Progress); err != nil {
					return err
				}
				st.falseCut += r.falseCut()
				if opts.beforePart != nil {
					if err := opts.beforePart(st.part); err != nil {
						return err
					}
				}
				if !opts.NoOutput {
					var err error
					if st.points, st.cl, err = writePart(opts.OutDir, r, pointsSchema, clientsSchema, opts.afterBatch); err != nil {
						return err
					}
				}
				st.done = true
			}
			return nil
		})
	}
	return g.Wait()
}

// writeRunManifest makes every part durable and then writes the manifest that
// says the run (this shard of it) is complete.
func writeRunManifest(spec *Spec, opts Options, res *Result, states []partState, specYAML, workloadSHA string) error {
	// One directory sync each makes every part's rename durable before the
	// manifest says the run is complete (parts skip their own, write.go).
	for _, sub := range []string{"points", "clients"} {
		if err := syncDir(filepath.Join(opts.OutDir, sub)); err != nil {
			return err
		}
	}
	m := Manifest{
		Version: Version, Spec: spec.Name, SpecSHA256: sha256Hex([]byte(specYAML)),
		ScenarioSHA256: workloadSHA, Shard: opts.Shard.String(),
		Points: res.Points, Replicates: spec.Replicates, Rows: res.Rows, FalseCutSum: res.FalseCutSum,
		Finished: opts.now().UTC().Format(time.RFC3339), Log: res.Log,
	}
	if opts.keyShard.Count > 0 {
		m.KeyShard = opts.keyShard.String()
	}
	for _, st := range states {
		m.Parts = append(m.Parts, ManifestPart{Index: st.part.Index, From: st.part.From, To: st.part.To, Points: st.points, Clients: st.cl})
	}
	res.Manifest = filepath.Join(opts.OutDir, ManifestName(opts.Shard))
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(res.Manifest, append(data, '\n'))
}

// PanicError is a panic in a worker goroutine (a bug), returned as an error
// so that the command can report it instead of crashing.
type PanicError struct {
	Value any
	Stack []byte // the panicking goroutine's stack
}

func (e *PanicError) Error() string { return fmt.Sprintf("internal error: %v", e.Value) }

// recoverPanic, deferred in a goroutine, turns its panic into *err.
func recoverPanic(err *error) {
	if r := recover(); r != nil {
		*err = &PanicError{Value: r, Stack: debug.Stack()}
	}
}

// simulatePart runs every point and replicate of part into r. Replicates are
// the outer loop: a stochastic workload's requests are generated once per
// replicate and shared by every point (common random numbers).
func simulatePart(ctx context.Context, grid *Grid, sim pointSim, seed uint64, part Part, r *partResult, done *atomic.Int64, progress func(int64)) error {
	n := int(part.Points())
	r.part = part
	r.reset(n)
	r.scratchClients = grow(r.scratchClients, len(r.names))
	if r.prepare {
		r.beginParams(grid.Algorithms(part.From, part.To), n)
	}
	// Points are made, simulated and (first replicate) their parameter
	// columns and labels filled chunk by chunk, while their policies are
	// in the cache (a chunk's policies are made again for each replicate:
	// cheaper than a part's worth of them in memory); progress and
	// cancellation are checked every 256.
	const chunk, every = 4096, 256
	r.chunkPolicies, r.chunkChanged = grow(r.chunkPolicies, chunk), grow(r.chunkChanged, chunk)
	batch, _ := sim.(batchSim)
	fast, _ := sim.(fastSim)
	// put stores a batch's results from point first on; made once, not per
	// point (a closure per point was 30% of the lesson's simulation time).
	var first, rep int
	put := func(k int, clients []model.ClientResult, m *model.Metrics) {
		r.setRow((first+k)*r.reps+rep, clients, m)
	}
	for rep = range r.reps {
		sim.setReplicate(seed, rep)
		reported := 0
		for lo := 0; lo < n; lo += chunk {
			hi := min(lo+chunk, n)
			pol, changed := r.chunkPolicies[:hi-lo], r.chunkChanged[:hi-lo]
			grid.Policies(pol, part.From+int64(lo), changed)
			for i := lo; i < hi; {
				if i-reported >= every || i == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
					report(done.Add(int64(i-reported)), progress)
					reported = i
				}
				first = i
				if fast != nil {
					// Up to the next progress report, straight into the
					// part's admitted column.
					d := &r.fastRun
					nc := len(r.names)
					d.Admitted, d.Stride = r.admitted[(i*r.reps+rep)*nc:], r.reps*nc
					d.Changed = changed[i-lo:]
					if k := fast.runFast(pol[i-lo:min(hi, reported+every)-lo], d); k > 0 {
						r.setFastRun(i, rep, k, d)
						i += k
						continue
					}
				}
				if batch != nil {
					if k := batch.runBatch(pol[i-lo:], put); k > 0 {
						i += k
						continue
					}
				}
				m := sim.run(pol[i-lo], r.scratchClients)
				r.setRow(i*r.reps+rep, r.scratchClients, &m)
				r.setReactions(i*r.reps+rep, &m, sim)
				r.setCosts(i*r.reps+rep, &m, r.scratchClients, sim)
				i++
			}
			if rep == 0 && r.prepare {
				r.fillParams(lo, pol, changed)
			}
		}
		report(done.Add(int64(n-reported)), progress)
	}
	return nil
}

func report(done int64, progress func(int64)) {
	if progress != nil {
		progress(done)
	}
}
