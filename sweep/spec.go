package sweep

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math/big"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ratesweep/ratesweep/configs"
	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// Spec is a sweep: a workload (a scenario, or an access log to replay) and
// a grid of policies to run over it.
type Spec struct {
	Name       string
	Scenario   *model.Scenario // nil when Traffic is set
	Traffic    *ingest.Config  // an access log to replay, or nil
	Seed       uint64          // seeds stochastic workloads (with the replicate)
	Replicates int             // realisations of the workload per grid point (>= 1)
	Entries    []Entry
	// ShardBy is how --shard splits the run (shard_by: grid or key). It
	// is how the run is executed, not what it computes: YAML leaves it out.
	ShardBy ShardBy
}

// Entry is one algorithm and its parameter axes; its grid is their cross
// product, the last axis varying fastest.
type Entry struct {
	Algorithm model.Algorithm
	Axes      []Axis
	// BlockLevels are the penalty box's escalation levels (block_levels),
	// shared by the entry's policies; nil: none.
	BlockLevels *model.BlockLevels
	// CountIf is the entry's count_if (model.Policy.CountIf), or "".
	CountIf string
	costed  bool // checkCorners checks Costed policies
	// Components are an all_of entry's components, nil otherwise: each its
	// algorithm and modifiers (count_if, block_levels); their axes are the
	// outer entry's, named all_of[i].name beside rejected_counts.
	Components []Entry
}

var specKeys = []string{"name", "scenario", "traffic", "overlay", "seed", "replicates", "sweep", "shard_by"}

// LoadSpec reads a sweep spec file. A relative scenario path is resolved
// against the spec's directory. path "" is the embedded default spec. sets
// are --set overrides "path=value" applied before decoding (see
// applyOverrides).
func LoadSpec(file string, sets ...string) (*Spec, error) {
	if file == "" {
		return loadEmbedded("default.yaml", sets)
	}
	if name, ok := strings.CutPrefix(file, "embedded:"); ok {
		return loadEmbedded(name, sets)
	}
	data, err := ReadInput(file)
	if err != nil {
		return nil, err
	}
	return ReadSpec(data, file, filepath.Dir(file), sets...)
}

// ReadSpec decodes a spec read already (e.g. from standard input), naming it
// file in errors; relative file names in it are resolved against dir.
func ReadSpec(data []byte, file, dir string, sets ...string) (*Spec, error) {
	resolve := func(p string) (string, []byte, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		b, err := ReadInput(p)
		return p, b, err
	}
	s, err := parseSpec(data, resolve, dir, sets)
	return s, yamlx.InFile(err, file)
}

func loadEmbedded(name string, sets []string) (*Spec, error) {
	data, err := fs.ReadFile(configs.FS, name)
	if err != nil {
		return nil, &yamlx.Error{File: "embedded:" + name, Msg: "no such embedded spec"}
	}
	resolve := func(p string) (string, []byte, error) {
		b, err := fs.ReadFile(configs.FS, path.Clean(p))
		if err != nil {
			return p, nil, &yamlx.Error{File: "embedded:" + p, Msg: "no such embedded scenario"}
		}
		return "embedded:" + p, b, nil
	}
	s, err := parseSpec(data, resolve, "", sets)
	return s, yamlx.InFile(err, "embedded:"+name)
}

// ParseSpec decodes a spec (strict) and validates it. resolve loads a
// scenario file named in the spec; it may be nil when scenarios are inline.
// A relative log path of a traffic section is taken as it is.
func ParseSpec(data []byte, resolve func(string) (string, []byte, error)) (*Spec, error) {
	return parseSpec(data, resolve, "", nil)
}

// parseSpec is ParseSpec with the directory that relative log paths start from.
func parseSpec(data []byte, resolve func(string) (string, []byte, error), dir string, sets []string) (*Spec, error) {
	if yamlx.Foreign(data, specKeys...) {
		return nil, yamlx.ForeignError("sweep spec")
	}
	root, err := yamlx.Parse(data)
	if err != nil {
		return nil, err
	}
	var c yamlx.Collector
	c.Add(applyOverrides(root, sets, resolve))
	s, err := decodeSpec(root, resolve, dir)
	c.Add(nameOverrides(err, sets))
	switch err := c.Err().(type) {
	case nil:
		return s, nil
	case *yamlx.Errors: // the file's errors first, then the --set ones
		slices.SortStableFunc(err.List, func(a, b *yamlx.Error) int {
			return cmp.Compare(setLast(a), setLast(b))
		})
		return nil, err
	default:
		return nil, err
	}
}

// setLast orders the errors of --set overrides after those of the file.
func setLast(e *yamlx.Error) int {
	if strings.HasPrefix(e.File, "--set ") {
		return 1
	}
	return 0
}

func decodeSpec(root *yaml.Node, resolve func(string) (string, []byte, error), dir string) (*Spec, error) {
	var err error
	// Every field is decoded even after an error, so that the user sees all
	// of a spec's errors at once.
	var c yamlx.Collector
	m, err := yamlx.Mapping(root, "", specKeys...)
	c.Add(err)
	if m == nil {
		return nil, c.Err()
	}
	s := &Spec{Replicates: 1}
	if s.Name, err = m.String("name"); !c.Add(err) {
		switch {
		case strings.ContainsAny(s.Name, "/\\") || s.Name == "." || s.Name == "..":
			c.Errorf(m.Get("name"), "name", "must not contain path separators (it names the output directory)")
		case len(s.Name) > 255 || strings.ContainsFunc(s.Name, unicode.IsControl) || !utf8.ValidString(s.Name):
			c.Errorf(m.Get("name"), "name", "must be at most 255 bytes of UTF-8 without NUL or control characters (it names the output directory), got %s", yamlx.Excerpt(s.Name))
		}
	}
	if n := m.Get("seed"); n != nil {
		v, err := yamlx.Int(n, "seed")
		switch {
		case c.Add(err):
		case v < 0:
			c.Errorf(n, "seed", "must be >= 0, got %d", v)
		default:
			s.Seed = uint64(v)
		}
	}
	if n := m.Get("replicates"); n != nil {
		v, err := yamlx.Int(n, "replicates")
		switch {
		case c.Add(err):
		case v < 1 || v > 1_000_000:
			c.Errorf(n, "replicates", "must be between 1 and 1000000, got %d", v)
		default:
			s.Replicates = int(v)
		}
	}
	switch scn, tr := m.Get("scenario"), m.Get("traffic"); {
	case scn != nil && tr != nil:
		c.Errorf(tr, "traffic", "give either scenario or traffic, not both")
	case tr != nil:
		s.Traffic, err = ingest.DecodeConfig(tr, "traffic", dir)
		c.Add(err)
		if s.Traffic != nil {
			if ov := m.Get("overlay"); ov != nil {
				s.Traffic.Overlay, err = ingest.DecodeOverlay(ov, "overlay")
				c.Add(err)
			}
			if n := len(s.Traffic.Logs); n > 1 {
				// Several logs (days) are the replicates, one each.
				if rn := m.Get("replicates"); rn != nil && s.Replicates != n {
					c.Errorf(rn, "replicates", "the traffic section lists %d logs, one per replicate: replicates must be %d (or left out), got %d", n, n, s.Replicates)
				}
				s.Replicates = n
			}
		}
	case scn != nil:
		s.Scenario, err = decodeScenarioRef(scn, resolve)
		c.Add(err)
	default:
		c.Errorf(root, "scenario", "missing: a spec needs a scenario (a file or a mapping) or a traffic section (an access log)")
	}
	if ov := m.Get("overlay"); ov != nil && m.Get("traffic") == nil {
		c.Errorf(ov, "overlay", "an overlay is placed on a log: it needs a traffic section (a scenario's clients go under scenario:)")
	}
	if sw, err := m.Require("sweep"); !c.Add(err) {
		items, err := yamlx.Seq(sw, "sweep")
		c.Add(err)
		if err == nil && len(items) == 0 {
			c.Errorf(sw, "sweep", "at least one entry (algorithm and parameters) is needed")
		}
		for i, it := range items {
			e, err := decodeEntry(it, fmt.Sprintf("sweep[%d]", i))
			if !c.Add(err) {
				c.Add(s.checkCosted(&e, it, fmt.Sprintf("sweep[%d]", i)))
				s.Entries = append(s.Entries, e)
			}
		}
	}
	c.Add(checkGridSize(s, m.Get("sweep")))
	c.Add(checkBlockLevels(s))
	if c.Err() == nil {
		c.Add(decodeShardBy(m.Get("shard_by"), s))
	}
	if c.Len() == 0 {
		c.Add(checkCompat(s, m.Get("sweep")))
	}
	if c.Len() == 0 {
		c.Add(checkReactions(s, m.Get("sweep")))
	}
	c.Add(checkStackKeys(s, m.Get("sweep")))
	if err := c.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// checkGridSize refuses a grid whose points rows (points × replicates) do
// not fit in an int64, naming the true size: the products of axis lengths
// would otherwise wrap (to 0, or negative) and bypass --max-points.
func checkGridSize(s *Spec, sw *yaml.Node) error {
	total := new(big.Int)
	for i := range s.Entries {
		n := big.NewInt(1)
		for _, a := range s.Entries[i].Axes {
			n.Mul(n, big.NewInt(int64(len(a.Values))))
		}
		total.Add(total, n)
	}
	rows := new(big.Int).Mul(total, big.NewInt(int64(s.Replicates)))
	if rows.IsInt64() {
		return nil
	}
	return yamlx.Errorf(sw, "sweep", "the grid has %s points × %d replicates = %s rows, more than any run can hold; narrow the axes", total, s.Replicates, rows)
}

func decodeScenarioRef(n *yaml.Node, resolve func(string) (string, []byte, error)) (*model.Scenario, error) {
	if n.Kind == yaml.MappingNode {
		return model.DecodeScenario(n, "scenario")
	}
	p, err := yamlx.Str(n, "scenario")
	if err != nil {
		return nil, yamlx.Errorf(n, "scenario", "expected a file name or an inline scenario mapping")
	}
	if resolve == nil {
		return nil, yamlx.Errorf(n, "scenario", "scenario files cannot be resolved here; inline the scenario")
	}
	file, data, err := resolve(p)
	if err != nil {
		var e *yamlx.Error // the file could not be read: say where the spec names it
		if errors.As(err, &e) && e.Line == 0 {
			return nil, yamlx.Errorf(n, "scenario", "%s: %s", e.File, e.Msg)
		}
		return nil, err
	}
	if yamlx.Foreign(data, scenarioKeys...) {
		return nil, yamlx.Errorf(n, "scenario", "%s: %s", file, yamlx.ForeignError("scenario").Msg)
	}
	sc, err := model.ParseScenario(data)
	if err != nil {
		return nil, yamlx.InFile(err, file)
	}
	return sc, nil
}

func decodeEntry(n *yaml.Node, p string) (Entry, error) {
	if isStackEntry(n) {
		return decodeStackEntry(n, p)
	}
	var e Entry
	var c yamlx.Collector
	allowed := []string{"algorithm", blockLevelsKey, "count_if"}
	for _, prm := range model.Params {
		allowed = append(allowed, prm.Name)
	}
	m, err := yamlx.Mapping(n, p, allowed...)
	c.Add(err)
	if m == nil {
		return e, c.Err()
	}
	name, err := m.String("algorithm")
	if c.Add(err) {
		return e, c.Err() // its parameters depend on it
	}
	alg, ok := model.ParseAlgorithm(name)
	if !ok {
		var names []string
		for _, a := range model.Algorithms {
			names = append(names, a.String())
		}
		c.Errorf(m.Get("algorithm"), m.FieldPath("algorithm"), "unknown algorithm %q%s (known: %s)", name, yamlx.DidYouMean(name, names), strings.Join(names, ", "))
		return e, c.Err()
	}
	e.Algorithm = alg
	takes := alg.Params()
	all := append(slices.Clone(takes), alg.OptionalParams()...)
	// Axes in the order the spec writes them.
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		prm, known := model.LookupParam(key)
		if key == "algorithm" || !known || m.Get(key) != n.Content[i+1] {
			continue // unknown and repeated keys are reported by Mapping
		}
		if !alg.Takes(key) {
			c.Errorf(n.Content[i], m.FieldPath(key), "%s takes no parameter %q%s (it takes %s)", alg, key, yamlx.DidYouMean(key, all), strings.Join(all, ", "))
			continue
		}
		ax, err := decodeAxis(n.Content[i+1], m.FieldPath(key), prm)
		if !c.Add(err) {
			e.Axes = append(e.Axes, ax)
		}
	}
	if cn := m.Get("count_if"); cn != nil {
		e.CountIf, err = decodeCountIf(cn, m.FieldPath("count_if"))
		c.Add(err)
	}
	for _, want := range takes {
		if !m.Has(want) {
			c.Errorf(n, m.FieldPath(want), "missing: %s needs %s", alg, strings.Join(takes, " and "))
		}
	}
	if ln := m.Get(blockLevelsKey); ln != nil { // blocklevels.go
		ls, err := decodeBlockLevels(ln, m.FieldPath(blockLevelsKey))
		if !c.Add(err) {
			e.BlockLevels = ls
			if !e.mayBlock() {
				c.Errorf(ln, m.FieldPath(blockLevelsKey), "escalates a penalty box: it needs block_s above 0 (at least one value of the axis)")
			}
		}
	}
	if c.Len() == 0 {
		if err := e.checkCorners(); err != nil {
			c.Errorf(n, p, "%v", err)
		}
	}
	return e, c.Err()
}

// checkCorners validates the policies at every corner of the entry's grid
// (each axis at its smallest or largest value), which catches constraints
// between parameters such as phase_s < window_s before anything runs.
func (e *Entry) checkCorners() error {
	for p := range e.corners() {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("%v (at %v)", err, p)
		}
	}
	return nil
}

// mayShape reports whether some point of the entry delays requests it
// admits (model.Policy.Shapes), tried at every corner of its grid
// (shaping grows as a delay falls or a burst grows).
func (e *Entry) mayShape() bool {
	for p := range e.corners() {
		if p.Shapes() {
			return true
		}
	}
	return false
}

// corners yields the entry's policy at every corner of its grid: each
// axis whose values differ at its smallest or largest value (the first 16
// such axes; the others at their smallest), with the entry's modifiers.
func (e *Entry) corners() iter.Seq[model.Policy] {
	return func(yield func(model.Policy) bool) {
		var varying []int // the axes whose smallest and largest values differ
		for i, ax := range e.Axes {
			if slices.Min(ax.Values) != slices.Max(ax.Values) {
				varying = append(varying, i)
			}
		}
		varying = varying[:min(len(varying), 16)]
		for c := range 1 << len(varying) {
			p := e.newPolicy()
			p.BlockLevels, p.CountIf, p.Costed = e.BlockLevels, e.CountIf, e.costed
			for _, ax := range e.Axes {
				p.Set(ax.Param, slices.Min(ax.Values))
			}
			for b, i := range varying {
				if c&(1<<b) != 0 {
					p.Set(e.Axes[i].Param, slices.Max(e.Axes[i].Values))
				}
			}
			if !yield(p) {
				return
			}
		}
	}
}

// Size is the number of grid points of the entry.
func (e *Entry) Size() int64 {
	n := int64(1)
	for _, a := range e.Axes {
		n *= int64(len(a.Values))
	}
	return n
}

// Points is the number of grid points of the spec (not counting replicates).
func (s *Spec) Points() int64 {
	var n int64
	for i := range s.Entries {
		n += s.Entries[i].Size()
	}
	return n
}

// Locate returns the entry of grid point id, the id of that entry's first
// point, and the index of the point's value on each of the entry's axes
// (the last axis varies fastest); ok is false when id is outside the grid.
func (s *Spec) Locate(id int64) (e *Entry, first int64, idx []int, ok bool) {
	for ei := range s.Entries {
		e = &s.Entries[ei]
		size := e.Size()
		if id < first || id >= first+size {
			first += size
			continue
		}
		idx = make([]int, len(e.Axes))
		rest := id - first
		for i := len(e.Axes) - 1; i >= 0; i-- {
			n := int64(len(e.Axes[i].Values))
			idx[i] = int(rest % n)
			rest /= n
		}
		return e, first, idx, true
	}
	return nil, 0, nil, false
}

// Rows is the number of points rows (points × replicates).
func (s *Spec) Rows() int64 { return s.Points() * int64(s.Replicates) }

// YAML renders the spec with its scenario inlined: the run's identity, stored
// in every Parquet file and in RUN_DIR/spec.yaml.
func (s *Spec) YAML() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\n", strconv.Quote(s.Name))
	fmt.Fprintf(&b, "seed: %d\nreplicates: %d\n", s.Seed, s.Replicates)
	if s.Traffic != nil {
		b.Write(s.Traffic.YAML())
	} else {
		b.WriteString("scenario:\n")
		for _, l := range strings.SplitAfter(string(s.Scenario.YAML()), "\n") {
			if l != "" {
				b.WriteString("  " + l)
			}
		}
	}
	b.WriteString("sweep:\n")
	for _, e := range s.Entries {
		if e.Components != nil {
			e.writeStackYAML(&b)
			continue
		}
		fmt.Fprintf(&b, "  - algorithm: %s\n", e.Algorithm)
		for _, a := range e.Axes {
			fmt.Fprintf(&b, "    %s: %s\n", a.Param, a.yaml())
		}
		if e.BlockLevels != nil {
			fmt.Fprintf(&b, "    %s: %s\n", blockLevelsKey, levelsYAML(e.BlockLevels))
		}
		b.WriteString(countIfYAML(&e))
	}
	return []byte(b.String())
}

// WorkloadSHA256 identifies the traffic the spec runs: the scenario's hash,
// or for a log the hash of its traffic section and of the log file's bytes.
// Runs with the same hash see the same requests.
func (s *Spec) WorkloadSHA256() (string, error) {
	if s.Traffic == nil {
		return s.Scenario.SHA256(), nil
	}
	data := s.Traffic.YAML()
	logs := s.Traffic.Logs
	if len(logs) == 0 {
		logs = []string{s.Traffic.Log}
	}
	if set := s.Traffic.Options.Set; len(set) > 1 {
		logs = set // one log in several files: every file's bytes
	}
	for _, log := range logs {
		file, err := ingest.FileSHA256(log)
		if err != nil {
			return "", err
		}
		data = append(data, file...)
	}
	return sha256Hex(data), nil
}

// WorkloadName names the spec's workload for people: the scenario's name or
// the log's file name.
func (s *Spec) WorkloadName() string {
	if s.Traffic != nil {
		return filepath.Base(s.Traffic.Log)
	}
	return s.Scenario.Name
}
