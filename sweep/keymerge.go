package sweep

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/runfs"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"golang.org/x/sync/errgroup"
)

// How the merge of key shards combines each points metric column: every
// int64 column is a count over requests or keys and is added up, but for
// the columns named here.
var (
	// derivedMetrics are ratios of added counts: model.Metrics.Finish
	// computes them again from the sums.
	derivedMetrics = []string{"legit_cut_pct", "missed_pct", "only_here_pct"}
	// peakMetrics are peaks over every key at once (null unless measured):
	// a key shard cannot measure them; a measured value is refused.
	peakMetrics = []string{"state_keys_peak", "state_bytes_peak"}
)

// keyMergeColumns are the clients columns the merge reads; the others are
// keys (point_id, replicate), the rows' names, or derived (cut).
var keyMergeClients = append([]string{"point_id", "replicate", "client", "class", "stage", "offered", "admitted", "cut", BlockedColumn}, costClientColumns...)

// keyShardIn is one key shard of a run being merged.
type keyShardIn struct {
	shard Shard
	dir   string
	m     *Manifest
	kr    *keyRows
	spec  []byte
	rowOf []int32 // the merged clients row of each of its clients rows
}

// mergeKeyShards merges the key shards of the run in dir (under
// dir/keyshards) into dir: the parts and manifest.json a single run over
// the whole log writes, with every points metric added up over the shards
// (ratios computed again from the sums) and the clients rows placed as
// that run places them (the top keys over all shards, then one "other
// keys" row per label).
func mergeKeyShards(ctx context.Context, dir string, opts MergeOptions) (*MergeReport, error) {
	rep := &MergeReport{Dir: dir}
	ins, err := findKeyShards(dir, opts.Shards, rep)
	if err != nil || len(rep.MissingShards) > 0 || len(rep.Problems) > 0 {
		if err == nil {
			err = ErrIncomplete
		}
		return rep, err
	}
	specData := ins[0].spec
	specYAML := string(specData)
	spec, err := ReadSpec(specData, filepath.Join(ins[0].dir, "spec.yaml"), ins[0].dir)
	if err != nil {
		return rep, err
	}
	grid := NewGrid(spec)
	parts := ShardParts(grid, Shard{0, 1})
	for _, in := range ins {
		checkKeyShard(in, ins[0], spec, specYAML, parts, opts, rep)
	}
	sort.Strings(rep.Problems)
	if len(rep.Problems) > 0 {
		return rep, ErrIncomplete
	}
	var rows *mergedRows
	if spec.Traffic != nil {
		rows = placeKeyRows(ins, spec.Traffic.TopKeys)
	} else if r, ok := placeScenarioRows(ins); ok {
		rows = r
	} else {
		return rep, inputErrorf("%s: the key shards do not hold each of the scenario's clients once (rerun them with --force using one version)", dir)
	}

	// The run directory: spec.yaml as the shards', the lock, the part
	// directories; a merged manifest goes first (it says "complete").
	if err := refuseForeign(dir); err != nil {
		return rep, err
	}
	specPath := filepath.Join(dir, "spec.yaml")
	if old, err := readRegular(specPath, maxManifestBytes); err == nil {
		if string(old) != specYAML {
			return rep, inputErrorf("%s holds a run of a different spec than its key shards (see %s): remove it and merge again", dir, specPath)
		}
	} else if _, err := createFileExclusive(specPath, specData); err != nil {
		return rep, fmt.Errorf("cannot write to the run directory: %w", err)
	}
	lock, err := runfs.Acquire(dir, false)
	if err != nil {
		if errors.Is(err, runfs.ErrLocked) {
			return rep, &InputError{Msg: err.Error()}
		}
		return rep, err
	}
	defer lock.Release()
	merged := filepath.Join(dir, "manifest.json")
	if m, err := loadManifest(merged); err == nil && m.Compacted {
		return rep, finishCompacted(ctx, dir, spec, specYAML, m, opts, rep)
	}
	if err := os.Remove(merged); err != nil && !errors.Is(err, os.ErrNotExist) {
		return rep, err
	}
	for _, sub := range []string{"points", "clients"} {
		if _, err := runfs.Dir(dir, sub); err != nil {
			return rep, inputErrorf("cannot use the run directory: %v", err)
		}
	}

	meta := map[string]string{
		MetaVersion:        Version,
		MetaSpec:           specYAML,
		MetaScenarioSHA256: ins[0].m.ScenarioSHA256,
		MetaShard:          Shard{0, 1}.String(),
	}
	if ins[0].m.Log != nil {
		js, err := json.Marshal(ins[0].m.Log)
		if err != nil {
			return rep, err
		}
		meta[MetaLog] = string(js)
	}
	pointsSchema, clientsSchema := schemas(meta)
	pointsSchema, clientsSchema = withCosts(pointsSchema, clientsSchema, spec.Costed())
	m := &Manifest{
		Version: Version, Spec: spec.Name, SpecSHA256: sha256Hex(specData),
		ScenarioSHA256: ins[0].m.ScenarioSHA256, Shard: Shard{0, 1}.String(),
		Points: grid.Points(), Replicates: spec.Replicates, Rows: spec.Rows(),
		Log: ins[0].m.Log, KeyShards: len(ins),
	}
	for _, in := range ins {
		m.Finished = max(m.Finished, in.m.Finished)
	}
	m.Parts = make([]ManifestPart, len(parts))
	falseCut := make([]int64, len(parts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Workers)
	for k, p := range parts {
		g.Go(func() (err error) {
			defer recoverPanic(&err)
			r := &partResult{reps: spec.Replicates, mem: memory.DefaultAllocator, prepare: true}
			r.names, r.classes, r.stages = rows.names, rows.classes, rows.stages
			r.cost.on = spec.Costed()
			if err := mergeKeyPart(gctx, grid, p, ins, r); err != nil {
				return err
			}
			falseCut[k] = r.falseCut()
			pm, cm, err := writePart(dir, r, pointsSchema, clientsSchema, nil)
			if err != nil {
				return err
			}
			m.Parts[k] = ManifestPart{Index: p.Index, From: p.From, To: p.To, Points: pm, Clients: cm}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return rep, err
	}
	for _, fc := range falseCut {
		m.FalseCutSum += fc
	}
	for _, sub := range []string{"points", "clients"} {
		if err := syncDir(filepath.Join(dir, sub)); err != nil {
			return rep, err
		}
	}
	// Every row, as every reader of the run will read it.
	var files []string
	for _, p := range m.Parts {
		files = append(files, filepath.Join(dir, "points", p.Points.Name))
	}
	if err := verifyPointFiles(ctx, dir, specYAML, files); err != nil {
		return rep, err
	}
	rep.Shards, rep.Manifest = len(ins), m
	if opts.Compact {
		return rep, compact(ctx, dir, spec, m, opts, rep)
	}
	return rep, writeManifest(merged, m)
}

// findKeyShards lists the key shards of dir (n of them; 0: the count the
// finished key shards' manifests give, never a directory name) and reads
// each one's manifest, keyrows.json and spec; what is missing goes to rep.
func findKeyShards(dir string, n int, rep *MergeReport) ([]*keyShardIn, error) {
	ents, err := os.ReadDir(filepath.Join(dir, KeyShardsDir))
	if err != nil {
		return nil, inputErrorf("%s: no key shards (%v)", dir, plainErr(err))
	}
	counts := map[int]int{}
	unfinished := 0
	for _, e := range ents {
		var i, c int
		if _, err := fmt.Sscanf(e.Name(), "shard-%05d-of-%05d", &i, &c); err != nil || !e.IsDir() || i >= c {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s/%s: not a key shard directory", KeyShardsDir, yamlx.Excerpt(e.Name())))
			continue
		}
		m, err := loadManifest(filepath.Join(dir, KeyShardsDir, e.Name(), "manifest.json"))
		if err != nil {
			unfinished++ // named below when its count is the run's
			continue
		}
		s, err := ParseShard(m.KeyShard)
		if err == nil {
			err = CheckShardCount(s.Count)
		}
		if err != nil || KeyShardDir(dir, s) != filepath.Join(dir, KeyShardsDir, e.Name()) {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s/%s: its manifest says key shard %s", KeyShardsDir, e.Name(), yamlx.Excerpt(m.KeyShard)))
			continue
		}
		counts[s.Count]++
	}
	if n == 0 {
		switch len(counts) {
		case 0:
			if unfinished > 0 {
				return nil, inputErrorf("%s: no key shard under %s has finished (none has a manifest.json), so their count is unknown; give it with --shards", dir, KeyShardsDir)
			}
			return nil, inputErrorf("%s: no key shards under %s", dir, KeyShardsDir)
		case 1:
			for c := range counts {
				n = c
			}
		default:
			var cs []int
			for c := range counts {
				cs = append(cs, c)
			}
			slices.Sort(cs)
			return nil, inputErrorf("%s holds key shards of several shard counts %v; give the count with --shards", dir, cs)
		}
	}
	rep.Shards = n
	for c := range counts {
		if c != n {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s/shard-*-of-%05d: key shards of another shard count than %d (stale: remove them)", KeyShardsDir, c, n))
		}
	}
	var ins []*keyShardIn
	for i := range n {
		s := Shard{i, n}
		sd := KeyShardDir(dir, s)
		m, err := loadManifest(filepath.Join(sd, "manifest.json"))
		if err != nil {
			rep.MissingShards = append(rep.MissingShards, i)
			what := "not finished (no manifest.json)"
			if !errors.Is(err, os.ErrNotExist) {
				what = err.Error()
			}
			rep.Problems = append(rep.Problems, fmt.Sprintf("key shard %s: %s", s, what))
			continue
		}
		in := &keyShardIn{shard: s, dir: sd, m: m}
		if in.kr, err = readKeyRows(sd); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("key shard %s: %v", s, err))
			continue
		}
		if in.spec, err = readRegular(filepath.Join(sd, "spec.yaml"), maxManifestBytes); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("key shard %s: %v", s, err))
			continue
		}
		if m.KeyShard != s.String() || in.kr.KeyShard != s.String() {
			rep.Problems = append(rep.Problems, fmt.Sprintf("key shard %s: its manifest says key shard %s", s, yamlx.Excerpt(m.KeyShard)))
			continue
		}
		ins = append(ins, in)
	}
	return ins, nil
}

// checkKeyShard compares key shard in with the first one (same spec, log,
// version and time span) and verifies its parts.
func checkKeyShard(in, first *keyShardIn, spec *Spec, specYAML string, parts []Part, opts MergeOptions, rep *MergeReport) {
	bad := func(format string, args ...any) {
		rep.Problems = append(rep.Problems, fmt.Sprintf("key shard %s: ", in.shard)+fmt.Sprintf(format, args...))
	}
	switch {
	case string(in.spec) != specYAML || in.m.SpecSHA256 != sha256Hex(in.spec):
		bad("another spec than key shard %s's", first.shard)
		return
	case in.m.ScenarioSHA256 != first.m.ScenarioSHA256:
		bad("workload %.12s, key shard %s: %.12s (another log)", in.m.ScenarioSHA256, first.shard, first.m.ScenarioSHA256)
		return
	case in.m.Version != first.m.Version:
		bad("written by ratesweep %s, key shard %s by %s (rerun it with --force using one version)", in.m.Version, first.shard, first.m.Version)
		return
	case !slices.Equal(in.kr.StartUnix, first.kr.StartUnix) || !slices.Equal(in.kr.DurationS, first.kr.DurationS) || in.kr.Labels != first.kr.Labels || in.kr.Scenario != first.kr.Scenario:
		bad("its log's time span differs from key shard %s's", first.shard)
		return
	}
	a, _ := json.Marshal(in.m.Log)
	b, _ := json.Marshal(first.m.Log)
	if string(a) != string(b) {
		bad("its log's line accounting differs from key shard %s's (another log)", first.shard)
		return
	}
	if len(in.m.Parts) != len(parts) {
		bad("%d parts, the grid has %d", len(in.m.Parts), len(parts))
		return
	}
	nr := int64(len(in.kr.Rows))
	for k, p := range parts {
		mp := in.m.Parts[k]
		if mp.Index != p.Index || mp.From != p.From || mp.To != p.To {
			bad("part %d is not the grid's part %d", mp.Index, p.Index)
			return
		}
		rows := p.Points() * int64(spec.Replicates)
		if err := verifyFile(in.dir, "points", p.Name(), mp.Points, rows, specYAML, opts.VerifySHA256); err != nil {
			bad("points/%s: %v", p.Name(), err)
		}
		if err := verifyFile(in.dir, "clients", p.Name(), mp.Clients, rows*nr, specYAML, opts.VerifySHA256); err != nil {
			bad("clients/%s: %v", p.Name(), err)
		}
	}
}

// mergedRows are the clients rows of the merged run.
type mergedRows struct {
	names   []string
	classes []model.Class
	stages  []model.Stage
}

func (g *mergedRows) add(name string, c model.Class, s model.Stage) int32 {
	g.names, g.classes, g.stages = append(g.names, name), append(g.classes, c), append(g.stages, s)
	return int32(len(g.names) - 1)
}

// placeKeyRows lays out the merged clients rows as one run over the whole
// log does (ingest.Traffic.Rows, LabelRows) and sets each shard's rowOf.
// Top keys: every shard's key rows, ranked by requests (descending), then
// name; the first top of them keep their rows, the others join their
// label's "other keys" row, and those rows follow in the order of their
// first key's rank. Several logs: one row per label that some shard holds,
// in the order legit, design, code, none.
func placeKeyRows(ins []*keyShardIn, top int) *mergedRows {
	g := &mergedRows{}
	for _, in := range ins {
		in.rowOf = make([]int32, len(in.kr.Rows))
	}
	if ins[0].kr.Labels {
		var present [4]bool
		for _, in := range ins {
			for _, r := range in.kr.Rows {
				present[r.Stage] = true
			}
		}
		var row [4]int32
		for _, s := range []model.Stage{model.NoStage, model.StageDesign, model.StageCode, model.StageNone} {
			if present[s] {
				row[s] = g.add(ingest.LabelRowName(s), ingest.StageClass(s), s)
			}
		}
		for _, in := range ins {
			for i, r := range in.kr.Rows {
				in.rowOf[i] = row[r.Stage]
			}
		}
		return g
	}
	type ref struct {
		in  *keyShardIn
		row int
	}
	rank := func(a, b keyRow) int {
		if c := cmp.Compare(b.Requests, a.Requests); c != 0 {
			return c
		}
		return strings.Compare(a.First, b.First)
	}
	var keys []ref
	for _, in := range ins {
		for i, r := range in.kr.Rows {
			if r.Key {
				keys = append(keys, ref{in, i})
			}
		}
	}
	slices.SortStableFunc(keys, func(a, b ref) int {
		return rank(a.in.kr.Rows[a.row], b.in.kr.Rows[b.row])
	})
	if top < 0 || top > len(keys) {
		top = len(keys)
	}
	for _, k := range keys[:top] {
		r := k.in.kr.Rows[k.row]
		k.in.rowOf[k.row] = g.add(r.Name, r.Class, r.Stage)
	}
	// The first key of each label beyond the top keys.
	var first [4]*keyRow
	consider := func(r keyRow) {
		if f := first[r.Stage]; f == nil || rank(r, *f) < 0 {
			first[r.Stage] = &r
		}
	}
	for _, k := range keys[top:] {
		consider(k.in.kr.Rows[k.row])
	}
	for _, in := range ins {
		for _, r := range in.kr.Rows {
			if !r.Key {
				consider(r)
			}
		}
	}
	var stages []model.Stage
	for s, f := range first {
		if f != nil {
			stages = append(stages, model.Stage(s))
		}
	}
	slices.SortStableFunc(stages, func(a, b model.Stage) int { return rank(*first[a], *first[b]) })
	var other [4]int32
	for _, s := range stages {
		other[s] = g.add(ingest.OtherRowName(s), ingest.StageClass(s), s)
	}
	for _, k := range keys[top:] {
		k.in.rowOf[k.row] = other[k.in.kr.Rows[k.row].Stage]
	}
	for _, in := range ins {
		for i, r := range in.kr.Rows {
			if !r.Key {
				in.rowOf[i] = other[r.Stage]
			}
		}
	}
	return g
}

// mergeKeyPart fills r with part p merged over the key shards: the
// parameter columns from the grid, every metric and clients row added up.
func mergeKeyPart(ctx context.Context, grid *Grid, p Part, ins []*keyShardIn, r *partResult) error {
	n := int(p.Points())
	r.part = p
	r.reset(n)
	r.beginParams(grid.Algorithms(p.From, p.To), n)
	const chunk = 4096
	pol, changed := make([]model.Policy, min(chunk, n)), make([]int8, min(chunk, n))
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		grid.Policies(pol[:hi-lo], p.From+int64(lo), changed[:hi-lo])
		r.fillParams(lo, pol[:hi-lo], changed[:hi-lo])
	}
	nrows, nc := n*r.reps, len(r.names)
	ms := make([]model.Metrics, nrows)
	cl := make([]model.ClientResult, nrows*nc)
	var cc []model.ClientResult // cost units per clients row (costcols.go)
	if r.cost.on {
		cc = make([]model.ClientResult, nrows*nc)
	}
	blockedNs := make([]int64, nrows) // legit_blocked_s of a scenario's shards, ns
	for _, in := range ins {
		if err := addKeyShardPart(ctx, in, p, r.reps, ms, cl, nc, blockedNs); err != nil {
			return err
		}
		if err := addKeyShardCosts(ctx, in, p, ms, cc, nc); err != nil {
			return err
		}
	}
	for row := range ms {
		ms[row].LegitBlockedS = float64(blockedNs[row]) / 1e9
		ms[row].Finish()
		r.setRow(row, cl[row*nc:(row+1)*nc], &ms[row])
		if r.cost.on {
			r.cost.set(row, &ms[row], cc[row*nc:(row+1)*nc])
		}
	}
	return nil
}

// addKeyShardPart adds key shard in's part p to ms (per points row) and cl
// (per points row × merged clients row), and a scenario's legit_blocked_s
// to blockedNs (per points row, ns: the sum of the legitimate clients'
// blocked_s, exactly). A scenario's state peaks are left unmeasured: a
// peak over every key at once is no sum of the shards' peaks.
func addKeyShardPart(ctx context.Context, in *keyShardIn, p Part, reps int, ms []model.Metrics, cl []model.ClientResult, nc int, blockedNs []int64) error {
	scenario := in.kr.Scenario
	path := filepath.Join(in.dir, "points", p.Name())
	mc := metricColumns()
	cols := []string{"point_id", "replicate"}
	for _, c := range mc {
		cols = append(cols, c.name)
	}
	row := 0
	err := ScanFile(ctx, path, cols, func(rec arrow.RecordBatch) error {
		for i := range int(rec.NumRows()) {
			if row >= len(ms) {
				return fmt.Errorf("%s: more than %d rows", path, len(ms))
			}
			if err := checkRowKey(rec.Column(0), rec.Column(1), i, p, row, reps); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			m := &ms[row]
			for c, col := range mc {
				a := rec.Column(2 + c)
				switch {
				case slices.Contains(derivedMetrics, col.name):
				case scenario && slices.Contains(peakMetrics, col.name):
				case col.name == legitBlockedMetric:
					// Seconds summed over the legitimate keys: added up
					// as whole ns (exact below 2^53 ns, 104 days), then
					// turned back into seconds as a single run does.
					v, _ := Float(a, i)
					blockedNs[row] += int64(math.Round(v * 1e9))
				case slices.Contains(peakMetrics, col.name):
					if a.IsValid(i) {
						return inputErrorf("%s: %s is measured: a peak over every key at once, which key shards cannot add up; run without --shard-by key", path, col.name)
					}
				case col.typ == arrow.PrimitiveTypes.Int64:
					v, _ := Int(a, i)
					*(*int64)(unsafe.Add(unsafe.Pointer(m), col.offset)) += v
				default:
					if v, _ := Float(a, i); v != 0 {
						return inputErrorf("%s: %s is %g: a mean or percentile over every request, which key shards cannot add up; run without --shard-by key", path, col.name, v)
					}
				}
			}
			row++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if row != len(ms) {
		return fmt.Errorf("%s: %d rows, want %d", path, row, len(ms))
	}
	path = filepath.Join(in.dir, "clients", p.Name())
	schema, err := fileSchema(path)
	if err != nil {
		return err
	}
	for _, f := range schema.Fields() {
		if !slices.Contains(keyMergeClients, f.Name) {
			return inputErrorf("%s: clients column %s: the merge of key shards does not know how to add it up; run without --shard-by key", path, f.Name)
		}
	}
	nr := len(in.rowOf)
	k := 0
	ccols := []string{"point_id", "replicate", "offered", "admitted"}
	if schema.FieldIndices(BlockedColumn) != nil {
		ccols = append(ccols, BlockedColumn)
	}
	err = ScanFile(ctx, path, ccols, func(rec arrow.RecordBatch) error {
		for i := range int(rec.NumRows()) {
			row := k / nr
			if row >= len(ms) {
				return fmt.Errorf("%s: more than %d rows", path, len(ms)*nr)
			}
			if err := checkRowKey(rec.Column(0), rec.Column(1), i, p, row, reps); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			c := &cl[row*nc+int(in.rowOf[k%nr])]
			if len(ccols) > 4 {
				// The keys' blocked seconds, summed per row as ns.
				v, _ := Float(rec.Column(4), i)
				c.BlockedNs += int64(math.Round(v * 1e9))
			}
			off, _ := Int(rec.Column(2), i)
			adm, _ := Int(rec.Column(3), i)
			c.Offered += off
			c.Admitted += adm
			k++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if k != len(ms)*nr {
		return fmt.Errorf("%s: %d rows, want %d", path, k, len(ms)*nr)
	}
	return nil
}

// checkRowKey checks that row i of a batch is the part's points row row
// (point p.From + row/reps, replicate row%reps).
func checkRowKey(ids, repsCol arrow.Array, i int, p Part, row, reps int) error {
	id, _ := Int(ids, i)
	rep, _ := Int(repsCol, i)
	if id != p.From+int64(row/reps) || rep != int64(row%reps) {
		return fmt.Errorf("row %d is point %d replicate %d, want point %d replicate %d", row, id, rep, p.From+int64(row/reps), row%reps)
	}
	return nil
}
