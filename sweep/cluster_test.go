package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// clusterSpec is a 6,000-point grid (6 parts) over the lesson's scenario.
func clusterSpec(t *testing.T) *Spec {
	t.Helper()
	sc, err := filepath.Abs("../configs/lesson.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spec.yaml")
	data := fmt.Sprintf(`name: cluster-test
scenario: %q
sweep:
  - algorithm: fixed_window
    window_s: [10, 60]
    limit: {from: 1, to: 2000, step: 1}
  - algorithm: token_bucket
    rate: [5, 10]
    capacity: {from: 1, to: 1000, step: 1}
`, sc)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(Parts(spec.Points(), Shard{0, 1})); n != 6 {
		t.Fatalf("test grid has %d parts, want 6", n)
	}
	return spec
}

func runShard(t *testing.T, spec *Spec, dir string, s Shard, resume, force bool) *Result {
	t.Helper()
	res, err := Run(context.Background(), spec, Options{OutDir: dir, Shard: s, Workers: 2, Resume: resume, Force: force})
	if err != nil {
		t.Fatalf("shard %s: %v", s, err)
	}
	return res
}

// sameRuns fails unless dirs a and b hold the same points and clients rows.
func sameRuns(t *testing.T, a, b string) {
	t.Helper()
	ctx := context.Background()
	pa, err := ReadPoints(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := ReadPoints(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(pa) == 0 || len(pa) != len(pb) {
		t.Fatalf("points rows: %d in %s, %d in %s", len(pa), a, len(pb), b)
	}
	for i := range pa {
		if x, y := fmt.Sprintf("%+v", pa[i]), fmt.Sprintf("%+v", pb[i]); x != y {
			t.Fatalf("points row %d differs:\n%s\n%s", i, x, y)
		}
	}
	ca, err := ReadClients(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := ReadClients(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ca) != len(pa)*7 || !slices.Equal(ca, cb) {
		t.Fatalf("clients rows differ: %d in %s, %d in %s", len(ca), a, len(cb), b)
	}
}

func TestShardPartsDealEveryPartOnce(t *testing.T) {
	spec, err := LoadSpec("embedded:bench-large.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := NewGrid(spec)
	all := Parts(g.Points(), Shard{0, 1})
	for n := 1; n <= 9; n++ {
		seen := map[int]int{}
		for i := range n {
			ps := ShardParts(g, Shard{i, n})
			if !slices.Equal(ps, ShardParts(g, Shard{i, n})) {
				t.Fatalf("%d/%d: dealing is not deterministic", i, n)
			}
			for _, p := range ps {
				seen[p.Index]++
			}
		}
		for _, p := range all {
			if seen[p.Index] != 1 {
				t.Fatalf("N=%d: part %d dealt %d times", n, p.Index, seen[p.Index])
			}
		}
	}
}

// The dealing balances estimated cost: on bench-large (64 parts, the last
// 9 of them token_bucket, more than twice as costly) round-robin gives one
// of 4 shards 3 costly parts; cost dealing stays within 3% of the mean.
func TestShardPartsBalanceCost(t *testing.T) {
	spec, err := LoadSpec("embedded:bench-large.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := NewGrid(spec)
	for _, n := range []int{2, 4, 8} {
		var total, worst, worstRR int64
		for i := range n {
			var c, rr int64
			for _, p := range ShardParts(g, Shard{i, n}) {
				c += partCost(g, p)
			}
			for _, p := range Parts(g.Points(), Shard{i, n}) {
				rr += partCost(g, p)
			}
			total += c
			worst, worstRR = max(worst, c), max(worstRR, rr)
		}
		mean := float64(total) / float64(n)
		t.Logf("N=%d: most loaded shard %.3f × mean (round-robin %.3f)", n, float64(worst)/mean, float64(worstRR)/mean)
		limit := 1.03 // 16 or more parts per shard
		if n == 8 {
			limit = 1.08 // 8 parts per shard: one part is 1/8 of a shard
		}
		if float64(worst)/mean > limit || worst > worstRR {
			t.Errorf("N=%d: most loaded shard %.3f × mean, round-robin %.3f", n, float64(worst)/mean, float64(worstRR)/mean)
		}
	}
}

// Shards run in any order, some twice (--resume, --force), merge into the
// rows of a single-process run; compaction keeps them.
func TestShardsAnyOrderMergeEqualsSingleRun(t *testing.T) {
	spec := clusterSpec(t)
	single := filepath.Join(t.TempDir(), "single")
	want := runShard(t, spec, single, Shard{0, 1}, false, false)

	dir := filepath.Join(t.TempDir(), "sharded")
	const n = 3
	for _, step := range []struct {
		i             int
		resume, force bool
	}{{2, false, false}, {0, false, false}, {2, false, true}, {1, false, false}, {0, true, false}, {1, true, false}} {
		runShard(t, spec, dir, Shard{step.i, n}, step.resume, step.force)
	}
	rep, err := Merge(context.Background(), dir, MergeOptions{VerifySHA256: true})
	if err != nil {
		t.Fatalf("merge: %v %v", err, rep.Problems)
	}
	if rep.Shards != n || rep.Manifest.FalseCutSum != want.FalseCutSum || len(rep.Manifest.Parts) != 6 || rep.Manifest.Points != spec.Points() {
		t.Fatalf("merged manifest: %+v, want Σ false cut %d", rep.Manifest, want.FalseCutSum)
	}
	m, err := loadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil || m.MergedShards != n || m.Shard != "0/1" {
		t.Fatalf("manifest.json: %+v, %v", m, err)
	}
	sameRuns(t, single, dir)

	// Compaction: fewer files, same rows, same metadata but the shard.
	rep, err = Merge(context.Background(), dir, MergeOptions{Compact: true, CompactRows: 2500})
	if err != nil {
		t.Fatalf("merge --compact: %v %v", err, rep.Problems)
	}
	files, _ := PartFiles(dir, "points")
	if rep.Compacted != 3 || len(files) != 3 || !strings.HasPrefix(filepath.Base(files[0]), CompactPrefix) {
		t.Fatalf("compacted into %d files: %v", rep.Compacted, files)
	}
	if ms, _ := filepath.Glob(filepath.Join(dir, "manifest.shard-*")); len(ms) != 0 {
		t.Fatalf("shard manifests left after compaction: %v", ms)
	}
	sameRuns(t, single, dir)
	md, err := FileMetadata(files[1])
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := FileMetadata(filepath.Join(single, "points", "part-000000.parquet"))
	if md[MetaShard] != "0/1" || md[MetaSpec] != orig[MetaSpec] || md[MetaVersion] != orig[MetaVersion] || md[MetaScenarioSHA256] != orig[MetaScenarioSHA256] {
		t.Fatalf("compacted metadata %v", md)
	}
	// A compacted run is complete: merging again verifies it, run refuses to resume it.
	if rep, err = Merge(context.Background(), dir, MergeOptions{VerifySHA256: true}); err != nil || !rep.AlreadyMerged {
		t.Fatalf("merge after compaction: %v %v", err, rep.Problems)
	}
	if _, err := Run(context.Background(), spec, Options{OutDir: dir, Resume: true}); !errors.Is(err, ErrOutputExists) {
		t.Fatalf("resume of a compacted run: %v", err)
	}
}

// Shards that start at the same moment on one fresh directory all succeed.
func TestShardsStartTogether(t *testing.T) {
	spec := clusterSpec(t)
	for round := range 5 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(round))
		const n = 6
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = Run(context.Background(), spec, Options{OutDir: dir, Shard: Shard{i, n}, Workers: 1})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d shard %d/%d: %v", round, i, n, err)
			}
		}
		if rep, err := Merge(context.Background(), dir, MergeOptions{}); err != nil {
			t.Fatalf("round %d: merge: %v %v", round, err, rep.Problems)
		}
		if tmps, _ := filepath.Glob(filepath.Join(dir, ".*")); len(tmps) != 0 {
			t.Fatalf("temporary files left: %v", tmps)
		}
	}
}

func TestMergeReportsMissingShardsAndBadParts(t *testing.T) {
	spec := clusterSpec(t)
	dir := filepath.Join(t.TempDir(), "run")
	const n = 3
	runShard(t, spec, dir, Shard{0, n}, false, false)
	runShard(t, spec, dir, Shard{2, n}, false, false)
	rep, err := Merge(context.Background(), dir, MergeOptions{})
	if !errors.Is(err, ErrIncomplete) || !slices.Equal(rep.MissingShards, []int{1}) || fileExists(filepath.Join(dir, "manifest.json")) {
		t.Fatalf("merge with shard 1 missing: %v, missing %v", err, rep.MissingShards)
	}
	if !strings.Contains(strings.Join(rep.Problems, "\n"), "shard 1/3: not finished") {
		t.Fatalf("problems: %v", rep.Problems)
	}
	// --shards names shards that never started.
	rep, err = Merge(context.Background(), dir, MergeOptions{Shards: 5})
	if !errors.Is(err, ErrIncomplete) || !slices.Equal(rep.MissingShards, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("merge --shards 5: %v, missing %v", err, rep.MissingShards)
	}
	runShard(t, spec, dir, Shard{1, n}, false, false)

	// A flipped byte inside a page keeps the footer: only --sha256 sees it.
	victim := filepath.Join(dir, "clients", ShardParts(NewGrid(spec), Shard{1, n})[0].Name())
	data, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	data[100] ^= 0xff
	if err := os.WriteFile(victim, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err := Merge(context.Background(), dir, MergeOptions{}); err != nil {
		t.Fatalf("merge without --sha256: %v %v", err, rep.Problems)
	}
	rep, err = Merge(context.Background(), dir, MergeOptions{VerifySHA256: true})
	if !errors.Is(err, ErrIncomplete) || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "sha256") || !strings.Contains(rep.Problems[0], filepath.Base(victim)) {
		t.Fatalf("merge --sha256 with a flipped byte: %v %v", err, rep.Problems)
	}
	// A truncated part: the footer does not read.
	victim = filepath.Join(dir, "points", ShardParts(NewGrid(spec), Shard{2, n})[0].Name())
	if err := os.Truncate(victim, 300); err != nil {
		t.Fatal(err)
	}
	rep, err = Merge(context.Background(), dir, MergeOptions{})
	if !errors.Is(err, ErrIncomplete) || len(rep.MissingShards) != 0 || !strings.Contains(strings.Join(rep.Problems, "\n"), "shard 2/3: points/"+filepath.Base(victim)+": unreadable") {
		t.Fatalf("merge with a truncated part: %v %v", err, rep.Problems)
	}
	// --resume repairs both shards (the flipped file differs from the
	// shard's manifest); then the merge succeeds.
	runShard(t, spec, dir, Shard{1, n}, true, false)
	runShard(t, spec, dir, Shard{2, n}, true, false)
	if rep, err := Merge(context.Background(), dir, MergeOptions{VerifySHA256: true}); err != nil {
		t.Fatalf("merge after --force: %v %v", err, rep.Problems)
	}

	if _, err := Merge(context.Background(), t.TempDir(), MergeOptions{}); err == nil || !isInputError(err) {
		t.Fatalf("merge of an empty directory: %v", err)
	}
}

func isInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

func TestShardRefusesOtherSplitAndOtherSpec(t *testing.T) {
	spec := clusterSpec(t)
	dir := filepath.Join(t.TempDir(), "run")
	runShard(t, spec, dir, Shard{0, 2}, false, false)
	_, err := Run(context.Background(), spec, Options{OutDir: dir, Shard: Shard{1, 3}})
	if !errors.Is(err, ErrOutputExists) || !strings.Contains(err.Error(), "another shard split") {
		t.Fatalf("shard 1/3 over a 2-shard run: %v", err)
	}
	other := *spec
	other.Replicates = 2
	_, err = Run(context.Background(), &other, Options{OutDir: dir, Shard: Shard{1, 2}, Force: true})
	if !isInputError(err) || !strings.Contains(err.Error(), "different spec") {
		t.Fatalf("shard of another spec: %v", err)
	}
	// --force replaces a stale split: its manifests go, the merge then names what is missing.
	runShard(t, spec, dir, Shard{1, 3}, false, true)
	rep, err := Merge(context.Background(), dir, MergeOptions{})
	if !errors.Is(err, ErrIncomplete) || rep.Shards != 3 || !slices.Equal(rep.MissingShards, []int{0, 2}) {
		t.Fatalf("merge: %v shards %d missing %v", err, rep.Shards, rep.MissingShards)
	}
}

// An interrupted compaction (new files written, old parts not yet removed)
// is finished by the next merge.
func TestMergeFinishesInterruptedCompaction(t *testing.T) {
	spec := clusterSpec(t)
	dir := filepath.Join(t.TempDir(), "run")
	runShard(t, spec, dir, Shard{0, 2}, false, false)
	runShard(t, spec, dir, Shard{1, 2}, false, false)
	keep := filepath.Join(t.TempDir(), "keep")
	if err := os.CopyFS(keep, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if rep, err := Merge(context.Background(), dir, MergeOptions{Compact: true}); err != nil || rep.Compacted != 1 {
		t.Fatalf("compact: %v %+v", err, rep)
	}
	// Put back a part and a shard manifest, as if killed before the cleanup.
	for _, f := range []string{"points/part-000003.parquet", "manifest.shard-00001-of-00002.json"} {
		data, err := os.ReadFile(filepath.Join(keep, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := Merge(context.Background(), dir, MergeOptions{}); err != nil || !rep.AlreadyMerged {
		t.Fatalf("merge after interrupted cleanup: %v %+v", err, rep)
	}
	if fileExists(filepath.Join(dir, "points/part-000003.parquet")) || fileExists(filepath.Join(dir, "manifest.shard-00001-of-00002.json")) {
		t.Fatal("leftovers of the compaction not removed")
	}
	sameRuns(t, keep, dir)
}

// One shard started twice at once (a requeued task whose first run still
// lives) never leaves a mixed file: each process renames complete files
// (one of them may fail); a --resume afterwards completes the shard.
func TestSameShardTwiceAtOnce(t *testing.T) {
	spec := clusterSpec(t)
	single := filepath.Join(t.TempDir(), "single")
	runShard(t, spec, single, Shard{0, 1}, false, false)
	dir := filepath.Join(t.TempDir(), "run")
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			Run(context.Background(), spec, Options{OutDir: dir, Shard: Shard{0, 2}, Workers: 1, Resume: true})
		})
	}
	wg.Wait()
	runShard(t, spec, dir, Shard{0, 2}, true, false)
	runShard(t, spec, dir, Shard{1, 2}, false, false)
	if rep, err := Merge(context.Background(), dir, MergeOptions{VerifySHA256: true}); err != nil {
		t.Fatalf("merge: %v %v", err, rep.Problems)
	}
	sameRuns(t, single, dir)
}
