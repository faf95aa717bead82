package sweep

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// The compatibility matrix (docs/compatibility.md): what a policy adds to a
// bare limiter, or how it combines limiters (a Feature), on each kind of
// traffic (a TrafficKind). Each cell is exact — the run decides every
// request as the policy says, tested against the reference interpreter
// (model/reference) — or refused when the spec is read, with the reason
// the cell gives. Nothing is accepted and ignored. The table in the docs is
// CompatMarkdown's; a test fails when they differ, and another runs a spec
// of every cell through the spec reader.

// Feature is what an entry adds to a bare limiter, or how it combines them.
type Feature uint8

const (
	FeatureCountIf    Feature = iota // count_if: only matching responses count
	FeatureCost                      // the traffic's requests carry costs
	FeaturePenaltyBox                // block_s, block_levels
	FeatureAllOf                     // all_of: several limits at once
	FeatureReactions                 // clients that react: on_reject, throttle
	numFeatures
)

var featureNames = [numFeatures]string{"count_if", "cost", "block_s / block_levels", "all_of", "on_reject / throttle"}

func (f Feature) String() string { return featureNames[f] }

// TrafficKind is a kind of traffic, or of run, a policy is simulated on.
type TrafficKind uint8

const (
	KindScenario  TrafficKind = iota // a scenario, each client on a key of its own
	KindKeyed                        // a scenario whose clients have several keys or share them (addresses, accounts, pools, orgs)
	KindLog                          // a replayed access log
	KindOverlay                      // synthetic clients placed on a log (overlay:)
	KindKeyShards                    // a run split by key (shard_by: key, and a spilled log's passes)
	KindNodes                        // several nodes, or shared state updated at once (nodes, lb, state)
	KindLagged                       // shared state that lags (sync_ms > 0)
	numKinds
)

var kindNames = [numKinds]string{"scenario", "keyed scenario", "log replay", "overlay", "key shards, spill", "nodes, shared state", "lagged state (sync_ms)"}

func (k TrafficKind) String() string { return kindNames[k] }

// Cell is one feature on one kind of traffic.
type Cell struct {
	// Exact says the combination is simulated exactly; otherwise the spec
	// reader refuses it with Why.
	Exact bool
	// Why is a refused cell's reason; Note says what an exact cell holds
	// to ("" for nothing beyond the docs of each part).
	Why, Note string
}

func exact(note string) Cell  { return Cell{Exact: true, Note: note} }
func refused(why string) Cell { return Cell{Why: why} }

// compat is the matrix, by feature and kind.
var compat = [numFeatures][numKinds]Cell{
	FeatureCountIf: {
		KindScenario:  exact("a client's fail_share of its requests answer fail_status"),
		KindKeyed:     exact("not with key both"),
		KindLog:       exact("the logged status"),
		KindOverlay:   refused("an overlay's synthetic requests have no logged response to count by"),
		KindKeyShards: exact(""),
		KindNodes:     exact("not with key both"),
		KindLagged:    refused("costs and count_if are not modelled on lagged shared state"),
	},
	FeatureCost: {
		KindScenario:  exact("a client's cost"),
		KindKeyed:     exact("not with key both"),
		KindLog:       exact("traffic.cost: rules or response bytes"),
		KindOverlay:   refused("an overlay's synthetic requests have no cost"),
		KindKeyShards: exact(""),
		KindNodes:     exact("not with key both"),
		KindLagged:    refused("costs and count_if are not modelled on lagged shared state"),
	},
	FeaturePenaltyBox: {
		KindScenario:  exact(""),
		KindKeyed:     exact("not with key both"),
		KindLog:       exact(""),
		KindOverlay:   exact(""),
		KindKeyShards: exact(""),
		KindNodes:     exact("not with key both"),
		KindLagged:    refused("a penalty box cannot run on lagged shared state"),
	},
	FeatureAllOf: {
		KindScenario:  exact("each component on its own key"),
		KindKeyed:     exact("each component on its own key"),
		KindLog:       exact("every component on the log's key"),
		KindOverlay:   exact("every component on the log's key"),
		KindKeyShards: exact("components on per-key limits (no global key)"),
		KindNodes:     refused("components of a stacked limit run on one node with local state"),
		KindLagged:    refused("components of a stacked limit run on one node with local state"),
	},
	FeatureReactions: {
		KindScenario:  exact("a retry repeats its request: its cost, its response"),
		KindKeyed:     refused("clients that react are simulated with one key per client"),
		KindLog:       exact("a retry repeats its request: its cost, its logged response"),
		KindOverlay:   exact("an overlay client that reacts has a key of its own"),
		KindKeyShards: refused("retries and their latencies pool every key, which a key shard does not see"),
		KindNodes:     refused("clients that react are simulated on one node"),
		KindLagged:    refused("clients that react are simulated on one node"),
	},
}

// Compat returns the cell of feature f on traffic kind k.
func Compat(f Feature, k TrafficKind) Cell { return compat[f][k] }

// specKinds returns the kinds of traffic entry e of spec s runs on.
func (s *Spec) specKinds(e *Entry) []TrafficKind {
	var ks []TrafficKind
	if s.Traffic != nil {
		ks = append(ks, KindLog)
		if s.Traffic.Overlay != nil {
			ks = append(ks, KindOverlay)
		}
	} else {
		ks = append(ks, KindScenario)
		if s.Scenario.Keyed() {
			ks = append(ks, KindKeyed)
		}
	}
	if s.ShardBy == ShardByKey {
		ks = append(ks, KindKeyShards)
	}
	nodes, lagged := e.deployments()
	if nodes != "" {
		ks = append(ks, KindNodes)
	}
	if lagged != "" {
		ks = append(ks, KindLagged)
	}
	return ks
}

// deployments returns the axis of e (or of a component) by which some
// point runs on several nodes or shared state, and the one by which that
// state lags ("" for none).
func (e *Entry) deployments() (nodes, lagged string) {
	for _, ax := range e.Axes {
		for _, v := range ax.Values {
			switch paramName(ax.Param) {
			case "nodes":
				if v > 1 && nodes == "" {
					nodes = ax.Param
				}
			case "state":
				if model.State(v) != model.Local && nodes == "" {
					nodes = ax.Param
				}
			case "lb":
				if model.LB(v) != model.RoundRobin && nodes == "" {
					nodes = ax.Param
				}
			case "sync_ms":
				if v > 0 && lagged == "" {
					lagged = ax.Param
				}
			}
		}
	}
	return nodes, lagged
}

// paramName is an axis' parameter name without its all_of[i]. prefix.
func paramName(axis string) string {
	if _, name, ok := model.ComponentParam(axis); ok {
		return name
	}
	return axis
}

// features returns the features entry e of spec s uses, each with the
// spec path that names it.
func (s *Spec) features(i int) (fs []Feature, paths []string) {
	e := &s.Entries[i]
	at := fmt.Sprintf("sweep[%d]", i)
	if e.countsIf() {
		fs, paths = append(fs, FeatureCountIf), append(paths, at+".count_if")
	}
	if s.Costed() {
		p := "scenario.clients.cost"
		if s.Traffic != nil {
			p = "traffic.cost"
		}
		fs, paths = append(fs, FeatureCost), append(paths, p)
	}
	if e.blocks() {
		fs, paths = append(fs, FeaturePenaltyBox), append(paths, at+".block_s")
	}
	if e.Components != nil {
		fs, paths = append(fs, FeatureAllOf), append(paths, at+".all_of")
	}
	if specReacts(s) {
		p := "scenario.clients.on_reject"
		if s.Traffic != nil {
			p = "traffic.reactions"
		}
		fs, paths = append(fs, FeatureReactions), append(paths, p)
	}
	return fs, paths
}

// blocks reports whether some point of e, or of a component, has a
// penalty box.
func (e *Entry) blocks() bool {
	for _, ax := range e.Axes {
		if paramName(ax.Param) == "block_s" {
			for _, v := range ax.Values {
				if v > 0 {
					return true
				}
			}
		}
	}
	return false
}

// checkCompat refuses an entry that uses a feature on a kind of traffic
// the matrix refuses, naming the feature's field and the reason.
func checkCompat(s *Spec, sw *yaml.Node) error {
	items, _ := yamlx.Seq(sw, "sweep")
	for i := range s.Entries {
		var n *yaml.Node
		if i < len(items) {
			n = items[i]
		}
		if err := s.checkLogDeployment(i, n); err != nil {
			return err
		}
		fs, paths := s.features(i)
		nodes, lagged := s.Entries[i].deployments()
		for _, k := range s.specKinds(&s.Entries[i]) {
			for j, f := range fs {
				c := compat[f][k]
				if c.Exact {
					continue
				}
				path := paths[j]
				switch k { // the deployment is the entry's choice: name its field
				case KindNodes:
					path = fmt.Sprintf("sweep[%d].%s", i, nodes)
				case KindLagged:
					path = fmt.Sprintf("sweep[%d].%s", i, lagged)
				}
				return yamlx.Errorf(n, path, "%s does not combine with %s: %s (docs/compatibility.md)", f, k, c.Why)
			}
		}
	}
	return nil
}

// checkLogDeployment refuses an entry of a log replay some point of which
// runs on several nodes with local state, or on lagged shared state: a
// log is replayed key by key, so no balancer spreads its requests in their
// order over every key (shared state updated at once is one limiter per
// key, as on one node, and runs).
func (s *Spec) checkLogDeployment(i int, n *yaml.Node) error {
	if s.Traffic == nil {
		return nil
	}
	e := &s.Entries[i]
	local := true // some point has local state: no state axis, or local among its values
	var nodes, lagged string
	for _, ax := range e.Axes {
		switch paramName(ax.Param) {
		case "state":
			local = slices.Contains(ax.Values, float64(model.Local))
		case "nodes":
			if slices.Max(ax.Values) > 1 {
				nodes = ax.Param
			}
		case "sync_ms":
			if slices.Max(ax.Values) > 0 {
				lagged = ax.Param
			}
		}
	}
	const why = "a replayed log is decided key by key, so no balancer spreads its requests over nodes in their order; run the nodes on a scenario, or use state: shared with sync_ms: 0 (docs/compatibility.md)"
	switch {
	case nodes != "" && local:
		return yamlx.Errorf(n, fmt.Sprintf("sweep[%d].%s", i, nodes), "several nodes with local state on a log replay: %s", why)
	case lagged != "":
		return yamlx.Errorf(n, fmt.Sprintf("sweep[%d].%s", i, lagged), "lagged shared state on a log replay: %s", why)
	}
	return nil
}

// CompatMarkdown is the matrix as the Markdown table docs/compatibility.md
// holds: a feature a row, a kind of traffic a column.
func CompatMarkdown() string {
	var b strings.Builder
	b.WriteString("| |")
	for k := range numKinds {
		fmt.Fprintf(&b, " %s |", TrafficKind(k))
	}
	b.WriteString("\n|---|")
	for range numKinds {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for f := range numFeatures {
		fmt.Fprintf(&b, "| `%s` |", strings.ReplaceAll(Feature(f).String(), " / ", "` / `"))
		for k := range numKinds {
			c := compat[f][k]
			switch {
			case !c.Exact:
				fmt.Fprintf(&b, " refused: %s |", c.Why)
			case c.Note != "":
				fmt.Fprintf(&b, " exact (%s) |", c.Note)
			default:
				b.WriteString(" exact |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// AbilitiesMarkdown is the table of what each registered algorithm can do
// with the modifiers that need an ability of its decider: spend costs, run
// on lagged shared state, decide on two keys at once. It is made by
// validating a policy of each algorithm that asks for the ability.
func AbilitiesMarkdown() string {
	var b strings.Builder
	b.WriteString("| algorithm | `cost` | `sync_ms` (lagged shared state) | `key: both` |\n|---|---|---|---|\n")
	for _, a := range model.Algorithms {
		if a == model.AllOf {
			continue
		}
		p := model.ExamplePolicy(a)
		cost, lag, both := p, p, p
		cost.Costed = true
		lag.Nodes, lag.State, lag.SyncMs = 2, model.Shared, 10
		both.Key = model.KeyBoth
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", a, ability(a, cost), ability(a, lag), ability(a, both))
	}
	return b.String()
}

// ability is "yes", or "no: why" for a policy of algorithm a that
// Validate refuses (the first clause of its message, without the
// algorithm's name).
func ability(a model.Algorithm, p model.Policy) string {
	err := p.Validate()
	if err == nil {
		return "yes"
	}
	msg := err.Error()
	if fe, ok := err.(*model.FieldError); ok {
		msg = fe.Msg
	}
	msg = strings.TrimPrefix(msg, a.String()+" ")
	msg, _, _ = strings.Cut(msg, ": ")
	return "no: " + strings.ReplaceAll(msg, "|", `\|`)
}

// familyNames are the families' words in the docs.
var familyNames = map[model.Family]string{model.WindowFamily: "window", model.BucketFamily: "rate and burst", model.InFlightFamily: "in flight"}

// AlgorithmsMarkdown is the table of the registered algorithms that
// docs/algorithms.md holds: each one's family, the parameters it requires
// and may take, and an example policy.
func AlgorithmsMarkdown() string {
	var b strings.Builder
	b.WriteString("| algorithm | family | requires | may take | example |\n|---|---|---|---|---|\n")
	code := func(names []string) string {
		if len(names) == 0 {
			return ""
		}
		return "`" + strings.Join(names, "`, `") + "`"
	}
	for _, a := range model.Algorithms {
		d := a.Describe()
		if a == model.AllOf {
			continue
		}
		fam := familyNames[d.Family]
		if d.CountsRejected {
			fam += " (rejected requests count)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | `%s` |\n", d.Name, fam, code(d.Params), code(d.Optional), model.ExamplePolicy(a).Canonical())
	}
	return b.String()
}
