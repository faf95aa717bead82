package sweep

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/ratesweep/ratesweep/internal/runfs"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"golang.org/x/sync/errgroup"
)

// CompactPrefix starts the names of the files 'merge --compact' writes
// (points/merged-NNNNNN.parquet, clients/merged-NNNNNN.parquet).
const CompactPrefix = "merged-"

// DefaultCompactRows is the most points rows per compacted file (the clients
// file of the same points has one row per client for each).
const DefaultCompactRows = 8 << 20

// ErrIncomplete is returned by Merge when a shard is missing or a part does
// not verify; the MergeReport says which.
var ErrIncomplete = errors.New("the run is incomplete")

// MergeOptions control Merge.
type MergeOptions struct {
	Shards       int   // expected shard count; 0 = from the manifests or the parts' metadata
	VerifySHA256 bool  // also hash every file and compare with its manifest
	Compact      bool  // rewrite the parts into fewer files
	CompactRows  int64 // most points rows per compacted file; 0 = DefaultCompactRows
	Workers      int   // files verified or compacted at once; 0 = all cores
}

// MergeReport says what Merge found and did.
type MergeReport struct {
	Dir           string
	Shards        int      // shard count of the run
	MissingShards []int    // shard indexes without a manifest
	Problems      []string // missing or corrupt parts, stale files (one line each)
	Manifest      *Manifest
	Compacted     int  // files per table after compaction (0: not compacted)
	AlreadyMerged bool // the directory was compacted before; nothing to do
}

// Merge checks that every shard of the run in dir is complete (its manifest
// exists and lists exactly its parts, whose footers read and whose row
// counts and spec match) and writes the combined dir/manifest.json, which
// lists every part as a single-process run would (shard 0/1). With Compact
// it then rewrites the parts into fewer files sorted by point_id, with the
// same schema and key-value metadata (ratesweep.shard becomes 0/1).
//
// An incomplete run returns the report and ErrIncomplete; a directory that
// is not a run returns an *InputError.
func Merge(ctx context.Context, dir string, opts MergeOptions) (*MergeReport, error) {
	if opts.CompactRows <= 0 {
		opts.CompactRows = DefaultCompactRows
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Shards != 0 {
		if err := CheckShardCount(opts.Shards); err != nil {
			return &MergeReport{Dir: dir}, err
		}
	}
	if st, err := os.Stat(filepath.Join(dir, KeyShardsDir)); err == nil && st.IsDir() {
		return mergeKeyShards(ctx, dir, opts)
	}
	rep := &MergeReport{Dir: dir}
	specPath := filepath.Join(dir, "spec.yaml")
	specData, err := readRegular(specPath, maxManifestBytes)
	if err != nil {
		return rep, inputErrorf("%s: not a ratesweep run directory (no spec.yaml: %v)", dir, plainErr(err))
	}
	spec, err := LoadSpec(specPath)
	if err != nil {
		return rep, err
	}
	lock, err := runfs.Acquire(dir, false)
	if err != nil {
		if errors.Is(err, runfs.ErrLocked) {
			return rep, &InputError{Msg: err.Error()}
		}
		return rep, err
	}
	defer lock.Release()
	for _, sub := range []string{"points", "clients"} {
		if st, err := os.Lstat(filepath.Join(dir, sub)); err == nil && st.Mode()&os.ModeSymlink != 0 {
			return rep, inputErrorf("%s: %s/ is a symbolic link; merge writes only inside the run directory", dir, sub)
		}
	}
	specYAML := string(specData)
	grid := NewGrid(spec)

	merged := filepath.Join(dir, "manifest.json")
	if m, err := loadManifest(merged); err == nil && m.Compacted {
		return rep, finishCompacted(ctx, dir, spec, specYAML, m, opts, rep)
	}

	n, err := mergeShardCount(dir, opts, grid, merged, rep)
	if err != nil {
		return rep, err
	}
	shards, checks, err := readShardManifests(dir, n, grid, spec, specYAML, rep)
	if err != nil {
		return rep, err
	}
	if err := verifyShardFiles(ctx, dir, spec, specYAML, shards, checks, opts, rep); err != nil {
		return rep, err
	}
	sort.Strings(rep.Problems)
	if len(rep.MissingShards) > 0 || len(rep.Problems) > 0 {
		return rep, ErrIncomplete
	}
	// Every row, as every reader of the run will read it.
	var files []string
	for _, c := range checks {
		files = append(files, filepath.Join(dir, "points", c.want.Name()))
	}
	if err := verifyPointFiles(ctx, dir, specYAML, files); err != nil {
		return rep, err
	}
	m := mergedManifest(spec, specData, grid, n, shards)
	rep.Manifest = m
	if !opts.Compact {
		if n == 1 {
			return rep, nil // a single-process run: its manifest.json is the merged one
		}
		return rep, writeManifest(merged, m)
	}
	return rep, compact(ctx, dir, spec, m, opts, rep)
}

// mergeShardCount is the shard count of the run in dir: the flag, else the
// manifests (what they say, not their names), else the parts' metadata. It
// sets rep.Shards and notes in rep the manifests that are misnamed or of
// another count.
func mergeShardCount(dir string, opts MergeOptions, grid *Grid, merged string, rep *MergeReport) (int, error) {
	counts := map[int][]int{} // count -> indexes with a manifest
	shardManifests, _ := filepath.Glob(filepath.Join(dir, "manifest.shard-*-of-*.json"))
	for _, mp := range shardManifests {
		name := filepath.Base(mp)
		m, err := loadManifest(mp)
		if ie := (*InputError)(nil); errors.As(err, &ie) {
			return 0, err // not a regular file
		}
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %v", name, plainErr(err)))
			continue
		}
		s, err := ParseShard(m.Shard)
		if err == nil {
			err = CheckShardCount(s.Count)
		}
		switch {
		case err != nil || s.Count < 2:
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: shard %s is not a shard I/N of 2 to %d shards", name, yamlx.Excerpt(m.Shard), MaxShards))
			continue
		case ManifestName(s) != name:
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: holds the manifest of shard %s (renamed?)", name, s))
			continue
		}
		counts[s.Count] = append(counts[s.Count], s.Index)
	}
	n := opts.Shards
	if n == 0 {
		switch {
		case len(counts) > 1:
			keys := make([]int, 0, len(counts))
			for k := range counts {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return 0, inputErrorf("%s holds manifests of several shard counts %v; give the count with --shards", dir, keys)
		case len(counts) == 1:
			for k := range counts {
				n = k
			}
		case fileExists(merged):
			n = 1
		default:
			var err error
			n, err = shardCountFromParts(dir)
			if err != nil {
				return 0, err
			}
		}
	}
	if err := grid.CheckShard(Shard{0, max(n, 1)}); err != nil {
		return 0, err
	}
	rep.Shards = n
	for k, idx := range counts {
		if k != n {
			rep.Problems = append(rep.Problems, fmt.Sprintf("manifest.shard-*-of-%05d.json: %d manifest(s) of another shard count than %d (stale: remove them)", k, len(idx), n))
		}
	}
	return n, nil
}

// shardPartCheck is one part a shard's manifest lists, to verify.
type shardPartCheck struct {
	shard Shard
	part  ManifestPart
	want  Part
}

// readShardManifests reads each of the n shards' manifest and returns those
// that describe their shard of spec, with their parts to verify; it notes
// in rep the shards missing or mismatched.
func readShardManifests(dir string, n int, grid *Grid, spec *Spec, specYAML string, rep *MergeReport) ([]*Manifest, []shardPartCheck, error) {
	var shards []*Manifest
	var checks []shardPartCheck
	for i := range n {
		s := Shard{i, n}
		want := ShardParts(grid, s)
		mpath := filepath.Join(dir, ManifestName(s))
		m, err := loadManifest(mpath)
		if ie := (*InputError)(nil); errors.As(err, &ie) {
			return nil, nil, err // not a regular file
		}
		if errors.Is(err, os.ErrNotExist) {
			rep.MissingShards = append(rep.MissingShards, i)
			present := 0
			for _, p := range want {
				if fileExists(filepath.Join(dir, "points", p.Name())) {
					present++
				}
			}
			rep.Problems = append(rep.Problems, fmt.Sprintf("shard %s: not finished (no %s; %d of its %d parts present)", s, filepath.Base(mpath), present, len(want)))
			continue
		}
		if err != nil {
			rep.MissingShards = append(rep.MissingShards, i)
			rep.Problems = append(rep.Problems, fmt.Sprintf("shard %s: %s: %v", s, filepath.Base(mpath), err))
			continue
		}
		if p := manifestMismatch(m, s, spec, specYAML, want); p != "" {
			rep.MissingShards = append(rep.MissingShards, i)
			rep.Problems = append(rep.Problems, fmt.Sprintf("shard %s: %s: %s", s, filepath.Base(mpath), p))
			continue
		}
		if len(shards) > 0 && m.Version != shards[0].Version {
			rep.Problems = append(rep.Problems, fmt.Sprintf("shard %s: written by ratesweep %s, shard %s by %s (rerun it with --force using one version)", s, m.Version, shards[0].Shard, shards[0].Version))
		}
		shards = append(shards, m)
		for k, mp := range m.Parts {
			checks = append(checks, shardPartCheck{s, mp, want[k]})
		}
	}
	return shards, checks, nil
}

// verifyShardFiles notes in rep the shards of another workload, every
// listed file whose footer, rows or spec (and SHA-256 if asked) is wrong,
// and temporary files left behind. A file that is not a regular file is
// bad input, returned, not a part to recompute.
func verifyShardFiles(ctx context.Context, dir string, spec *Spec, specYAML string, shards []*Manifest, checks []shardPartCheck, opts MergeOptions, rep *MergeReport) error {
	// Clients rows per points row (the clients of the workload): the same
	// for every part.
	var perRow int64
	for _, c := range checks {
		if r := c.want.Points() * int64(spec.Replicates); r > 0 && c.part.Points.Rows == r && c.part.Clients.Rows%r == 0 {
			perRow = c.part.Clients.Rows / r
			break
		}
	}
	for _, s := range shards[min(1, len(shards)):] {
		if s.ScenarioSHA256 != shards[0].ScenarioSHA256 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("shard %s: workload %.12s, shard %s: %.12s (another scenario or log)", s.Shard, s.ScenarioSHA256, shards[0].Shard, shards[0].ScenarioSHA256))
		}
	}

	var mu sync.Mutex
	var notRegular error
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Workers)
	for _, c := range checks {
		rows := c.want.Points() * int64(spec.Replicates)
		for _, f := range []struct {
			table string
			meta  fileMeta
			rows  int64
		}{{"points", c.part.Points, rows}, {"clients", c.part.Clients, rows * perRow}} {
			g.Go(func() error {
				if err := gctx.Err(); err != nil {
					return err
				}
				err := verifyFile(dir, f.table, c.want.Name(), f.meta, f.rows, specYAML, opts.VerifySHA256)
				if ie := (*InputError)(nil); errors.As(err, &ie) {
					mu.Lock()
					notRegular = cmp.Or(notRegular, err)
					mu.Unlock()
					return nil
				}
				if err != nil {
					mu.Lock()
					rep.Problems = append(rep.Problems, fmt.Sprintf("shard %s: %s/%s: %v", c.shard, f.table, c.want.Name(), err))
					mu.Unlock()
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if notRegular != nil {
		return notRegular
	}
	for _, table := range []string{"points", "clients"} {
		tmps, _ := filepath.Glob(filepath.Join(dir, table, ".part-*.tmp"))
		for _, t := range tmps {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s/%s: temporary file (a shard is still running, or was killed: resume it)", table, filepath.Base(t)))
		}
	}
	return nil
}

// mergedManifest is the combined manifest of the shards, as a
// single-process run writes it.
func mergedManifest(spec *Spec, specData []byte, grid *Grid, n int, shards []*Manifest) *Manifest {
	m := &Manifest{
		Version: Version, Spec: spec.Name, SpecSHA256: sha256Hex(specData),
		Shard:  Shard{0, 1}.String(),
		Points: grid.Points(), Replicates: spec.Replicates, Rows: spec.Rows(),
	}
	if n > 1 {
		m.MergedShards = n
	}
	for _, s := range shards {
		m.ScenarioSHA256 = s.ScenarioSHA256
		m.FalseCutSum += s.FalseCutSum
		m.Parts = append(m.Parts, s.Parts...)
		m.Finished = max(m.Finished, s.Finished)
		if m.Log == nil {
			m.Log = s.Log // every shard read the same log
		}
	}
	slices.SortFunc(m.Parts, func(a, b ManifestPart) int { return a.Index - b.Index })
	return m
}

// manifestMismatch says how m does not describe shard s of spec ("" = it does).
func manifestMismatch(m *Manifest, s Shard, spec *Spec, specYAML string, want []Part) string {
	switch {
	case m.SpecSHA256 != sha256Hex([]byte(specYAML)):
		return "written for another spec than spec.yaml"
	case m.Shard != s.String():
		return fmt.Sprintf("is for shard %s", m.Shard)
	case m.Replicates != spec.Replicates:
		return fmt.Sprintf("replicates %d, spec.yaml has %d", m.Replicates, spec.Replicates)
	case len(m.Parts) != len(want):
		return fmt.Sprintf("lists %d parts, the shard has %d", len(m.Parts), len(want))
	}
	for k, p := range want {
		mp := m.Parts[k]
		if mp.Index != p.Index || mp.From != p.From || mp.To != p.To {
			return fmt.Sprintf("part %d is [%d, %d), want part %d [%d, %d)", mp.Index, mp.From, mp.To, p.Index, p.From, p.To)
		}
		if mp.Points.Name != p.Name() || mp.Clients.Name != p.Name() {
			return fmt.Sprintf("part %d names files %s and %s", mp.Index, yamlx.Excerpt(mp.Points.Name), yamlx.Excerpt(mp.Clients.Name))
		}
	}
	return ""
}

// verifyFile checks a file against its manifest entry: its name is a file
// of dir/table (never a path or a symlink out of dir), the footer reads, it
// has rows rows (as the manifest says), it belongs to the spec and, with
// hash, its size and sha256 match.
func verifyFile(dir, table, name string, fm fileMeta, rows int64, specYAML string, hash bool) error {
	if !partName(name) {
		return errors.New("not a file name of the run directory (refused)")
	}
	path := filepath.Join(dir, table, name)
	if err := Confine(dir, path); err != nil && !errors.Is(err, os.ErrNotExist) && fileExists(path) {
		return errors.New("a symlink outside the run directory (refused)")
	}
	rdr, err := openParquet(path)
	if errors.Is(err, os.ErrNotExist) {
		return errors.New("missing")
	}
	if ie := (*InputError)(nil); errors.As(err, &ie) {
		return err // not a regular file
	}
	if err != nil {
		return fmt.Errorf("unreadable (%v)", err)
	}
	n := rdr.NumRows()
	v := rdr.MetaData().KeyValueMetadata().FindValue(MetaSpec)
	rdr.Close()
	switch {
	case n != rows:
		return fmt.Errorf("%d rows, want %d", n, rows)
	case fm.Rows != rows:
		return fmt.Errorf("the manifest says %d rows, want %d", fm.Rows, rows)
	case v == nil || *v != specYAML:
		return errors.New("written for another spec than spec.yaml")
	}
	if !hash {
		return nil
	}
	f, err := openRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if size != fm.Bytes {
		return fmt.Errorf("%d bytes, the manifest says %d", size, fm.Bytes)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != fm.SHA256 {
		return fmt.Errorf("sha256 %s, the manifest says %s", sum, fm.SHA256)
	}
	return nil
}

// shardCountFromParts reads the shard count from a part's metadata, for a
// run none of whose shards has finished.
func shardCountFromParts(dir string) (int, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "points", "part-*.parquet"))
	for _, f := range files {
		md, err := FileMetadata(f)
		if err != nil {
			continue
		}
		if s, err := ParseShard(md[MetaShard]); err == nil && CheckShardCount(s.Count) == nil {
			return s.Count, nil
		}
	}
	return 0, inputErrorf("%s: no manifest and no readable part: no shard has written anything yet (give the shard count with --shards to list the missing shards)", dir)
}

func loadManifest(path string) (*Manifest, error) {
	data, err := readRegular(path, maxManifestBytes)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a manifest: %v", err)
	}
	return &m, nil
}

// maxManifestBytes bounds what a manifest is read as: far above what the
// largest grid's manifest holds (about 350 bytes a part).
const maxManifestBytes = 256 << 20

// readRegular reads a small file of a run directory (a manifest) only if it
// is a regular file of at most limit bytes; a named pipe or device is an
// *InputError, found without blocking.
func readRegular(path string, limit int64) ([]byte, error) {
	data, err := runfs.ReadRegular(path, limit)
	var nr *runfs.NotRegularError
	if errors.As(err, &nr) {
		return nil, &InputError{Msg: nr.Error()}
	}
	return data, err
}

func writeManifest(path string, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'))
}
