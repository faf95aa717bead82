package sweep

import (
	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/model"
)

// Key shards of a scenario sweep: shard I of N keeps the clients whose shard
// key (model.Scenario.ShardKeys: the client's name, or the first name of the
// clients it shares keys with) has ingest.KeyHash I mod N.

// scenarioKeeps reports which of sc's clients key shard ks keeps.
func scenarioKeeps(sc *model.Scenario, ks Shard) []bool {
	p := ingest.KeyPartition{Index: ks.Index, Count: ks.Count}
	keys := sc.ShardKeys()
	keep := make([]bool, len(keys))
	for i, k := range keys {
		keep[i] = p.Keeps([]byte(k))
	}
	return keep
}

// keyShardSpec is spec as key shard ks of a scenario sweep simulates it:
// the scenario's clients of the shard alone (spec itself for a log, or
// outside a key shard).
func keyShardSpec(spec *Spec, ks Shard) *Spec {
	if spec.Traffic != nil || spec.Scenario == nil || ks.Count == 0 {
		return spec
	}
	sub := *spec
	sub.Scenario = spec.Scenario.KeepClients(scenarioKeeps(spec.Scenario, ks))
	return &sub
}

// scenarioKeyRows describes the clients rows of key shard ks of a scenario
// sweep: its clients, in scenario order, with their scenario indices.
func scenarioKeyRows(sc *model.Scenario, ks Shard) *keyRows {
	kr := &keyRows{KeyShard: ks.String(), Hash: "fnv1a64", Scenario: true}
	for i, keep := range scenarioKeeps(sc, ks) {
		if keep {
			c := &sc.Clients[i]
			kr.Rows = append(kr.Rows, keyRow{Name: c.Name, Class: c.Class, Stage: c.Stage})
			kr.Clients = append(kr.Clients, i)
		}
	}
	return kr
}

// placeScenarioRows lays out the merged clients rows of a scenario's key
// shards: the scenario's clients in scenario order, each from the shard
// that holds it. It returns false when the shards do not hold every client
// exactly once.
func placeScenarioRows(ins []*keyShardIn) (*mergedRows, bool) {
	n := 0
	for _, in := range ins {
		n += len(in.kr.Rows)
		if len(in.kr.Clients) != len(in.kr.Rows) {
			return nil, false
		}
	}
	g := &mergedRows{names: make([]string, n), classes: make([]model.Class, n), stages: make([]model.Stage, n)}
	seen := make([]bool, n)
	for _, in := range ins {
		in.rowOf = make([]int32, len(in.kr.Rows))
		for j, r := range in.kr.Rows {
			i := in.kr.Clients[j]
			if i < 0 || i >= n || seen[i] {
				return nil, false
			}
			seen[i] = true
			g.names[i], g.classes[i], g.stages[i] = r.Name, r.Class, r.Stage
			in.rowOf[j] = int32(i)
		}
	}
	return g, true
}
