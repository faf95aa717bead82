package ingest

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// Overlay is synthetic traffic placed on a real log's clock: clients of the
// scenario language (rates over time, addresses, arrivals) whose requests
// are labelled by their client's class and stage, so that a replay measures
// what a limit would miss against attacks the log does not hold.
//
//	overlay:
//	  name: attacks             # the scenario language: name, duration_s, arrivals, clients
//	  duration_s: 86400
//	  arrivals: poisson
//	  clients:
//	    - {name: low and slow, class: abusive, stage: code, segments: [[0, 86400, 0.05]], addresses: 20}
//	    - {name: window edges, class: abusive, stage: code, segments: [[0, 86400, 0.5]]}
//	  start_s: 0                # overlay t = 0 falls this many seconds after the log's first second
//	  keys:                     # optional: clients whose addresses are the log's keys (they collide)
//	    low and slow: top:20    # the log's 20 busiest keys, or a list of key names
//	  aim:                      # optional: bursts timed to fixed-window boundaries (epoch-aligned)
//	    window edges: {window_s: 60, spread_s: 0.5}
//
// A client's requests go to its addresses round robin (or at random with
// spread: random). Without keys: a client's keys are its own ("NAME" or
// "NAME #i"), never the log's. The overlay is realised once, from the
// spec's seed, and the log's one-second times are spread once as well
// (spread even, or random from the seed): replicates of a run with an
// overlay are identical.
type Overlay struct {
	Scenario *model.Scenario
	StartS   int64
	Keys     map[string]OverlayKeys // by client name
	Aim      map[string]Aim         // by client name
}

// OverlayKeys are the log keys a client's addresses are: a list, or the log's
// Top busiest keys.
type OverlayKeys struct {
	Names []string
	Top   int
}

// Aim times a client's requests to fixed-window boundaries: each window's
// requests are moved into a burst of SpreadS seconds either side of the
// window's end (half before, half after), the edge attack that doubles a
// fixed window's limit. Windows are aligned to the Unix epoch.
type Aim struct {
	WindowS int64
	SpreadS float64
}

var overlayExtraKeys = []string{"start_s", "keys", "aim"}

// DecodeOverlay decodes an overlay mapping found at path.
func DecodeOverlay(n *yaml.Node, path string) (*Overlay, error) {
	if n.Kind != yaml.MappingNode {
		return nil, yamlx.Errorf(n, path, "expected a mapping: the scenario language (name, duration_s, clients, arrivals) plus start_s, keys, aim")
	}
	// The scenario's own fields go to the scenario decoder.
	sc := &yaml.Node{Kind: yaml.MappingNode, Tag: n.Tag, Line: n.Line, Column: n.Column}
	extra := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if slices.Contains(overlayExtraKeys, k) {
			extra[k] = n.Content[i+1]
			continue
		}
		sc.Content = append(sc.Content, n.Content[i], n.Content[i+1])
	}
	s, err := model.DecodeScenario(sc, path)
	if err != nil {
		return nil, err
	}
	o := &Overlay{Scenario: s, Keys: map[string]OverlayKeys{}, Aim: map[string]Aim{}}
	clients := map[string]*model.Client{}
	for i := range s.Clients {
		clients[s.Clients[i].Name] = &s.Clients[i]
	}
	if v := extra["start_s"]; v != nil {
		if o.StartS, err = yamlx.Int(v, path+".start_s"); err != nil {
			return nil, err
		}
		if o.StartS < 0 || o.StartS > 100*365*86400 {
			return nil, yamlx.Errorf(v, path+".start_s", "must be between 0 and %d, got %d", 100*365*86400, o.StartS)
		}
	}
	// perClient calls fn for each entry of a mapping of client names.
	perClient := func(field, want string, fn func(name string, val *yaml.Node, p string) error) error {
		v := extra[field]
		if v == nil {
			return nil
		}
		if v.Kind != yaml.MappingNode {
			return yamlx.Errorf(v, path+"."+field, "expected a mapping of client names to %s", want)
		}
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, p := v.Content[i], path+"."+field+"."+v.Content[i].Value
			if clients[k.Value] == nil {
				return yamlx.Errorf(k, p, "no overlay client is named %q", k.Value)
			}
			if err := fn(k.Value, v.Content[i+1], p); err != nil {
				return err
			}
		}
		return nil
	}
	err = perClient("keys", "top:N or a list of log keys", func(name string, val *yaml.Node, p string) error {
		if clients[name].React.Reacts() {
			return yamlx.Errorf(val, p, "%s reacts (on_reject, throttle): a client that reacts has keys of its own; give the log's keys reactions under traffic.reactions", name)
		}
		var ok OverlayKeys
		if val.Kind == yaml.ScalarNode && strings.HasPrefix(val.Value, "top:") {
			n, err := strconv.Atoi(strings.TrimPrefix(val.Value, "top:"))
			if err != nil || n < 1 || n > model.MaxKeys {
				return yamlx.Errorf(val, p, "top:N needs 1 <= N <= %d, got %q", model.MaxKeys, val.Value)
			}
			ok.Top = n
		} else {
			var err error
			if ok.Names, err = strList(val, p); err != nil {
				return err
			}
		}
		o.Keys[name] = ok
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = perClient("aim", "{window_s, spread_s}", func(name string, val *yaml.Node, p string) error {
		m, err := yamlx.Mapping(val, p, "window_s", "spread_s")
		if err != nil {
			return err
		}
		wn, err := m.Require("window_s")
		if err != nil {
			return err
		}
		var a Aim
		if a.WindowS, err = yamlx.Int(wn, m.FieldPath("window_s")); err != nil {
			return err
		}
		if a.WindowS < 1 || a.WindowS > 86400 {
			return yamlx.Errorf(wn, m.FieldPath("window_s"), "must be between 1 and 86400, got %d", a.WindowS)
		}
		a.SpreadS = 0.5
		if sn := m.Get("spread_s"); sn != nil {
			f, err := strconv.ParseFloat(sn.Value, 64)
			if err != nil || sn.Kind != yaml.ScalarNode || !(f > 0 && f <= float64(a.WindowS)/2) {
				return yamlx.Errorf(sn, m.FieldPath("spread_s"), "must be a number of seconds in (0, window_s/2], got %q", sn.Value)
			}
			a.SpreadS = f
		}
		o.Aim[name] = a
		return nil
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// YAML renders the overlay as a top-level "overlay:" block (canonical, read
// back by DecodeOverlay).
func (o *Overlay) YAML() []byte {
	var b strings.Builder
	b.WriteString("overlay:\n")
	for _, l := range strings.SplitAfter(string(o.Scenario.YAML()), "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	fmt.Fprintf(&b, "  start_s: %d\n", o.StartS)
	if len(o.Keys) > 0 {
		b.WriteString("  keys:\n")
		for _, k := range slices.Sorted(maps.Keys(o.Keys)) {
			v := o.Keys[k]
			if v.Top > 0 {
				fmt.Fprintf(&b, "    %s: \"top:%d\"\n", strconv.Quote(k), v.Top)
				continue
			}
			q := make([]string, len(v.Names))
			for i, n := range v.Names {
				q[i] = strconv.Quote(n)
			}
			fmt.Fprintf(&b, "    %s: [%s]\n", strconv.Quote(k), strings.Join(q, ", "))
		}
	}
	if len(o.Aim) > 0 {
		b.WriteString("  aim:\n")
		for _, k := range slices.Sorted(maps.Keys(o.Aim)) {
			a := o.Aim[k]
			fmt.Fprintf(&b, "    %s: {window_s: %d, spread_s: %s}\n", strconv.Quote(k), a.WindowS, strconv.FormatFloat(a.SpreadS, 'f', -1, 64))
		}
	}
	return []byte(b.String())
}

// MaxOverlayRequests bounds the requests an overlay adds.
const MaxOverlayRequests = 200_000_000

// WithOverlay returns a new Traffic: t's requests, their one-second times
// spread once by s (seed, replicate 0), plus the overlay's requests placed
// at StartS seconds after t's first second, keyed and labelled as the
// overlay says. Keys are re-ranked by requests. t is not modified.
func (t *Traffic) WithOverlay(o *Overlay, s Spread, seed uint64) (*Traffic, error) {
	wl, err := model.NewWorkload(o.Scenario)
	if err != nil {
		return nil, fmt.Errorf("overlay: %w", err)
	}
	times := wl.Realise(seed, 0, nil)
	var total int64
	for _, ts := range times {
		total += int64(len(ts))
	}
	if total > MaxOverlayRequests {
		return nil, fmt.Errorf("overlay: %d requests, at most %d", total, MaxOverlayRequests)
	}
	logTimes := t.Realise(s, seed, 0, nil)
	type req struct {
		t     int64
		label model.Stage
	}
	perKey := make([][]req, len(t.Keys))
	index := make(map[string]int, len(t.Keys))
	for i := range t.Keys {
		index[t.Keys[i].Name] = i
		labels := t.Labels(i)
		perKey[i] = make([]req, len(logTimes[i]))
		for j, v := range logTimes[i] {
			perKey[i][j] = req{v, labels[j]}
		}
	}
	var names []string // new keys
	rule := map[int]string{}
	owner := map[int]string{} // new keys: their overlay client
	var keyErr error
	keyOf := func(name string, c *model.Client) int {
		if k, ok := index[name]; ok {
			if c.React.Reacts() && keyErr == nil {
				keyErr = fmt.Errorf("overlay: %s reacts (on_reject, throttle) but its key %q is also a key of the log or of another client: rename the client", c.Name, name)
			}
			return k
		}
		k := len(perKey)
		index[name] = k
		perKey = append(perKey, nil)
		names = append(names, name)
		owner[k] = c.Name
		return k
	}
	start := o.StartS * secondNs
	for ci := range o.Scenario.Clients {
		c := &o.Scenario.Clients[ci]
		label := model.NoStage
		if c.Class == model.Abusive {
			label = c.Stage
		}
		// The client's addresses as key indexes.
		n := max(c.Keys.Addresses, 1)
		var keys []int
		if ok, given := o.Keys[c.Name]; given {
			list := ok.Names
			if ok.Top > 0 {
				for i := 0; i < ok.Top && i < len(t.Keys); i++ {
					list = append(list, t.Keys[i].Name)
				}
			}
			for _, name := range ok.Names {
				if _, inLog := index[name]; !inLog {
					return nil, fmt.Errorf("overlay: keys: %s: %q is not a key of the log%s", c.Name, name, yamlx.DidYouMean(name, logKeyNames(t, name)))
				}
			}
			for _, name := range list {
				keys = append(keys, keyOf(name, &model.Client{Name: c.Name})) // log keys: never the client's own
			}
		} else if n == 1 {
			keys = []int{keyOf(c.Name, c)}
		} else {
			for i := range n {
				keys = append(keys, keyOf(fmt.Sprintf("%s #%d", c.Name, i+1), c))
			}
		}
		ts := times[ci]
		if a, ok := o.Aim[c.Name]; ok {
			ts = aimAtEdges(ts, a, t.StartUnix, start)
		}
		var rng *rand.Rand
		if c.Keys.Spread == model.SpreadRandom {
			rng = rand.New(rand.NewPCG(seed, uint64(ci)+1<<32))
		}
		for j, v := range ts {
			k := keys[j%len(keys)]
			if rng != nil {
				k = keys[rng.IntN(len(keys))]
			}
			perKey[k] = append(perKey[k], req{start + v, label})
			if label != model.NoStage {
				rule[k] = "overlay: " + c.Name
			}
		}
	}
	if keyErr != nil {
		return nil, keyErr
	}
	// Sort each key's requests by time (stable: the log's first at a tie),
	// rank keys by requests then name, and lay out the columns.
	out := &Traffic{Source: t.Source, Format: t.Format, Stats: t.Stats, SubSecond: true, StartUnix: t.StartUnix}
	allNames := make([]string, len(perKey))
	for i := range t.Keys {
		allNames[i] = t.Keys[i].Name
	}
	copy(allNames[len(t.Keys):], names)
	order := make([]int, len(perKey))
	var n int64
	var minT, maxT int64 = math.MaxInt64, math.MinInt64
	for k := range perKey {
		order[k] = k
		slices.SortStableFunc(perKey[k], func(a, b req) int { return cmp.Compare(a.t, b.t) })
		n += int64(len(perKey[k]))
		if len(perKey[k]) > 0 {
			minT, maxT = min(minT, perKey[k][0].t), max(maxT, perKey[k][len(perKey[k])-1].t)
		}
	}
	if minT < 0 {
		return nil, fmt.Errorf("overlay: a request before the log's first second")
	}
	slices.SortFunc(order, func(x, y int) int {
		if c := cmp.Compare(len(perKey[y]), len(perKey[x])); c != 0 {
			return c
		}
		return strings.Compare(allNames[x], allNames[y])
	})
	out.DurationS = int(maxT/secondNs) + 1
	out.offsets = make([]int64, 1, len(order)+1)
	out.times = make([]int64, 0, n)
	out.labels = make([]model.Stage, 0, n)
	for _, k := range order {
		if len(perKey[k]) == 0 {
			continue // a listed log key the overlay never used cannot be empty; new keys always have requests
		}
		key := Key{Name: allNames[k], Requests: int64(len(perKey[k])), Overlay: owner[k]}
		if k < len(t.Keys) {
			key.Rule = t.Keys[k].Rule
		}
		for _, r := range perKey[k] {
			out.times = append(out.times, r.t)
			out.labels = append(out.labels, r.label)
			key.ByStage[r.label]++
		}
		key.Class, key.Stage = majority(key.ByStage)
		if r, ok := rule[k]; ok && (key.Rule == "" || key.Rule == "label column") && key.Class == model.Abusive {
			key.Rule = r
		}
		out.Keys = append(out.Keys, key)
		out.offsets = append(out.offsets, int64(len(out.times)))
	}
	out.Stats.Requests = t.Stats.Requests
	out.OverlayRequests = n - t.Requests()
	return out, nil
}

// logKeyNames are the log's keys to suggest for a mistyped one: those of
// its length give or take two (a log may hold millions).
func logKeyNames(t *Traffic, name string) []string {
	var out []string
	for i := range t.Keys {
		if k := t.Keys[i].Name; len(k) >= len(name)-2 && len(k) <= len(name)+2 {
			out = append(out, k)
			if len(out) == 10_000 {
				break
			}
		}
	}
	return out
}

// aimAtEdges moves a client's requests (ns since the overlay's start) to
// bursts at fixed-window boundaries: the requests falling in each window
// [kW, (k+1)W) on the epoch-aligned clock go, evenly spaced, into
// [(k+1)W − S, (k+1)W + S), half before the boundary and half after.
func aimAtEdges(ts []int64, a Aim, startUnix, start int64) []int64 {
	w := a.WindowS * secondNs
	spread := int64(a.SpreadS * 1e9)
	// Absolute time of overlay t = 0 modulo the window.
	phase := ((startUnix%a.WindowS)*secondNs + start) % w
	out := make([]int64, 0, len(ts))
	for i := 0; i < len(ts); {
		k := (ts[i] + phase) / w
		j := i
		for j < len(ts) && (ts[j]+phase)/w == k {
			j++
		}
		m := int64(j - i)
		edge := (k+1)*w - phase // the window's end, overlay clock
		for q := range m {
			out = append(out, edge-spread+(2*q+1)*spread/m)
		}
		i = j
	}
	slices.Sort(out)
	return out
}
