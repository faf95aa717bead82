package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// keyShardValues are two values of every parameter, valid together.
var keyShardValues = map[string]string{
	"window_s": "[10, 60]", "limit": "[3, 20]", "rate": "[0.2, 1]", "capacity": "[3, 20]",
	"phase_s": "[0, 5]", "burst": "[2, 10]", "delay": "[0, 5]", "service_s": "[0.5, 2]",
	"period_s": "[1, 10]", "counts": "[all, admitted]", "block_s": "[0, 5]",
	"lag_s": "[5, 20]", "requests_per_period": "[3, 20]", "mitigation_timeout_s": "[0, 60]",
	"penalty_box_s": "[60, 120]", "undercount_pct": "[0, 10]",
	// Where an algorithm allows only some values (the managed rules).
	"aws_waf_rate.window_s": "[60, 120]", "aws_waf_rate.limit": "[10, 20]",
	"cloudflare_rule.period_s": "[10, 60]", "fastly_erl.window_s": "[1, 10]", "fail2ban.mitigation_timeout_s": "[5, 60]", "fastly_erl.rate": "[10, 20]",
}

// everyAlgorithmSweep is a sweep: value with an entry per registered
// algorithm, its parameters and optional ones at two values each.
func everyAlgorithmSweep(t *testing.T) string {
	t.Helper()
	return everyAlgorithmSweepWith(t, nil)
}

// everyAlgorithmSweepWith is everyAlgorithmSweep with the values of over
// (keyed as keyShardValues) in place of keyShardValues'.
func everyAlgorithmSweepWith(t *testing.T, over map[string]string) string {
	t.Helper()
	var entries []string
	for _, a := range model.Algorithms {
		if a == model.AllOf || over[a.String()] == "leave out" {
			continue // a combinator of the others (its own tests)
		}
		e := "{algorithm: " + a.String()
		for _, p := range append(slices.Clone(a.Params()), a.OptionalParams()...) {
			if prm, _ := model.LookupParam(p); prm.Role == model.Deployment || p == "sync_ms" {
				continue // one key per client, one node: the run's default
			}
			v, ok := over[a.String()+"."+p]
			if !ok {
				v, ok = keyShardValues[a.String()+"."+p]
			}
			if !ok {
				v, ok = keyShardValues[p]
			}
			if !ok {
				t.Fatalf("%s: no test values for parameter %s", a, p)
			}
			e += ", " + p + ": " + v
		}
		entries = append(entries, e+"}")
	}
	return "sweep=[" + strings.Join(entries, ", ") + "]"
}

// writeZipfLog writes a Combined log of n requests over keys addresses
// with Zipf-distributed rates, some crawlers and 404s, over an hour.
func writeZipfLog(t *testing.T, path string, n, keys int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(rng, 1.2, 1, uint64(keys-1))
	var b bytes.Buffer
	for i := range n {
		k := z.Uint64()
		s := i * 3600 / n
		ua, status := "Mozilla/5.0", 200
		if k%7 == 3 {
			ua = "Googlebot/2.1"
		}
		if rng.IntN(20) == 0 {
			status = 404
		}
		fmt.Fprintf(&b, "10.%d.%d.%d - - [01/Jan/2026:%02d:%02d:%02d +0000] \"GET /p%d HTTP/1.1\" %d 10 \"-\" \"%s\"\n",
			k/65536, k/256%256, k%256, s/3600, s/60%60, s%60, rng.IntN(5), status, ua)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runKeySharded runs spec as n key shards (in a scrambled order) into dir
// and merges them.
func runKeySharded(t *testing.T, spec *Spec, dir string, n int) *MergeReport {
	t.Helper()
	order := rand.New(rand.NewPCG(uint64(n), 7)).Perm(n)
	for _, i := range order {
		mustRun(t, spec, Options{OutDir: dir, Shard: Shard{i, n}, ShardBy: ShardByKey, Workers: 1 + i%3})
	}
	rep, err := Merge(context.Background(), dir, MergeOptions{})
	if err != nil {
		t.Fatalf("merge of %d key shards: %v (%v)", n, err, rep.Problems)
	}
	return rep
}

// sameRunFiles fails unless every points and clients part of want is in got
// with the same bytes, and got has no other.
func sameRunFiles(t *testing.T, want, got string) {
	t.Helper()
	for _, table := range []string{"points", "clients"} {
		names, _ := filepath.Glob(filepath.Join(want, table, "*.parquet"))
		others, _ := filepath.Glob(filepath.Join(got, table, "*.parquet"))
		if len(names) == 0 || len(names) != len(others) {
			t.Fatalf("%s: %d files in the whole run, %d merged", table, len(names), len(others))
		}
		for _, f := range names {
			a, _ := os.ReadFile(f)
			b, err := os.ReadFile(filepath.Join(got, table, filepath.Base(f)))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("%s/%s: merged key shards differ from the whole run (%v)", table, filepath.Base(f), err)
			}
		}
	}
}

// checkKeyShards runs spec whole and as 1, 2, 3 and 8 key shards merged,
// compares them with same and checks the merged manifest and that the
// merged run opens.
func checkKeyShards(t *testing.T, spec *Spec, same func(t *testing.T, want, got string)) {
	t.Helper()
	whole := filepath.Join(t.TempDir(), "whole")
	res := mustRun(t, spec, Options{OutDir: whole})
	for _, n := range []int{1, 2, 3, 8} {
		out := filepath.Join(t.TempDir(), fmt.Sprint(n))
		rep := runKeySharded(t, spec, out, n)
		same(t, whole, out)
		if rep.Manifest.FalseCutSum != res.FalseCutSum || rep.Manifest.KeyShards != n {
			t.Errorf("%d key shards: Σ false cut %d, whole %d; key_shards %d", n, rep.Manifest.FalseCutSum, res.FalseCutSum, rep.Manifest.KeyShards)
		}
		if _, err := OpenRun(out, OpenOptions{}); err != nil {
			t.Errorf("%d key shards: the merged run does not open: %v", n, err)
		}
	}
}

// A key shard holds only its keys: their hash mod N is its index, and every
// key is in exactly one shard.
func TestKeyShardKeepsItsKeys(t *testing.T) {
	dir := t.TempDir()
	writeZipfLog(t, filepath.Join(dir, "z.log"), 3000, 300, 4)
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(p, []byte("name: z\ntraffic: {log: z.log, format: combined, top_keys: 100000}\nsweep:\n  - {algorithm: fixed_window, window_s: 60, limit: 10}\n"), 0o644)
	spec, err := LoadSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	seen := map[string]int{}
	const n = 3
	for i := range n {
		mustRun(t, spec, Options{OutDir: out, Shard: Shard{i, n}, ShardBy: ShardByKey})
		kr, err := readKeyRows(KeyShardDir(out, Shard{i, n}))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range kr.Rows {
			if !r.Key {
				t.Fatalf("every key a row: a row %q that is not a key", r.Name)
			}
			if h := fnv1a(r.Name) % n; h != uint64(i) {
				t.Errorf("key %s (hash mod %d = %d) in shard %d", r.Name, n, h, i)
			}
			seen[r.Name]++
		}
	}
	whole := mustRun(t, spec, Options{OutDir: t.TempDir()})
	rows, err := ReadClients(context.Background(), whole.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if seen[r.Client] != 1 {
			t.Errorf("key %s is in %d shards", r.Client, seen[r.Client])
		}
	}
}

// fnv1a is FNV-1a 64 written out from its definition (the oracle of
// ingest.KeyHash).
func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// Policies that need every key at once, reacting scenarios, overlays and random
// spreads are refused under key sharding, naming what.
func TestKeyShardRefuses(t *testing.T) {
	dir := t.TempDir()
	writeZipfLog(t, filepath.Join(dir, "z.log"), 100, 10, 5)
	write := func(body string) string {
		p := filepath.Join(dir, fmt.Sprintf("s%d.yaml", len(body)))
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	tr := "traffic: {log: z.log, format: combined}\n"
	for _, c := range []struct{ spec, want string }{
		{"name: g\n" + tr + "sweep:\n  - {algorithm: fixed_window, window_s: 60, limit: 10, key: [client, global]}\n", "sweep[0].key: global needs every key at once"},
		{"name: n\n" + tr + "sweep:\n  - {algorithm: token_bucket, rate: 1, capacity: 5, nodes: [1, 3], state: shared}\n", "sweep[0].nodes"},
		{"name: s\n" + tr + "sweep:\n  - {algorithm: token_bucket, rate: 1, capacity: 5, state: shared}\n", "sweep[0].state: shared"},
		{"name: r\ntraffic: {log: z.log, format: combined, spread: random}\nsweep:\n  - {algorithm: fixed_window, window_s: 60, limit: 10}\n", "spread random"},
		{"name: sc\nscenario: {name: x, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]], on_reject: {retry: immediate, max_retries: 2}}]}\nsweep:\n  - {algorithm: fixed_window, window_s: 60, limit: 10}\n", "clients that react"},
		{"name: sg\nscenario: {name: x, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\nsweep:\n  - {algorithm: fixed_window, window_s: 60, limit: 10, key: [client, global]}\n", "sweep[0].key: global needs every key at once"},
		{"name: sd\nscenario: {name: x, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\nsweep:\n  - {algorithm: nginx, rate: 1, burst: [0, 5]}\n", "sweep[0] (nginx) delays requests it admits"},
		{"name: sa\nscenario: {name: x, duration_s: 10, clients: [{name: a, class: legit, segments: [[0, 10, 1]]}]}\nsweep:\n  - {all_of: [{algorithm: fixed_window, window_s: 60, limit: 10}, {algorithm: fixed_window, window_s: 60, limit: 20, key: global}], rejected_counts: none}\n", "sweep[0].all_of[1].key: global needs every key at once"},
	} {
		spec, err := LoadSpec(write(c.spec))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), spec, Options{OutDir: t.TempDir(), Shard: Shard{0, 2}, ShardBy: ShardByKey})
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an input error with %q", c.spec, err, c.want)
		}
		// In the spec itself: an error naming the file and shard_by.
		_, err = LoadSpec(write(c.spec + "shard_by: key\n"))
		if err == nil || !strings.Contains(err.Error(), "shard_by") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("shard_by: key in %q: got %v", c.spec, err)
		}
	}
}

// A merge with a key shard missing names it and writes nothing.
func TestKeyShardMergeReportsMissing(t *testing.T) {
	dir := t.TempDir()
	writeZipfLog(t, filepath.Join(dir, "z.log"), 500, 50, 6)
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(p, []byte("name: z\ntraffic: {log: z.log, format: combined}\nshard_by: key\nsweep:\n  - {algorithm: fixed_window, window_s: 60, limit: [5, 10]}\n"), 0o644)
	spec, err := LoadSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	if spec.ShardBy != ShardByKey {
		t.Fatalf("shard_by: key read as %v", spec.ShardBy)
	}
	out := t.TempDir()
	for _, i := range []int{0, 2} {
		mustRun(t, spec, Options{OutDir: out, Shard: Shard{i, 3}, ShardBy: ShardByKey})
	}
	rep, err := Merge(context.Background(), out, MergeOptions{})
	if !errors.Is(err, ErrIncomplete) || !slices.Equal(rep.MissingShards, []int{1}) {
		t.Fatalf("merge with shard 1 of 3 missing: %v, missing %v", err, rep.MissingShards)
	}
	if fileExists(filepath.Join(out, "manifest.json")) || fileExists(filepath.Join(out, "points")) {
		t.Error("an incomplete merge wrote files")
	}
	mustRun(t, spec, Options{OutDir: out, Shard: Shard{1, 3}, ShardBy: ShardByKey})
	if _, err := Merge(context.Background(), out, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	// Resumed: a finished key shard is kept whole; the merge is then
	// stale (the run is incomplete until merged again).
	res := mustRun(t, spec, Options{OutDir: out, Shard: Shard{1, 3}, ShardBy: ShardByKey, Resume: true})
	if res.PartsSkipped != res.Parts {
		t.Errorf("resume recomputed %d of %d parts", res.Parts-res.PartsSkipped, res.Parts)
	}
	if fileExists(filepath.Join(out, "manifest.json")) {
		t.Error("a key shard ran again and the merged manifest.json stayed")
	}
	if _, err := Merge(context.Background(), out, MergeOptions{}); err != nil || !RunComplete(out) {
		t.Fatalf("merge again: %v", err)
	}
}

// A log whose estimate exceeds --max-memory is replayed in key passes that
// each fit, and the result is the in-memory run's, byte for byte; an
// interrupted spilled run resumes.
func TestSpilledReplayEqualsInMemory(t *testing.T) {
	dir := t.TempDir()
	writeZipfLog(t, filepath.Join(dir, "z.log"), 200000, 5000, 8)
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(p, []byte("name: z\ntraffic: {log: z.log, format: combined, top_keys: 15}\nsweep:\n"+
		"  - {algorithm: fixed_window, window_s: 60, limit: [5, 10, 40]}\n  - {algorithm: token_bucket, rate: [0.1, 1], capacity: [3, 30]}\n"), 0o644)
	spec, err := LoadSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	res := mustRun(t, spec, Options{OutDir: whole, MaxMemory: -1, Workers: 2})
	one := EstimateRun(spec, Shard{0, 1}, 2, 0).MemoryBytes
	four := estimateRun(spec, Shard{0, 1}, 4, 2, 0).MemoryBytes
	budget := four + (one-four)/8 // more than 4 passes need, less than 2 do
	if n := SpillPasses(spec, Shard{0, 1}, 2, budget); n != 4 {
		t.Fatalf("passes for a budget of %d (one pass %d, four %d): %d, want 4", budget, one, four, n)
	}
	out := filepath.Join(t.TempDir(), "spilled")
	spilled := mustRun(t, spec, Options{OutDir: out, MaxMemory: budget, Workers: 2})
	if spilled.Passes != 4 || spilled.FalseCutSum != res.FalseCutSum || spilled.Points != res.Points {
		t.Errorf("spilled: %d passes, Σ false cut %d (whole %d), %d points", spilled.Passes, spilled.FalseCutSum, res.FalseCutSum, spilled.Points)
	}
	sameRunFiles(t, whole, out)
	if fileExists(filepath.Join(out, KeyShardsDir)) {
		t.Error("the passes were not removed")
	}
	if again := mustRun(t, spec, Options{OutDir: out, MaxMemory: budget, Workers: 2, Resume: true}); again.PartsSkipped != again.Parts || again.FalseCutSum != res.FalseCutSum {
		t.Errorf("resume of a complete spilled run: %d of %d parts kept, Σ false cut %d", again.PartsSkipped, again.Parts, again.FalseCutSum)
	}
	sameRunFiles(t, whole, out)
	// Interrupted after two passes: --resume finishes the rest.
	out2 := filepath.Join(t.TempDir(), "resumed")
	for i := range 2 {
		mustRun(t, spec, Options{OutDir: out2, Shard: Shard{i, 4}, ShardBy: ShardByKey})
	}
	r := mustRun(t, spec, Options{OutDir: out2, MaxMemory: budget, Resume: true})
	if r.Passes != 4 {
		t.Errorf("resumed: %d passes", r.Passes)
	}
	sameRunFiles(t, whole, out2)
	// Without room even for many passes, it is refused as before.
	if _, err := Run(context.Background(), spec, Options{OutDir: t.TempDir(), MaxMemory: 1 << 20}); err == nil || !strings.Contains(err.Error(), "--max-memory") {
		t.Errorf("1 MiB: %v", err)
	}
}

// A key shard that holds no key (more shards than keys) writes parts
// without clients rows; the merge places none of its rows, and --resume
// keeps its parts.
func TestEmptyKeyShard(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(filepath.Join(dir, "one.log"), []byte("1.2.3.4 - - [01/Jan/2026:00:00:01 +0000] \"GET / HTTP/1.1\" 200 1\n"), 0o644)
	os.WriteFile(p, []byte("name: one\ntraffic: {log: one.log, format: combined}\nsweep:\n  - {algorithm: fixed_window, window_s: 60, limit: [1, 2]}\n"), 0o644)
	spec, err := LoadSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	empty := int(fnv1a("1.2.3.4")%2) ^ 1
	out := t.TempDir()
	mustRun(t, spec, Options{OutDir: out, Shard: Shard{empty, 2}, ShardBy: ShardByKey})
	res := mustRun(t, spec, Options{OutDir: out, Shard: Shard{empty, 2}, ShardBy: ShardByKey, Resume: true})
	if res.PartsSkipped != res.Parts {
		t.Errorf("resume of the empty key shard recomputed %d of %d parts", res.Parts-res.PartsSkipped, res.Parts)
	}
	mustRun(t, spec, Options{OutDir: out, Shard: Shard{1 - empty, 2}, ShardBy: ShardByKey})
	if _, err := Merge(context.Background(), out, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	whole := t.TempDir()
	mustRun(t, spec, Options{OutDir: whole})
	sameRunFiles(t, whole, out)
}
