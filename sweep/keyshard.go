package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// ShardBy is how a run is split into shards.
type ShardBy uint8

const (
	// ShardByGrid gives each shard some parts of the grid over the whole
	// workload (the default).
	ShardByGrid ShardBy = iota
	// ShardByKey gives each shard the whole grid over some of a log's keys:
	// shard I of N keeps the keys whose ingest.KeyHash is I mod N, and
	// 'ratesweep merge' adds the shards' results up.
	ShardByKey
)

var shardByNames = []string{"grid", "key"}

func (b ShardBy) String() string {
	if int(b) < len(shardByNames) {
		return shardByNames[b]
	}
	return fmt.Sprintf("ShardBy(%d)", uint8(b))
}

// ParseShardBy parses grid or key.
func ParseShardBy(s string) (ShardBy, error) {
	for i, n := range shardByNames {
		if s == n {
			return ShardBy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown shard_by %q (known: %s)", s, strings.Join(shardByNames, ", "))
}

// KeyShardsDir is the directory of a run directory that holds its key
// shards, one run directory each (KeyShardDir).
const KeyShardsDir = "keyshards"

// KeyRowsName is the file of a key shard's run directory that describes its
// clients rows, for the merge: which key each row holds, and its rank.
const KeyRowsName = "keyrows.json"

// MetaKeyShard marks the parts of a key shard: "I/N".
const MetaKeyShard = "ratesweep.key_shard"

// KeyShardDir is the run directory of key shard s of the run in dir.
func KeyShardDir(dir string, s Shard) string {
	return filepath.Join(dir, KeyShardsDir, fmt.Sprintf("shard-%05d-of-%05d", s.Index, s.Count))
}

// CheckKeySharding refuses a spec whose results do not add up over key
// shards: policies that see every key at once (a log: key other than the
// client, several nodes, shared state; a scenario: a global key, several
// nodes, shared state), a scenario whose clients react, an overlay (its
// keys are placed by rank over the whole log) and spread: random (one
// random stream visits every key in turn).
func CheckKeySharding(spec *Spec) error {
	const how = "run it without --shard-by key (shard the grid instead: --shard I/N)"
	if spec.Traffic == nil && spec.Scenario != nil && spec.Scenario.Reacts() {
		return inputErrorf("shard_by key: scenario %q has clients that react (retries, throttling): retries and their latencies pool every key, which a key shard does not see (their delays are means and percentiles over every request): %s", spec.Scenario.Name, how)
	}
	for i, en := range spec.Entries {
		for _, ax := range en.Axes {
			for _, v := range ax.Values {
				p := en.newPolicy() // with an all_of's components, whose keys count too
				p.Set(ax.Param, v)
				// A scenario's clients that share keys stay together
				// (model.Scenario.ShardKeys); a log's keys are its clients.
				if (spec.Traffic == nil && p.NeedsEveryClient()) || (spec.Traffic != nil && p.Distributed()) {
					prm, _ := model.LookupParam(ax.Param)
					val := prm.ParamName(v)
					if val == "" {
						val = fmt.Sprint(v)
					}
					return inputErrorf("shard_by key: sweep[%d].%s: %s needs every key at once (a global key, several nodes or shared state), which a key shard does not hold: %s", i, ax.Param, val, how)
				}
			}
		}
	}
	if spec.Traffic == nil {
		for i := range spec.Entries { // a scenario's delays are means over every request
			if spec.Entries[i].mayShape() {
				return inputErrorf("shard_by key: sweep[%d] (%s) delays requests it admits: the delays' mean and percentiles pool every request, which key shards cannot add up: %s", i, spec.Entries[i].Algorithm, how)
			}
		}
		return nil
	}
	if spec.Traffic.Reacts() {
		return inputErrorf("shard_by key: the log's clients react (traffic.reactions): retries and their latencies pool every key, which a key shard does not see (retries run to the end of the whole log, latency percentiles pool every key): %s", how)
	}
	if spec.Traffic.Overlay != nil {
		return inputErrorf("shard_by key: the overlay places its keys by rank over the whole log, which a key shard does not see: %s", how)
	}
	if spec.Traffic.Spread == ingest.SpreadRandom {
		return inputErrorf("shard_by key: traffic.spread random draws one random stream over every key in turn, so a key's times depend on the other keys: use spread: even or none, or %s", how)
	}
	return nil
}

// runKeyShard runs key shard opts.Shard of spec into its directory under
// opts.OutDir (KeyShardDir): the whole grid over the shard's keys.
func runKeyShard(ctx context.Context, spec *Spec, opts Options) (*Result, error) {
	if err := CheckKeySharding(spec); err != nil {
		return nil, err
	}
	ks := opts.Shard
	if ks.Count == 0 {
		ks = Shard{0, 1}
	}
	if err := CheckShardCount(ks.Count); err != nil {
		return nil, err
	}
	sub := *spec
	if spec.Traffic != nil {
		tr := *spec.Traffic
		tr.Options.Partition = ingest.KeyPartition{Index: ks.Index, Count: ks.Count}
		sub.Traffic = &tr
	}
	o := opts
	o.ShardBy, o.Shard, o.keyShard = ShardByGrid, Shard{0, 1}, ks
	if !opts.NoOutput {
		if opts.OutDir == "" {
			return nil, inputErrorf("no output directory")
		}
		if err := refuseForeign(opts.OutDir); err != nil {
			return nil, err
		}
		o.OutDir = KeyShardDir(opts.OutDir, ks)
		if err := os.MkdirAll(filepath.Dir(o.OutDir), 0o755); err != nil {
			return nil, fmt.Errorf("cannot create the output directory: %w", err)
		}
		// A merge of the key shards is stale once one of them runs again.
		merged := filepath.Join(opts.OutDir, "manifest.json")
		if m, err := loadManifest(merged); err == nil && m.KeyShards > 0 {
			if err := os.Remove(merged); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
	}
	res, err := Run(ctx, &sub, o)
	if res != nil {
		res.Dir = opts.OutDir
	}
	return res, err
}

// keyRows describes a key shard's clients rows (KeyRowsName): enough to
// place them among every shard's rows as one run over the whole log would.
type keyRows struct {
	KeyShard string `json:"key_shard"`
	Hash     string `json:"hash"`   // the key hash: fnv1a64 of the key's bytes
	Labels   bool   `json:"labels"` // one row per label (several logs), not top keys
	// StartUnix and DurationS are every log's time span (the same in
	// every shard: each reads the whole log).
	StartUnix []int64  `json:"start_unix"`
	DurationS []int    `json:"duration_s"`
	Rows      []keyRow `json:"rows"`
	// Scenario says the rows are a scenario's clients, Clients their
	// indices in the scenario (scenarioKeyRows).
	Scenario bool  `json:"scenario,omitempty"`
	Clients  []int `json:"clients,omitempty"`
}

// keyRow is one clients row of a key shard.
type keyRow struct {
	Name  string      `json:"name"`
	Class model.Class `json:"class"`
	Stage model.Stage `json:"stage"`
	// Key says the row is one top key's (its name is the key); otherwise
	// it groups the keys of its label beyond the top keys.
	Key bool `json:"key,omitempty"`
	// Requests and First rank the row's key among all keys (requests
	// descending, then name): for a key row its own, for an "other keys"
	// row its first key's (the row's place among the other rows).
	Requests int64  `json:"requests"`
	First    string `json:"first,omitempty"`
}

// keyRowsOf describes the clients rows of a key shard's source.
func keyRowsOf(src *trafficSource, ks Shard) *keyRows {
	kr := &keyRows{KeyShard: ks.String(), Hash: "fnv1a64", Labels: len(src.trs) > 1}
	for _, tr := range src.trs {
		kr.StartUnix = append(kr.StartUnix, tr.StartUnix)
		kr.DurationS = append(kr.DurationS, tr.DurationS)
	}
	g := src.grouping
	if kr.Labels {
		for i := range g.Names {
			kr.Rows = append(kr.Rows, keyRow{Name: g.Names[i], Class: g.Class[i], Stage: g.Stage[i]})
		}
		return kr
	}
	keys := src.tr.Keys
	top := src.cfg.TopKeys
	if top < 0 || top > len(keys) {
		top = len(keys)
	}
	for i := range top {
		k := &keys[i]
		kr.Rows = append(kr.Rows, keyRow{Name: g.Names[i], Class: g.Class[i], Stage: g.Stage[i], Key: true, Requests: k.Requests, First: k.Name})
	}
	for r := top; r < len(g.Names); r++ {
		row := keyRow{Name: g.Names[r], Class: g.Class[r], Stage: g.Stage[r]}
		for i := top; i < len(keys); i++ {
			if keys[i].Stage == g.Stage[r] {
				row.Requests, row.First = keys[i].Requests, keys[i].Name
				break
			}
		}
		kr.Rows = append(kr.Rows, row)
	}
	return kr
}

// writeKeyRows writes a key shard's keyrows.json.
func writeKeyRows(dir string, kr *keyRows) error {
	data, err := json.MarshalIndent(kr, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, KeyRowsName), append(data, '\n'))
}

func readKeyRows(dir string) (*keyRows, error) {
	data, err := readRegular(filepath.Join(dir, KeyRowsName), maxManifestBytes)
	if err != nil {
		return nil, err
	}
	var kr keyRows
	if err := json.Unmarshal(data, &kr); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, KeyRowsName), err)
	}
	return &kr, nil
}

var errNoKeyShards = errors.New("no key shards")

// decodeShardBy reads a spec's shard_by (nil: grid) into s.
func decodeShardBy(n *yaml.Node, s *Spec) error {
	if n == nil {
		return nil
	}
	v, err := yamlx.Str(n, "shard_by")
	if err != nil {
		return err
	}
	by, err := ParseShardBy(v)
	if err != nil {
		return yamlx.Errorf(n, "shard_by", "%v", err)
	}
	s.ShardBy = by
	if by == ShardByKey {
		if err := CheckKeySharding(s); err != nil {
			return yamlx.Errorf(n, "shard_by", "%s", strings.TrimPrefix(err.Error(), "shard_by key: "))
		}
	}
	return nil
}

// keyShareOf is a key shard's share of a log's requests: keys are hashed
// evenly over the shards, so a shard holds about 1/n of them (a key's
// requests all go to one shard: one heavy key weighs on its shard).
func keyShareOf(reqs float64, how string, n int) (float64, string) {
	return reqs / float64(n), fmt.Sprintf("1/%d of the keys (a key shard) of %s", n, how)
}

// EstimateShard is EstimateRun of shard when shards split by: for key
// shards, the whole grid over about 1/shard.Count of the log's keys, or
// over the scenario's clients of the shard.
func EstimateShard(spec *Spec, shard Shard, by ShardBy, workers int, maxMemory int64) Estimate {
	if by == ShardByKey {
		return estimateRun(keyShardSpec(spec, shard), Shard{0, 1}, max(1, shard.Count), workers, maxMemory)
	}
	return EstimateRun(spec, shard, workers, maxMemory)
}
