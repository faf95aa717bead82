package sweep

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/model/reference"
)

// Differential test of a log replay against the reference interpreter
// (model/reference): a random CSV log (keys, times to the ns, statuses,
// paths priced by cost rules, a label per request), a spec of random
// entries in random order, run whole, as key shards merged, or spilled in
// passes; every point's caught, missed and false cut must equal the
// reference's on the same requests.

// logRequest is one line of a random log.
type logRequest struct {
	ns      int64 // since the log's first second
	key     int
	status  int
	path    string
	abusive bool
}

// logShape draws a policy of one shape for a log (every component on the
// log's key).
type logShape struct {
	name, known string
	draw        func(r *rand.Rand) model.Policy
}

func logLeaf(r *rand.Rand, mods ...string) model.Policy {
	p := reference.Leaves[r.IntN(len(reference.Leaves))].Draw(r)
	for _, m := range reference.Modifiers {
		if slices.Contains(mods, m.Name) {
			m.Apply(r, &p)
		}
	}
	return p
}

func logStack(rc int, mods ...string) func(r *rand.Rand) model.Policy {
	return func(r *rand.Rand) model.Policy {
		var parts []model.Policy
		for range 2 + r.IntN(2) {
			var use []string
			for _, m := range mods {
				if r.IntN(2) == 0 {
					use = append(use, m)
				}
			}
			parts = append(parts, logLeaf(r, use...))
		}
		which := rc
		if which < 0 {
			which = r.IntN(2)
		}
		return reference.Stack(model.RejectedCounts(which), parts...)
	}
}

// logShapes are the combinations checked on logs. Add a row to check
// another.
var logShapes = []logShape{
	{name: "leaf", draw: func(r *rand.Rand) model.Policy { return logLeaf(r) }},
	{name: "count_if", draw: func(r *rand.Rand) model.Policy { return logLeaf(r, "count_if") }},
	{name: "block_s", draw: func(r *rand.Rand) model.Policy { return logLeaf(r, "block_s") }},
	{name: "block_levels", draw: func(r *rand.Rand) model.Policy { return logLeaf(r, "block_levels") }},
	{name: "count_if+block_levels", draw: func(r *rand.Rand) model.Policy { return logLeaf(r, "count_if", "block_levels") }},
	{name: "nodes shared", draw: func(r *rand.Rand) model.Policy {
		p := logLeaf(r, "count_if", "block_s")
		reference.Deployment.Apply(r, &p)
		p.State = model.Shared
		return p
	}},
	{name: "nodes local", draw: func(r *rand.Rand) model.Policy {
		p := logLeaf(r)
		reference.Deployment.Apply(r, &p)
		p.State = model.Local
		return p
	}},
	{name: "all_of all", draw: logStack(0)},
	{name: "all_of none", draw: logStack(1)},
	{name: "all_of block_s", draw: logStack(-1, "block_s")},
	{name: "all_of block_levels", draw: logStack(-1, "block_levels")},
	{name: "all_of count_if", draw: logStack(-1, "count_if")},
}

// entryYAML writes p as a sweep entry (a YAML flow mapping).
func entryYAML(p model.Policy) string {
	if p.Stack != nil {
		var parts []string
		for _, c := range p.Stack.Components {
			parts = append(parts, entryYAML(c))
		}
		return fmt.Sprintf("{all_of: [%s], rejected_counts: %s}", strings.Join(parts, ", "), p.Stack.RejectedCounts)
	}
	a := p.Algorithm
	fields := []string{"algorithm: " + a.String()}
	for _, name := range append(slices.Clone(a.Params()), a.OptionalParams()...) {
		v := p.Get(name)
		if v == 0 && !slices.Contains(a.Params(), name) {
			continue
		}
		prm, _ := model.LookupParam(name)
		if prm.Values != nil {
			fields = append(fields, name+": "+prm.ParamName(v))
		} else {
			fields = append(fields, name+": "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	if p.CountIf != "" {
		sts, _ := model.CountIfStatuses(p.CountIf)
		fields = append(fields, fmt.Sprintf("count_if: {status: %s}", strings.ReplaceAll(fmt.Sprint(sts), " ", ", ")))
	}
	if p.BlockLevels != nil {
		var ls []string
		for _, l := range *p.BlockLevels {
			ls = append(ls, fmt.Sprintf("{after: %d, block_s: %v}", l.After, l.BlockS))
		}
		fields = append(fields, "block_levels: ["+strings.Join(ls, ", ")+"]")
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

// logCosts are the cost rules of a costed log: by path prefix, else 1.
var logCosts = map[string]int64{"/graphql": 3, "/export": 5, "/": 1}

// randomDiffLog draws a log of 1 to 4 keys over a few seconds, some requests at
// the same ns.
func randomDiffLog(r *rand.Rand) []logRequest {
	n, spanNs := 1+r.IntN(60), int64(1+r.IntN(30))*1e9
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = r.Int64N(spanNs)
		if i > 0 && r.IntN(5) == 0 {
			ts[i] = ts[i-1]
		}
	}
	ts[0] = 0
	slices.Sort(ts)
	keys := 1 + r.IntN(4)
	out := make([]logRequest, n)
	for i, t := range ts {
		out[i] = logRequest{ns: t, key: r.IntN(keys), status: []int{200, 401, 403, 429, 500}[r.IntN(5)],
			path: []string{"/", "/graphql", "/export"}[r.IntN(3)], abusive: r.IntN(2) == 0}
	}
	return out
}

// writeLog writes rs as a CSV log whose first second is startS (Unix s).
func writeLog(t *testing.T, path string, rs []logRequest, startS int64) {
	t.Helper()
	var b strings.Builder
	b.WriteString("ts,client,path,code,verdict\n")
	for _, q := range rs {
		label := "legit"
		if q.abusive {
			label = "none"
		}
		at := time.Unix(startS, q.ns).UTC()
		fmt.Fprintf(&b, "%s,10.0.0.%d,%s,%d,%s\n", at.Format(time.RFC3339Nano), q.key+1, q.path, q.status, label)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// logSpec is a spec over the log at path with the given entries.
func logSpec(path string, o logOpts, entries []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: diff\ntraffic:\n  log: %q\n  format: csv\n  spread: none\n", path)
	b.WriteString("  csv: {time_format: rfc3339, columns: {time: ts, ip: client, path: path, status: code, label: verdict}}\n")
	if o.logStart {
		b.WriteString("  window_origin: log_start\n")
	}
	if o.costed {
		b.WriteString("  cost: {rules: [{path_prefix: /graphql, cost: 3}, {path_prefix: /export, cost: 5}], default: 1}\n")
	}
	if x := o.retry; x != nil {
		react := fmt.Sprintf("retry: immediate, max_retries: %d", x.MaxRetries)
		if x.BaseS > 0 {
			react = fmt.Sprintf("retry: backoff, max_retries: %d, base_s: %v, cap_s: %v", x.MaxRetries, x.BaseS, x.CapS)
		}
		b.WriteString("  reactions: [{match: all, on_reject: {" + react + "}}]\n")
	}
	b.WriteString("sweep:\n")
	for _, e := range entries {
		b.WriteString("  - " + e + "\n")
	}
	return b.String()
}

// logOpts are a random log's traffic options: costs by path, windows from
// the log's first second rather than the epoch, every key retrying.
type logOpts struct {
	costed, logStart bool
	retry            *reference.Retry
}

// originNs is the Unix time, ns, of the windows' origin for a log whose
// first second is startS: 0 (the epoch), or the log's first second.
func (o logOpts) originNs(startS int64) int64 {
	if o.logStart {
		return 0
	}
	return startS * 1e9
}

// referenceMetrics are caught, missed, false cut and blocks started of p
// on rs (times ns since the log's first second, startS) by the reference.
func referenceMetrics(t *testing.T, p model.Policy, rs []logRequest, o logOpts, startS int64) [4]int64 {
	t.Helper()
	reqs := make([]reference.Request, len(rs))
	for i, q := range rs {
		k := int64(q.key)
		cost := logCosts["/"]
		if c, ok := logCosts[q.path]; ok {
			cost = c
		}
		reqs[i] = reference.Request{TimeNs: q.ns, Client: k, Address: k, Account: k, Org: k, Status: q.status, Cost: cost}
	}
	var m [4]int64
	served := make([]bool, len(rs))
	if o.retry != nil { // retries end with the log's last second
		endNs := (rs[len(rs)-1].ns/1e9 + 1) * 1e9
		var err error
		served, m[3], err = reference.EvaluateRetries(p, reqs, o.originNs(startS), endNs, func(int64) reference.Retry { return *o.retry })
		if err != nil {
			t.Fatalf("reference: %s: %v", p, err)
		}
	} else {
		ds, err := reference.Evaluate(p, reqs, o.originNs(startS))
		if err != nil {
			t.Fatalf("reference: %s: %v", p, err)
		}
		for i, d := range ds {
			served[i] = d.Admitted
			if d.Started {
				m[3]++
			}
		}
	}
	for i, ok := range served {
		switch {
		case rs[i].abusive && ok:
			m[1]++
		case rs[i].abusive:
			m[0]++
		case !ok:
			m[2]++
		}
	}
	return m
}

// diffEntry is a sweep entry and the policies of its points, in order.
type diffEntry struct {
	yaml   string
	points []model.Policy
	shape  logShape
}

// drawEntries draws n entries of random shapes whose policies are valid
// (the others are counted in skipped); a leaf entry may sweep its limit or
// capacity over a few values. A leaf entry may have a sibling next to it:
// the same algorithm and parameters, its modifiers dropped or redrawn, which
// a batch form may take together with it.
func drawEntries(r *rand.Rand, n int, shapes []logShape, costed bool, skipped map[string]int) []diffEntry {
	var out []diffEntry
	add := func(s logShape, p model.Policy) bool {
		p.Costed = costed
		e := diffEntry{yaml: entryYAML(p), points: []model.Policy{p}, shape: s}
		for _, axis := range []string{"limit", "capacity"} {
			if p.Stack != nil || !slices.Contains(p.Algorithm.Params(), axis) || r.IntN(3) > 0 {
				continue
			}
			e.points = nil
			var vs []string
			for _, v := range r.Perm(8)[:2+r.IntN(3)] {
				q := p
				q.Set(axis, float64(v+1))
				e.points = append(e.points, q)
				vs = append(vs, strconv.Itoa(v+1))
			}
			e.yaml = entryYAML(e.points[0])
			e.yaml = strings.Replace(e.yaml, fmt.Sprintf("%s: %d", axis, v0(e.points[0], axis)), axis+": ["+strings.Join(vs, ", ")+"]", 1)
			break
		}
		for _, q := range e.points {
			if q.Validate() != nil {
				skipped[s.name]++
				return false
			}
		}
		out = append(out, e)
		return true
	}
	for range n {
		s := shapes[r.IntN(len(shapes))]
		p := s.draw(r)
		if !add(s, p) || p.Stack != nil || s.known != "" || r.IntN(3) > 0 {
			continue
		}
		q := p
		q.CountIf, q.BlockS, q.BlockLevels = "", 0, nil
		if r.IntN(2) == 0 {
			reference.Modifiers[r.IntN(len(reference.Modifiers))].Apply(r, &q)
		}
		if add(logShape{name: "sibling"}, q) && r.IntN(2) == 0 {
			out[len(out)-1], out[len(out)-2] = out[len(out)-2], out[len(out)-1]
		}
	}
	return out
}

func v0(p model.Policy, axis string) int64 { return int64(p.Get(axis)) }

// readTogether reads the spec of the entries (specOf), dropping each entry
// the spec refuses (counted in skipped), alone or together with the others
// (two entries of one algorithm must block with the same block_levels).
func readTogether(t *testing.T, entries []diffEntry, specOf func(yamls []string) string, dir string, skipped map[string]int) (*Spec, []diffEntry) {
	t.Helper()
	for len(entries) > 0 {
		var yamls []string
		for _, e := range entries {
			yamls = append(yamls, e.yaml)
		}
		sp, err := ReadSpec([]byte(specOf(yamls)), "diff.yaml", dir)
		if err == nil {
			return sp, entries
		}
		m := regexp.MustCompile(`sweep\[(\d+)\]`).FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("%v\n%s", err, specOf(yamls))
		}
		i, _ := strconv.Atoi(m[1])
		skipped[entries[i].shape.name]++
		entries = slices.Delete(entries, i, i+1)
	}
	return nil, nil
}

// pointRows reads a run's points in point order and checks there is one
// per point of the entries.
func pointRows(t *testing.T, out string, entries []diffEntry) []PointRow {
	t.Helper()
	rows, err := ReadPoints(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rows, func(a, b PointRow) int { return int(a.PointID - b.PointID) })
	n := 0
	for _, e := range entries {
		n += len(e.points)
	}
	if len(rows) != n {
		t.Fatalf("%d points for %d", len(rows), n)
	}
	return rows
}

// diffTally counts the pairs checked and the known disagreements by shape.
type diffTally struct {
	pairs, skipped, modes map[string]int
	known                 map[string][]string
}

func newDiffTally() *diffTally {
	return &diffTally{pairs: map[string]int{}, skipped: map[string]int{}, modes: map[string]int{}, known: map[string][]string{}}
}

// report runs a skipped subtest per known disagreement found and logs the
// counts.
func (d *diffTally) report(t *testing.T, shapes []logShape, what string, start time.Time) {
	for _, s := range shapes {
		if s.known == "" {
			continue
		}
		t.Run(strings.ReplaceAll(s.name, " ", "_"), func(t *testing.T) {
			if msgs := d.known[s.name]; len(msgs) > 0 {
				t.Logf("%d of %d cases disagree; the first:\n%s", len(msgs), d.pairs[s.name], msgs[0])
				t.Skip("known: " + s.known)
			}
		})
	}
	total := 0
	for _, n := range d.pairs {
		total += n
	}
	t.Logf("%d (%s, policy) pairs in %v: %v; runs %v; refused (skipped): %v", total, what, time.Since(start).Round(time.Millisecond), d.pairs, d.modes, d.skipped)
}

// pointMetrics are a point's caught, missed, false cut and blocks; the
// blocks are the reference's (want[3]) where they are not compared: a
// stack's components', or a managed rule's, which counts its own blocks too.
func pointMetrics(p model.Policy, row PointRow, want [4]int64) [4]int64 {
	m := [4]int64{row.Caught, row.Missed, row.FalseCut, want[3]}
	if a := p.Algorithm.String(); p.BlockS > 0 && p.Stack == nil && a != "aws_waf_rate" && a != "cloudflare_rule" && a != "fastly_erl" {
		m[3] = row.Blocks
	}
	return m
}

// replayMode is how a spec is run: whole (on one or two workers), as key
// shards merged, or spilled in passes.
type replayMode struct {
	name    string
	workers int
	shards  int
}

var replayModes = []replayMode{{"whole", 1, 0}, {"whole", 2, 0}, {"key shards", 1, 2}, {"key shards", 2, 3}, {"spill", 1, 0}}

// runReplay runs sp into out in mode. It reports false where the mode was
// not reached: a spill in one pass, key shards refused or not merged (then
// it runs whole).
func runReplay(t *testing.T, sp *Spec, out string, mode replayMode) bool {
	t.Helper()
	switch {
	case mode.shards > 0:
		for i := range mode.shards {
			if _, err := Run(context.Background(), sp, Options{OutDir: out, Shard: Shard{i, mode.shards}, ShardBy: ShardByKey, Workers: mode.workers}); err != nil {
				if i == 0 && strings.Contains(err.Error(), "shard_by key") { // refused: run it whole
					mustRun(t, sp, Options{OutDir: out, Workers: mode.workers, Shard: Shard{Count: 1}, MaxPoints: DefaultMaxPoints})
					return false
				}
				t.Fatal(err)
			}
		}
		if _, err := Merge(context.Background(), out, MergeOptions{}); err != nil {
			if !strings.Contains(err.Error(), "cannot add up") { // nginx's delays on a scenario
				t.Fatalf("merge: %v", err)
			}
			if err := os.RemoveAll(out); err != nil {
				t.Fatal(err)
			}
			mustRun(t, sp, Options{OutDir: out, Workers: mode.workers, Shard: Shard{Count: 1}, MaxPoints: DefaultMaxPoints})
			return false
		}
	case mode.name == "spill":
		one := EstimateRun(sp, Shard{0, 1}, 1, 0).MemoryBytes
		two := estimateRun(sp, Shard{0, 1}, 2, 1, 0).MemoryBytes
		return mustRun(t, sp, Options{OutDir: out, MaxMemory: two + (one-two)/4, Workers: mode.workers}).Passes > 1
	default:
		mustRun(t, sp, Options{OutDir: out, Workers: mode.workers, Shard: Shard{Count: 1}, MaxPoints: DefaultMaxPoints})
	}
	return true
}

// logReproduction shrinks a disagreement to the fewest requests and the
// fewest entries before the failing one that still disagree (whole runs),
// and describes it: the spec's entries, the policy label and the log.
func logReproduction(t *testing.T, p model.Policy, rs []logRequest, startS int64, o logOpts, entries []diffEntry, k, j int, mode replayMode, got, want [4]int64, dir string) string {
	t.Helper()
	// disagrees runs the entries over rs in mode and reports whether point
	// j of entry k disagrees with the reference.
	disagrees := func(rs []logRequest, entries []diffEntry, k int) bool {
		sub, err := os.MkdirTemp(dir, "shrink")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(sub, "log.csv")
		writeLog(t, path, rs, startS)
		var yamls []string
		row := j
		for i, e := range entries {
			yamls = append(yamls, e.yaml)
			if i < k {
				row += len(e.points)
			}
		}
		sp, err := ReadSpec([]byte(logSpec(path, o, yamls)), "diff.yaml", dir)
		if err != nil {
			return false
		}
		out := filepath.Join(sub, "out")
		runReplay(t, sp, out, mode)
		rows := pointRows(t, out, entries)
		want = referenceMetrics(t, p, rs, o, startS)
		got = pointMetrics(p, rows[row], want)
		return got != want
	}
	shrunk := ""
	if m := mode; mode.name != "whole" || mode.workers != 1 { // shrink on the cheapest run that disagrees
		mode = replayMode{"whole", 1, 0}
		if !disagrees(rs, entries, k) {
			mode = m
		}
	}
	if disagrees(rs, entries, k) {
		entries = slices.Clone(entries[:k+1])
		for i := 0; i < k; { // drop earlier entries
			if e := slices.Delete(slices.Clone(entries), i, i+1); disagrees(rs, e, k-1) {
				entries, k = e, k-1
			} else {
				i++
			}
		}
		for i := 1; i < len(rs); { // drop requests (the first stays: the log's first second)
			if s := slices.Delete(slices.Clone(rs), i, i+1); disagrees(s, entries, k) {
				rs = s
			} else {
				i++
			}
		}
		disagrees(rs, entries, k)
		shrunk = ", shrunk"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %d workers, %d key shards%s: policy %q (entry %d, point %d): caught, missed, false cut, blocks %v, reference %v\nentries:\n", mode.name, mode.workers, mode.shards, shrunk, p.String(), k, j, got, want)
	for _, e := range entries {
		fmt.Fprintf(&b, "  - %s\n", e.yaml)
	}
	fmt.Fprintf(&b, "%+v; log from Unix %d s (ns since, key, status, path, abusive):\n", o, startS)
	for _, q := range rs {
		fmt.Fprintf(&b, "  %d %d %d %s %v\n", q.ns, q.key, q.status, q.path, q.abusive)
	}
	return b.String()
}

// diffScenarioKeys are the keys an entry of a scenario sweep may hang on.
var diffScenarioKeys = []model.Key{model.KeyClient, model.KeyAddress, model.KeyAccount, model.KeyGlobal, model.KeyOrg}

// diffScenarioShapes are the log's shapes (nodes with local state are
// exact on scenarios) and shapes with keys: the combinations checked on
// scenario sweeps. Add a row to check another.
var diffScenarioShapes = append(slices.Collect(func(yield func(logShape) bool) {
	for _, s := range logShapes {
		if s.name == "nodes local" {
			s.known = ""
		}
		if !yield(s) {
			return
		}
	}
}),
	logShape{name: "keyed", draw: func(r *rand.Rand) model.Policy {
		p := logLeaf(r)
		p.Key = append(diffScenarioKeys, model.KeyBoth)[r.IntN(len(diffScenarioKeys)+1)]
		return p
	}},
	logShape{name: "keyed count_if+block_s", draw: func(r *rand.Rand) model.Policy {
		p := logLeaf(r, "count_if", "block_s")
		p.Key = diffScenarioKeys[r.IntN(len(diffScenarioKeys))]
		return p
	}},
	logShape{name: "nodes", draw: func(r *rand.Rand) model.Policy {
		p := logLeaf(r, "block_s")
		p.Key = diffScenarioKeys[r.IntN(len(diffScenarioKeys))]
		reference.Deployment.Apply(r, &p)
		return p
	}},
	logShape{name: "all_of keyed", draw: func(r *rand.Rand) model.Policy {
		p := logStack(-1, "block_s")(r)
		for i := range p.Stack.Components {
			p.Stack.Components[i].Key = diffScenarioKeys[r.IntN(len(diffScenarioKeys))]
		}
		return p
	}},
)

// scenarioSpec is a spec over scenario sc (seed) with the given entries.
func scenarioSpec(sc *model.Scenario, seed uint64, entries []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: diff\nseed: %d\nscenario:\n", seed)
	for line := range strings.Lines(string(sc.YAML())) {
		b.WriteString("  " + line)
	}
	b.WriteString("sweep:\n")
	for _, e := range entries {
		b.WriteString("  - " + e + "\n")
	}
	return b.String()
}

// TestReferenceScenarioSweep checks scenario sweeps (the batch forms the
// sweep picks for a grid, keyed scenarios, key shards merged) against the
// reference on random scenarios and entries.
func TestReferenceScenarioSweep(t *testing.T) {
	const trials = 40
	start := time.Now()
	r := rand.New(rand.NewPCG(43, 13))
	dir := t.TempDir()
	d := newDiffTally()
	for trial := range trials {
		sc := reference.RandomScenario(r, r.IntN(2) == 0, r.IntN(4) == 0)
		seed := r.Uint64N(1 << 20)
		w, err := model.NewWorkload(sc)
		if err != nil {
			t.Fatal(err)
		}
		reqs := reference.ScenarioRequests(sc, w.Realise(seed, 0, nil))
		specOf := func(yamls []string) string { return scenarioSpec(sc, seed, yamls) }
		entries := drawEntries(r, 6+r.IntN(12), diffScenarioShapes, sc.Costed(), d.skipped)
		mode := replayModes[r.IntN(4)] // no spill: a scenario is not spilled
		if mode.shards > 0 {           // key shards refuse what needs every key at once
			entries = slices.DeleteFunc(entries, func(e diffEntry) bool {
				return slices.ContainsFunc(e.points, model.Policy.NeedsEveryClient)
			})
		}
		sp, entries := readTogether(t, entries, specOf, dir, d.skipped)
		if sp == nil {
			continue
		}
		out := filepath.Join(dir, fmt.Sprintf("out%d", trial))
		name := mode.name
		if !runReplay(t, sp, out, mode) {
			name += " (refused)"
		}
		d.modes[name]++
		rows := pointRows(t, out, entries)
		row := 0
		for k, e := range entries {
			for _, p := range e.points {
				d.pairs[e.shape.name]++
				ds, err := reference.Evaluate(p, reqs, 0)
				if err != nil {
					t.Fatal(err)
				}
				var want [4]int64
				for i, x := range ds {
					if x.Started {
						want[3]++
					}
					switch abusive := sc.Clients[reqs[i].Client].Class == model.Abusive; {
					case abusive && x.Admitted:
						want[1]++
					case abusive:
						want[0]++
					case !x.Admitted:
						want[2]++
					}
				}
				got := pointMetrics(p, rows[row], want)
				row++
				if got == want {
					continue
				}
				var yamls []string
				for _, e := range entries {
					yamls = append(yamls, e.yaml)
				}
				msg := fmt.Sprintf("%s on %d workers, %d key shards: policy %q (entry %d of %d points): caught, missed, false cut, blocks %v, reference %v\nspec:\n%s",
					mode.name, mode.workers, mode.shards, p.String(), k, len(e.points), got, want, specOf(yamls))
				if s := e.shape.name; e.shape.known != "" {
					d.known[s] = append(d.known[s], msg)
					continue
				}
				t.Errorf("trial %d: %s", trial, msg)
			}
		}
	}
	d.report(t, diffScenarioShapes, "scenario", start)
}

// TestReferenceKnownLog holds the smallest log replays that disagreed with
// the reference once, one subtest each: they must agree now, or (nodes
// with local state on a log) be refused when the spec is read.
func TestReferenceKnownLog(t *testing.T) {
	at := func(status int, ns ...int64) []logRequest {
		var rs []logRequest
		for _, x := range ns {
			rs = append(rs, logRequest{ns: x, status: status, path: "/", abusive: true})
		}
		return rs
	}
	fw := model.Policy{Algorithm: model.FixedWindow, WindowS: 60, Limit: 1, CountIf: "401"}
	tb := model.Policy{Algorithm: model.TokenBucket, Rate: 1, Capacity: 1, BlockS: 1, BlockLevels: &model.BlockLevels{{After: 1, BlockS: 10}}}
	for _, c := range []struct {
		name, known string
		p           model.Policy
		rs          []logRequest
	}{
		{"all_of_count_if", "count_if inside an all_of component is accepted, left out of the label and ignored",
			reference.Stack(model.RejectedCountedByNone, fw), at(200, 0, 1e8, 2e8)},
		{"all_of_block_levels", "block_levels inside an all_of component is accepted, left out of the label and ignored",
			reference.Stack(model.RejectedCountedByNone, tb), at(200, 0, 0, 1e9, 1e9, 2e9)},
		{"nodes_local", "nodes with local state on a replayed log are accepted and ignored (decided as on one node)",
			model.Policy{Algorithm: model.FixedWindow, WindowS: 60, Limit: 2, Nodes: 3}, at(200, 0, 1e8, 2e8, 3e8, 4e8, 5e8)},
	} {
		t.Run(c.name, func(t *testing.T) {
			const startS = 1767225600
			path := filepath.Join(t.TempDir(), "log.csv")
			writeLog(t, path, c.rs, startS)
			sp, err := ReadSpec([]byte(logSpec(path, logOpts{}, []string{entryYAML(c.p)})), "diff.yaml", t.TempDir())
			if c.p.Nodes > 1 {
				if err == nil || !strings.Contains(err.Error(), "sweep[0].nodes") {
					t.Errorf("%s: read with %v, want a refusal naming sweep[0].nodes (once: %s)", entryYAML(c.p), err, c.known)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			runReplay(t, sp, out, replayMode{"whole", 1, 0})
			rows := pointRows(t, out, []diffEntry{{points: []model.Policy{c.p}}})
			want := referenceMetrics(t, c.p, c.rs, logOpts{}, startS)
			if got := pointMetrics(c.p, rows[0], want); got != want {
				t.Errorf("%s (label %q): caught, missed, false cut, blocks %v, reference %v (once: %s)", entryYAML(c.p), rows[0].Key(), got, want, c.known)
			}
		})
	}
}

// TestReferenceOverlay checks log replays with attacks overlaid (clients of
// the scenario language on their own keys or on the log's) against the
// reference on random logs, overlays and entries.
func TestReferenceOverlay(t *testing.T) {
	const trials = 60
	start := time.Now()
	r := rand.New(rand.NewPCG(43, 17))
	dir := t.TempDir()
	d := newDiffTally()
	for trial := range trials {
		rs := randomDiffLog(r)
		startS := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix() + r.Int64N(86400)
		logPath := filepath.Join(dir, fmt.Sprintf("log%d.csv", trial))
		writeLog(t, logPath, rs, startS)
		var logKeys []int // the keys the log holds
		for _, q := range rs {
			if !slices.Contains(logKeys, q.key) {
				logKeys = append(logKeys, q.key)
			}
		}
		// The overlay: 1 or 2 clients from second 1, 2 or 3 of the log on,
		// each on a key of its own or on one of the log's.
		ov := &model.Scenario{Name: "overlay", DurationS: 2 + r.IntN(20), Arrivals: model.Arrivals{Process: model.ArrivalProcess(r.IntN(3))}}
		startOv := 1 + r.IntN(3)
		var keysYAML []string
		onKey := map[int]int{} // overlay client → log key
		for i := range 1 + r.IntN(2) {
			c := model.Client{Name: fmt.Sprintf("o%d", i), Class: model.Class(r.IntN(2))}
			if c.Class == model.Abusive {
				c.Stage = model.StageNone
			}
			c.Segments = []model.Segment{{T0: r.IntN(2), T1: ov.DurationS, Rate: float64(1 + r.IntN(3))}}
			if r.IntN(2) == 0 {
				onKey[i] = logKeys[r.IntN(len(logKeys))]
				keysYAML = append(keysYAML, fmt.Sprintf("%s: [10.0.0.%d]", c.Name, onKey[i]+1))
			}
			ov.Clients = append(ov.Clients, c)
		}
		w, err := model.NewWorkload(ov)
		if err != nil {
			t.Fatal(err)
		}
		seed := r.Uint64N(1 << 20)
		var all []logRequest
		for i, ts := range w.Realise(seed, 0, nil) {
			key, ok := onKey[i]
			if !ok {
				key = 100 + i // a key of its own
			}
			for _, x := range ts {
				all = append(all, logRequest{ns: int64(startOv)*1e9 + x, key: key, path: "/", abusive: ov.Clients[i].Class == model.Abusive})
			}
		}
		all = append(slices.Clone(rs), all...)
		slices.SortStableFunc(all, func(a, b logRequest) int { return int(min(max(a.ns-b.ns, -1), 1)) })
		var b strings.Builder
		fmt.Fprintf(&b, "seed: %d\noverlay:\n", seed)
		for line := range strings.Lines(string(ov.YAML())) {
			b.WriteString("  " + line)
		}
		fmt.Fprintf(&b, "  start_s: %d\n", startOv)
		if len(keysYAML) > 0 {
			b.WriteString("  keys: {" + strings.Join(keysYAML, ", ") + "}\n")
		}
		overlay := b.String()
		specOf := func(yamls []string) string { return overlay + logSpec(logPath, logOpts{}, yamls) }
		entries := drawEntries(r, 4+r.IntN(8), logShapes, false, d.skipped)
		entries = slices.DeleteFunc(entries, func(e diffEntry) bool { // an overlay refuses count_if (its requests have no status)
			hasCountIf := strings.Contains(e.yaml, "count_if")
			if hasCountIf {
				d.skipped[e.shape.name]++
			}
			return hasCountIf
		})
		sp, entries := readTogether(t, entries, specOf, dir, d.skipped)
		if sp == nil {
			continue
		}
		out := filepath.Join(dir, fmt.Sprintf("out%d", trial))
		mustRun(t, sp, Options{OutDir: out, Workers: 1, Shard: Shard{Count: 1}, MaxPoints: DefaultMaxPoints})
		d.modes["whole"]++
		rows := pointRows(t, out, entries)
		row := 0
		for k, e := range entries {
			for _, p := range e.points {
				d.pairs[e.shape.name]++
				want := referenceMetrics(t, p, all, logOpts{}, startS)
				got := pointMetrics(p, rows[row], want)
				row++
				if got == want {
					continue
				}
				var yamls []string
				for _, e := range entries {
					yamls = append(yamls, e.yaml)
				}
				msg := fmt.Sprintf("policy %q (entry %d of %d points): caught, missed, false cut, blocks %v, reference %v\nspec:\n%s\nrequests (ns since the log's first second, key, abusive): %v",
					p.String(), k, len(e.points), got, want, specOf(yamls), all)
				if s := e.shape.name; e.shape.known != "" {
					d.known[s] = append(d.known[s], msg)
					continue
				}
				t.Errorf("trial %d: %s", trial, msg)
			}
		}
	}
	d.report(t, logShapes, "log with an overlay", start)
}
