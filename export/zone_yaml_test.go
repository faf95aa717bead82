package export

import (
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// yamlNames pass the zone and header grammars but mean something else to
// a YAML reader when written bare: a sequence indicator, null, booleans
// (YAML 1.1's too), numbers.
var yamlNames = []string{"-", "null", "true", "0x1F", "Null", "yes", "on", "1e3", "0o17", "1_000", "---", "ratesweep"}

// yamlChild is the value under key in the mapping n, whose key must read
// back as the string key; nil when it is absent.
func yamlChild(t *testing.T, n *yaml.Node, key string) *yaml.Node {
	t.Helper()
	if n.Kind == yaml.DocumentNode {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		t.Fatalf("looking for %q in a node of kind %v", key, n.Kind)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Value == key && k.ShortTag() == "!!str" {
			return n.Content[i+1]
		}
	}
	return nil
}

// yamlString fails unless n is the string want.
func yamlString(t *testing.T, what string, n *yaml.Node, want string) {
	t.Helper()
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" || n.Value != want {
		got := "missing"
		if n != nil {
			got = n.ShortTag() + " " + n.Value
		}
		t.Errorf("%s: reads back as %s, want the string %q", what, got, want)
	}
}

// parseYAML parses the YAML document of an export (up to its commented
// part when cut is not "").
func parseYAML(t *testing.T, what, doc, cut string) *yaml.Node {
	t.Helper()
	if cut != "" {
		doc, _, _ = strings.Cut(doc, cut)
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, doc)
	}
	return &n
}

// A --zone (and a header name) that YAML would read as null, a boolean, a
// number or a sequence is written so that the exported YAML reads back as
// the exact string: envoy's domain and generic_key values, Traefik's
// middleware key, the header names of envoy, Kong and Traefik.
func TestZonesReadBackFromYAML(t *testing.T) {
	fixed, _ := model.ParseLabel("fixed_window window_s=60 limit=600")
	bucket, _ := model.ParseLabel("token_bucket rate=10 capacity=900")
	stack, _ := model.ParseLabel("all_of rejected_counts=all [fixed_window window_s=1 limit=10] [fixed_window window_s=60 limit=500 key=org]")
	for _, z := range yamlNames {
		r, err := Export(fixed, "envoy", Options{Zone: z})
		if err != nil {
			t.Fatalf("envoy --zone %q: %v", z, err)
		}
		yamlString(t, "envoy domain of --zone "+z, yamlChild(t, parseYAML(t, "envoy --zone "+z, r.Config, ""), "domain"), z)

		if r, err = Export(stack, "envoy", Options{Zone: z}); err != nil {
			t.Fatalf("envoy all_of --zone %q: %v", z, err)
		}
		doc := parseYAML(t, "envoy all_of --zone "+z, r.Config, "")
		yamlString(t, "envoy all_of domain of --zone "+z, yamlChild(t, doc, "domain"), z)
		descs := yamlChild(t, doc, "descriptors")
		if descs == nil || len(descs.Content) != 2 {
			t.Fatalf("envoy all_of --zone %q: descriptors %v", z, descs)
		}
		for i, d := range descs.Content {
			yamlString(t, "envoy all_of descriptor value of --zone "+z, yamlChild(t, d, "value"), z+"_"+string(rune('0'+i)))
		}
		// The route's rate_limits are a commented YAML block: uncommented,
		// they read back too.
		_, route, _ := strings.Cut(r.Config, "#   rate_limits:\n")
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(route), "\n") {
			lines = append(lines, strings.TrimPrefix(l, "#   "))
		}
		var acts []struct {
			Actions []map[string]map[string]any
		}
		if err := yaml.Unmarshal([]byte(strings.Join(lines, "\n")), &acts); err != nil || len(acts) != 2 {
			t.Fatalf("envoy all_of --zone %q: rate_limits %v: %v", z, acts, err)
		}
		for i, a := range acts {
			if v, ok := a.Actions[0]["generic_key"]["descriptor_value"].(string); !ok || v != z+"_"+string(rune('0'+i)) {
				t.Errorf("envoy all_of --zone %q: descriptor_value %#v", z, a.Actions[0]["generic_key"]["descriptor_value"])
			}
		}

		if r, err = Export(bucket, "traefik", Options{Zone: z}); err != nil {
			t.Fatalf("traefik --zone %q: %v", z, err)
		}
		mw := yamlChild(t, yamlChild(t, parseYAML(t, "traefik --zone "+z, r.Config, ""), "http"), "middlewares")
		if mw == nil || yamlChild(t, mw, z) == nil {
			t.Errorf("traefik --zone %q: no middleware key that reads back as the string:\n%s", z, r.Config)
		}
	}
	// Header names: letters, digits and '-', so only words YAML reads
	// otherwise (null, booleans) are at stake.
	for _, h := range []string{"null", "Null", "true", "yes", "on", "Y", "X-Api-Key"} {
		r, err := Export(fixed, "envoy", Options{Key: "header:" + h})
		if err != nil {
			t.Fatalf("envoy --key header:%s: %v", h, err)
		}
		_, route, _ := strings.Cut(r.Config, "#         - request_headers: ")
		var rh map[string]any
		if err := yaml.Unmarshal([]byte(strings.TrimSpace(route)), &rh); err != nil || rh["header_name"] != h {
			t.Errorf("envoy --key header:%s: header_name %#v (%v)", h, rh["header_name"], err)
		}
		if r, err = Export(fixed, "kong", Options{Key: "header:" + h}); err != nil {
			t.Fatalf("kong --key header:%s: %v", h, err)
		}
		doc := parseYAML(t, "kong", r.Config, "")
		plugins := yamlChild(t, doc, "plugins")
		yamlString(t, "kong header_name of header:"+h, yamlChild(t, yamlChild(t, plugins.Content[0], "config"), "header_name"), h)
		if r, err = Export(bucket, "traefik", Options{Key: "header:" + h}); err != nil {
			t.Fatalf("traefik --key header:%s: %v", h, err)
		}
		mw := yamlChild(t, yamlChild(t, yamlChild(t, parseYAML(t, "traefik", r.Config, ""), "http"), "middlewares"), "ratesweep")
		sc := yamlChild(t, yamlChild(t, mw, "rateLimit"), "sourceCriterion")
		yamlString(t, "traefik requestHeaderName of header:"+h, yamlChild(t, sc, "requestHeaderName"), h)
	}
}
