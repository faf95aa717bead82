package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// compiledSchema compiles Schema(kind) with a real JSON Schema validator
// (santhosh-tekuri/jsonschema, which also checks it against the 2020-12
// meta-schema).
func compiledSchema(t *testing.T, kind string) *jsonschema.Schema {
	t.Helper()
	b, err := Schema(kind)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := SchemaID + kind + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s schema does not compile: %v", kind, err)
	}
	return s
}

// schemaValid validates a YAML tree against s.
func schemaValid(t *testing.T, s *jsonschema.Schema, n *yaml.Node) error {
	t.Helper()
	var v any
	if err := n.Decode(&v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

// The schemas committed beside the configs (which the configs name for
// editors) are the generated ones.
func TestSchemaFilesCurrent(t *testing.T) {
	for kind, file := range map[string]string{"spec": "ratesweep.schema.json", "scenario": "scenario.schema.json"} {
		want, _ := Schema(kind)
		got, err := os.ReadFile(filepath.Join("..", "configs", file))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("configs/%s is not the generated schema (%v): go run ./cmd/ratesweep schema %s > configs/%s", file, err, kind, file)
		}
	}
}

type config struct {
	path, kind string
	root       *yaml.Node
}

// configs returns every spec and scenario under configs/.
func configsUnder(t *testing.T) []config {
	t.Helper()
	var out []config
	err := filepath.WalkDir(filepath.Join("..", "configs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		root := doc.Content[0]
		kind := ""
		switch {
		case mapValue(root, "sweep") != nil:
			kind = "spec"
		case mapValue(root, "clients") != nil:
			kind = "scenario"
		default:
			t.Logf("%s: neither a spec nor a scenario, skipped", p)
			return nil
		}
		out = append(out, config{p, kind, root})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("only %d configs found", len(out))
	}
	return out
}

// decodeTree runs the decoder on a (mutated) tree as if it were the file.
func decodeTree(t *testing.T, c config, root *yaml.Node) error {
	t.Helper()
	data, err := yaml.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	if c.kind == "scenario" {
		_, err := model.ParseScenario(data)
		return err
	}
	_, err = ReadSpec(data, c.path, filepath.Dir(c.path))
	return err
}

// Every config in configs/ is valid to the schema and to the decoder, and
// so is the YAML each spec's run records (Spec.YAML, spec.yaml).
func TestSchemaValidatesEveryConfig(t *testing.T) {
	schemas := map[string]*jsonschema.Schema{"spec": compiledSchema(t, "spec"), "scenario": compiledSchema(t, "scenario")}
	for _, c := range configsUnder(t) {
		if err := schemaValid(t, schemas[c.kind], c.root); err != nil {
			t.Errorf("%s: rejected by the %s schema: %v", c.path, c.kind, err)
		}
		if err := decodeTree(t, c, c.root); err != nil {
			t.Errorf("%s: rejected by the decoder: %v", c.path, err)
		}
		// Editors find the schema from the first line (baselines are
		// written by ratesweep and carry none).
		if !strings.Contains(c.path, "baselines") {
			data, _ := os.ReadFile(c.path)
			first, _, _ := strings.Cut(string(data), "\n")
			ref, ok := strings.CutPrefix(first, "# yaml-language-server: $schema=")
			want := map[string]string{"spec": "ratesweep.schema.json", "scenario": "scenario.schema.json"}[c.kind]
			if _, err := os.Stat(filepath.Join(filepath.Dir(c.path), ref)); !ok || filepath.Base(ref) != want || err != nil {
				t.Errorf("%s: first line %q does not name %s", c.path, first, want)
			}
		}
		if c.kind != "spec" {
			continue
		}
		s, err := LoadSpec(c.path)
		if err != nil {
			t.Fatal(err)
		}
		var rec yaml.Node
		if err := yaml.Unmarshal(s.YAML(), &rec); err != nil {
			t.Fatal(err)
		}
		if err := schemaValid(t, schemas["spec"], rec.Content[0]); err != nil {
			t.Errorf("%s: its recorded spec.yaml is rejected by the schema: %v", c.path, err)
		}
	}
}

// The schema and the decoder agree, config by config, on broken variants
// (both reject) and on edited valid ones (both accept): a field added to one
// and not the other fails here.
func TestSchemaAgreesWithDecoder(t *testing.T) {
	schemas := map[string]*jsonschema.Schema{"spec": compiledSchema(t, "spec"), "scenario": compiledSchema(t, "scenario")}
	type edit struct {
		sets  []string
		del   string // a top-level key to remove
		valid bool
	}
	var specEdits = []edit{
		{sets: []string{"colour=red"}},
		{sets: []string{"seeds=1"}},
		{sets: []string{"seed=abc"}},
		{sets: []string{"seed=-1"}},
		{sets: []string{"replicates=0"}},
		{sets: []string{"name=a/b"}},
		{sets: []string{"sweep=[]"}},
		{sets: []string{"sweep[0].algorithm=leaky_bucket"}},
		{sets: []string{"sweep[0].windw_s=60"}},
		{sets: []string{"sweep[0].key=everyone"}},
		{sets: []string{"sweep[0].nodes=0"}},
		{sets: []string{"sweep[0].nodes={from: 1, to: 4}"}},
		{sets: []string{"sweep[0].nodes={from: 1, to: 4, step: 1, scale: log}"}},
		{sets: []string{"sweep[0].nodes={from: 1, to: 4, stride: 1}"}},
		{sets: []string{"sweep[0].nodes=[]"}},
		{sets: []string{"sweep[0].nodes=[1, 2.5]"}},
		{sets: []string{"sweep[0].sync_ms=fast"}},
		{sets: []string{"sweep[0]={algorithm: token_bucket, rate: 1}"}},
		{sets: []string{"sweep[0]={algorithm: token_bucket, rate: 1, capacity: 5, limit: 3}"}},
		{del: "name"},
		{del: "sweep"},
		{sets: []string{"seed=12"}, valid: true},
		{sets: []string{"replicates=3"}, valid: true},
		{sets: []string{"sweep[0].lb=[round_robin, random]"}, valid: true},
		{sets: []string{"sweep[0].key=[client, address]"}, valid: true},
		{sets: []string{"sweep[0]={algorithm: gcra, rate: {from: 1, to: 100, count: 9, scale: log}, capacity: [1, 10]}"}, valid: true},
		{sets: []string{"sweep[0]={algorithm: nginx, rate: 5, burst: [0, 10], delay: 5}"}, valid: true},
	}
	// Deployments a scenario takes (a log replay refuses nodes with local
	// state and lagged state: docs/compatibility.md).
	var scenarioSpecEdits = []edit{
		{sets: []string{"sweep[0].nodes=[1, 2, 4]"}, valid: true},
		{sets: []string{"sweep[0].state=shared", "sweep[0].sync_ms={from: 0, to: 100, count: 5}"}, valid: true},
	}
	var scenarioEdits = []edit{
		{sets: []string{"colour=red"}},
		{sets: []string{"duration_s=0"}},
		{sets: []string{"duration_s=1.5"}},
		{sets: []string{"arrivals=bursty"}},
		{sets: []string{"arrivals=clustered"}},
		{sets: []string{"arrivals={process: clustered, burst_size: 4}"}},
		{sets: []string{"arrivals={process: poisson, burst_size: 4}"}},
		{sets: []string{"clients[0].clas=legit"}},
		{sets: []string{"clients[0].class=friendly"}},
		{sets: []string{"clients[0].class=legit", "clients[0].stage=code"}},
		{sets: []string{"clients[0].segments=[[0, 10]]"}},
		{sets: []string{"clients[0].segments=[[0, 10, fast]]"}},
		{sets: []string{"clients[0].addresses=0"}},
		{sets: []string{"clients[0].spread=evenly"}},
		{del: "clients"},
		{sets: []string{"arrivals=poisson"}, valid: true},
		{sets: []string{"arrivals={process: clustered, burst_size: 4, spread_s: 0.1}"}, valid: true},
		{sets: []string{"clients[0].addresses=50", "clients[0].spread=random"}, valid: true},
		{sets: []string{"name=renamed"}, valid: true},
	}
	// Traffic sections get their own edits on the log specs.
	var trafficEdits = []edit{
		{sets: []string{"traffic.format=apache"}},
		{sets: []string{"traffic.key=ipaddress"}},
		{sets: []string{"traffic.spread=evenly"}},
		{sets: []string{"traffic.strict=yes please"}},
		{sets: []string{"traffic.top_keys=-1"}},
		{sets: []string{"traffic.path_depth=0"}},
		{sets: []string{"traffic.csv={columns: {time: ts}}"}},
		{sets: []string{"traffic.rules=[{name: x, stage: later}]"}},
		{sets: []string{"traffic.rules=[{name: x, stage: none, statuses: 404}]"}},
		{sets: []string{"traffic.window_origin=start"}},
		{sets: []string{"traffic.window_origin=log_start"}, valid: true},
		{sets: []string{"traffic.top_keys=5", "traffic.spread=none"}, valid: true},
		{sets: []string{"traffic.rules=[{name: x, stage: none, status: [404, 5xx]}]"}, valid: true},
	}
	checked := 0
	for _, c := range configsUnder(t) {
		edits := scenarioEdits
		if c.kind == "spec" {
			edits = specEdits
			if mapValue(c.root, "traffic") != nil {
				edits = append(slices.Clone(specEdits), trafficEdits...)
			}
		}
		if c.kind == "spec" && mapValue(c.root, "traffic") == nil {
			edits = append(slices.Clone(edits), scenarioSpecEdits...)
		}
		for _, ed := range edits {
			root := deepCopy(c.root)
			if err := applyOverrides(root, ed.sets, nil); err != nil {
				continue // the path is not in this config (e.g. a scenario file, not inline)
			}
			if ed.del != "" {
				for i := 0; i+1 < len(root.Content); i += 2 {
					if root.Content[i].Value == ed.del {
						root.Content = slices.Delete(root.Content, i, i+2)
						break
					}
				}
			}
			serr := schemaValid(t, schemas[c.kind], root)
			derr := decodeTree(t, c, root)
			checked++
			switch {
			case ed.valid && (serr != nil || derr != nil):
				t.Errorf("%s %v%s: a valid edit, but schema: %v; decoder: %v", c.path, ed.sets, ed.del, serr, derr)
			case !ed.valid && (serr == nil || derr == nil):
				t.Errorf("%s %v%s: a broken edit, but schema: %v; decoder: %v", c.path, ed.sets, ed.del, serr, derr)
			}
		}
	}
	if checked < 200 {
		t.Errorf("only %d edits checked", checked)
	}
}

func deepCopy(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = nil
	for _, k := range n.Content {
		c.Content = append(c.Content, deepCopy(k))
	}
	return &c
}

// The schema's properties are the decoder's field lists.
func TestSchemaFieldsAreTheDecoders(t *testing.T) {
	b, _ := Schema("spec")
	var s struct {
		Defs map[string]struct {
			Properties    map[string]any `json:"properties"`
			PropertyNames struct {
				Enum []string `json:"enum"`
			} `json:"propertyNames"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for name, d := range s.Defs {
		if d.PropertyNames.Enum == nil {
			continue
		}
		var props []string
		for k := range d.Properties {
			props = append(props, k)
		}
		slices.Sort(props)
		names := slices.Sorted(slices.Values(d.PropertyNames.Enum))
		if !slices.Equal(props, names) {
			t.Errorf("$defs/%s: properties %v, decoder's fields %v: give the new field a schema in model/, ingest/ or sweep/schema.go, then go run ./cmd/ratesweep schema > configs/ratesweep.schema.json (and schema scenario > configs/scenario.schema.json)", name, props, names)
		}
	}
	var params []string
	for _, p := range model.Params {
		params = append(params, p.Name)
	}
	params = append(params, "algorithm", blockLevelsKey, "count_if") // block_levels and count_if: an entry's, not axes
	slices.Sort(params)
	var entry []string
	for k := range s.Defs["entry"].Properties {
		entry = append(entry, k)
	}
	slices.Sort(entry)
	if !slices.Equal(entry, params) {
		t.Errorf("entry properties %v, model.Params %v", entry, params)
	}
}
