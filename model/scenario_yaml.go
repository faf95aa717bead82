package model

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"go.yaml.in/yaml/v3"
)

var scenarioKeys = []string{"name", "duration_s", "arrivals", "clients"}
var arrivalKeys = []string{"process", "burst_size", "spread_s"}
var clientKeys = []string{"name", "class", "stage", "segments", "addresses", "accounts", "address_pool", "account_pool", "spread", "on_reject", "throttle", "cost", "fail_share", "fail_status", "org"}

// ParseScenario decodes a scenario from YAML (strict: unknown keys are
// errors) and validates it. Errors are *yamlx.Error with line and field path;
// the caller adds the file name with yamlx.InFile.
func ParseScenario(data []byte) (*Scenario, error) {
	root, err := yamlx.Parse(data)
	if err != nil {
		return nil, err
	}
	return DecodeScenario(root, "")
}

// DecodeScenario decodes and validates a scenario mapping node found at path
// (empty for a whole file).
func DecodeScenario(n *yaml.Node, path string) (*Scenario, error) {
	sc, err := decodeScenario(n, path)
	if err != nil {
		return nil, err
	}
	if err := sc.Validate(); err != nil {
		locate := func(err error) error {
			var fe *FieldError
			if !errors.As(err, &fe) {
				return err
			}
			full := fe.Path
			if path != "" {
				full = path + "." + fe.Path
			}
			return yamlx.Errorf(yamlx.Locate(n, fe.Path), full, "%s", fe.Msg)
		}
		// Each client alone, so that every client's errors show at once;
		// then the whole scenario (names, shared pools, totals).
		var c yamlx.Collector
		for i, cl := range sc.Clients {
			one := Scenario{Name: sc.Name, DurationS: sc.DurationS, Arrivals: sc.Arrivals, Clients: []Client{cl}}
			var fe *FieldError
			if err := one.Validate(); errors.As(err, &fe) {
				if rest, ok := strings.CutPrefix(fe.Path, "clients[0]"); ok { // the client's own
					fe.Path = fmt.Sprintf("clients[%d]%s", i, rest)
					c.Add(locate(fe))
				}
			}
		}
		if c.Len() == 0 {
			c.Add(locate(err))
		}
		return nil, c.Err()
	}
	return sc, nil
}

func decodeScenario(n *yaml.Node, path string) (*Scenario, error) {
	var c yamlx.Collector
	m, err := yamlx.Mapping(n, path, scenarioKeys...)
	c.Add(err)
	if m == nil {
		return nil, c.Err()
	}
	sc := &Scenario{}
	sc.Name, err = m.String("name")
	c.Add(err)
	if dn, err := m.Require("duration_s"); !c.Add(err) {
		d, err := yamlx.Int(dn, m.FieldPath("duration_s"))
		switch {
		case c.Add(err):
		case d <= 0 || d > MaxDurationS:
			c.Errorf(dn, m.FieldPath("duration_s"), "must be between 1 and %d seconds, got %d", MaxDurationS, d)
		default:
			sc.DurationS = int(d)
		}
	}
	if an := m.Get("arrivals"); an != nil {
		sc.Arrivals, err = decodeArrivals(an, m.FieldPath("arrivals"))
		c.Add(err)
	}
	if cn, err := m.Require("clients"); !c.Add(err) {
		items, err := yamlx.Seq(cn, m.FieldPath("clients"))
		c.Add(err)
		for i, item := range items {
			cl, err := decodeClient(item, fmt.Sprintf("%s[%d]", m.FieldPath("clients"), i), sc.DurationS)
			c.Add(err)
			sc.Clients = append(sc.Clients, cl)
		}
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	return sc, nil
}

// decodeArrivals reads either a process name (arrivals: poisson) or a
// mapping (arrivals: {process: clustered, burst_size: 8, spread_s: 0.05}).
func decodeArrivals(n *yaml.Node, path string) (Arrivals, error) {
	var a Arrivals
	pn, pp := n, path
	var m *yamlx.Map
	if n.Kind == yaml.MappingNode {
		var err error
		if m, err = yamlx.Mapping(n, path, arrivalKeys...); err != nil {
			return a, err
		}
		if pn, err = m.Require("process"); err != nil {
			return a, err
		}
		pp = m.FieldPath("process")
	}
	name, err := yamlx.Str(pn, pp)
	if err != nil {
		return a, err
	}
	var ok bool
	if a.Process, ok = ParseArrivalProcess(name); !ok {
		return a, yamlx.Errorf(pn, pp, "unknown arrival process %q (fluid | uniform | poisson | clustered)%s", name, yamlx.DidYouMean(name, arrivalNames))
	}
	if m == nil {
		if a.Process == Clustered {
			return a, yamlx.Errorf(n, path, "clustered arrivals need burst_size and spread_s: {process: clustered, burst_size: N, spread_s: S}")
		}
		return a, nil
	}
	for _, key := range arrivalKeys[1:] {
		if m.Has(key) && a.Process != Clustered {
			return a, yamlx.Errorf(m.Get(key), m.FieldPath(key), "only clustered arrivals take %s (process is %s)", key, a.Process)
		}
	}
	if a.Process != Clustered {
		return a, nil
	}
	bn, err := m.Require("burst_size")
	if err != nil {
		return a, err
	}
	b, err := yamlx.Int(bn, m.FieldPath("burst_size"))
	if err != nil {
		return a, err
	}
	if b < 1 || b > 1<<31-1 {
		return a, yamlx.Errorf(bn, m.FieldPath("burst_size"), "must be a whole number >= 1 of requests per burst, got %d", b)
	}
	a.BurstSize = int(b)
	sn, err := m.Require("spread_s")
	if err != nil {
		return a, err
	}
	if a.SpreadS, err = yamlx.Float(sn, m.FieldPath("spread_s")); err != nil {
		return a, err
	}
	return a, nil
}

func decodeClient(n *yaml.Node, path string, duration int) (Client, error) {
	var cl Client
	var c yamlx.Collector
	m, err := yamlx.Mapping(n, path, clientKeys...)
	c.Add(err)
	if m == nil {
		return cl, c.Err()
	}
	cl.Name, err = m.String("name")
	c.Add(err)
	if class, err := m.String("class"); !c.Add(err) {
		switch class {
		case "legit":
			cl.Class = Legit
		case "abusive":
			cl.Class = Abusive
		default:
			c.Errorf(m.Get("class"), m.FieldPath("class"), "must be legit or abusive, got %q%s", class, yamlx.DidYouMean(class, []string{"legit", "abusive"}))
		}
	}
	if sn := m.Get("stage"); sn != nil {
		s, err := yamlx.Str(sn, m.FieldPath("stage"))
		if s == "-" || s == "–" {
			s = ""
		}
		switch {
		case c.Add(err):
		case cl.Class == Legit && s != "":
			c.Errorf(sn, m.FieldPath("stage"), "only abusive clients have a stage (got %q on a legit client)", s)
		case s == "design":
			cl.Stage = StageDesign
		case s == "code":
			cl.Stage = StageCode
		case s == "none":
			cl.Stage = StageNone
		case s == "":
		default:
			c.Errorf(sn, m.FieldPath("stage"), "must be design, code or none, got %q%s", s, yamlx.DidYouMean(s, []string{"design", "code", "none"}))
		}
	}
	cl.Keys, err = decodeClientKeys(m)
	c.Add(err)
	cl.React, err = decodeReaction(m)
	c.Add(err)
	c.Add(decodeClientResponses(m, &cl))
	if segn, err := m.Require("segments"); !c.Add(err) {
		segs, err := yamlx.Seq(segn, m.FieldPath("segments"))
		c.Add(err)
		for k, sn := range segs {
			g, err := decodeSegment(sn, fmt.Sprintf("%s[%d]", m.FieldPath("segments"), k), duration)
			if !c.Add(err) {
				cl.Segments = append(cl.Segments, g)
			}
		}
	}
	return cl, c.Err()
}

// decodeSegment reads [t0, t1, requests per second].
func decodeSegment(sn *yaml.Node, sp string, duration int) (Segment, error) {
	parts, err := yamlx.Seq(sn, sp)
	if err != nil {
		return Segment{}, err
	}
	if len(parts) != 3 {
		return Segment{}, yamlx.Errorf(sn, sp, "expected [t0, t1, requests per second], got %d numbers", len(parts))
	}
	t0, err := yamlx.Int(parts[0], sp+".t0")
	if err != nil {
		return Segment{}, err
	}
	t1, err := yamlx.Int(parts[1], sp+".t1")
	if err != nil {
		return Segment{}, err
	}
	r, err := yamlx.Float(parts[2], sp+".rate")
	if err != nil {
		return Segment{}, err
	}
	if t0 < -1<<31 || t1 > 1<<31 {
		return Segment{}, yamlx.Errorf(sn, sp, "[%d, %d) reaches outside 0 <= t < duration_s = %d", t0, t1, duration)
	}
	return Segment{T0: int(t0), T1: int(t1), Rate: r}, nil
}

// YAML renders the scenario in the canonical form ParseScenario reads.
func (s *Scenario) YAML() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nduration_s: %d\n", quote(s.Name), s.DurationS)
	switch a := s.Arrivals; a.Process {
	case Fluid: // the default, omitted so that lesson-era hashes stay
	case Clustered:
		fmt.Fprintf(&b, "arrivals: {process: %s, burst_size: %d, spread_s: %s}\n", a.Process, a.BurstSize,
			strconv.FormatFloat(a.SpreadS, 'g', -1, 64))
	default:
		fmt.Fprintf(&b, "arrivals: %s\n", a.Process)
	}
	b.WriteString("clients:\n")
	for _, c := range s.Clients {
		fmt.Fprintf(&b, "  - name: %s\n    class: %s\n", quote(c.Name), c.Class)
		if c.Stage != NoStage {
			fmt.Fprintf(&b, "    stage: %s\n", c.Stage)
		}
		b.WriteString("    segments: [")
		for i, g := range c.Segments {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "[%d, %d, %s]", g.T0, g.T1, strconv.FormatFloat(g.Rate, 'g', -1, 64))
		}
		b.WriteString("]\n")
		c.Keys.writeYAML(&b)
		c.React.writeYAML(&b)
		c.writeResponses(&b)
	}
	return []byte(b.String())
}

// SHA256 is the hex SHA-256 of the scenario's canonical YAML: two scenarios
// with the same hash produce the same traffic.
func (s *Scenario) SHA256() string {
	h := sha256.Sum256(s.YAML())
	return hex.EncodeToString(h[:])
}

func quote(s string) string { return strconv.Quote(s) }
