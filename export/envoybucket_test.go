package export

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// envoyFill: tokens_per_fill / fill_interval is the rate exactly, the
// interval at least 50 ms, whole rates per second.
func TestEnvoyFill(t *testing.T) {
	cases := []struct {
		rate       float64
		tokens, ms int64
		ok         bool
	}{
		{10, 10, 1000, true},
		{1, 1, 1000, true},
		{1000, 1000, 1000, true},
		{0.5, 1, 2000, true},
		{1.6666666666666667, 1, 600, true},
		{2.5, 1, 400, true},
		{0.001, 1, 1_000_000, true},
		{1e9, 1_000_000_000, 1000, true},
		{1.0 / 86400, 1, 86_400_000, true},
		{1.0 / 86401, 0, 0, false}, // beyond a day
		{3.14159265358979, 0, 0, false},
		{0, 0, 0, false},
	}
	for _, c := range cases {
		tokens, ms, ok := envoyFill(c.rate)
		if tokens != c.tokens || ms != c.ms || ok != c.ok {
			t.Errorf("envoyFill(%v) = %d per %d ms, %v; want %d per %d ms, %v", c.rate, tokens, ms, ok, c.tokens, c.ms, c.ok)
		}
		if ok && (ms < minEnvoyFillMs || float64(tokens)*1000/float64(ms) != c.rate) {
			t.Errorf("envoyFill(%v): %d per %d ms is not the rate", c.rate, tokens, ms)
		}
	}
}

// The local_ratelimit filter's fields, with the types of envoy's
// LocalRateLimit and TokenBucket protos, as in envoy's published example.
type envoyLocalFilter struct {
	Name        string `yaml:"name"`
	TypedConfig struct {
		Type        string `yaml:"@type"`
		StatPrefix  string `yaml:"stat_prefix"`
		TokenBucket struct {
			MaxTokens     uint32 `yaml:"max_tokens"`
			TokensPerFill uint32 `yaml:"tokens_per_fill"`
			FillInterval  string `yaml:"fill_interval"`
		} `yaml:"token_bucket"`
		FilterEnabled  envoyFraction `yaml:"filter_enabled"`
		FilterEnforced envoyFraction `yaml:"filter_enforced"`
		PerConnection  bool          `yaml:"local_rate_limit_per_downstream_connection"`
		// Per-client keys: one dynamic descriptor (LocalRateLimitDescriptor:
		// entries of key and value, its own token_bucket).
		Descriptors []struct {
			Entries []struct {
				Key   string  `yaml:"key"`
				Value *string `yaml:"value"`
			} `yaml:"entries"`
			TokenBucket struct {
				MaxTokens     uint32 `yaml:"max_tokens"`
				TokensPerFill uint32 `yaml:"tokens_per_fill"`
				FillInterval  string `yaml:"fill_interval"`
			} `yaml:"token_bucket"`
		} `yaml:"descriptors"`
		AlwaysConsume         *bool   `yaml:"always_consume_default_token_bucket"` // BoolValue
		MaxDynamicDescriptors *uint32 `yaml:"max_dynamic_descriptors"`             // UInt32Value
	} `yaml:"typed_config"`
}

type envoyFraction struct {
	RuntimeKey   string `yaml:"runtime_key"`
	DefaultValue struct {
		Numerator   uint32 `yaml:"numerator"`
		Denominator string `yaml:"denominator"`
	} `yaml:"default_value"`
}

var envoyDurationRe = regexp.MustCompile(`^[0-9]+\.[0-9]{3}s$`)

// A token bucket on key global: envoy's local_ratelimit, exact; every
// field known to envoy's schema and of its type; the bucket the policy's.
func TestEnvoyLocalRateLimit(t *testing.T) {
	cases := []struct {
		label, exported string
		fit             Fit
		nodes           int
		tokens          uint32
		fill            string
		max             uint32
	}{
		{"token_bucket rate=10 capacity=900", "token_bucket rate=10 capacity=900", Exact, 1, 10, "\"1.000s\"", 900},
		{"token_bucket rate=1.6666666666666667 capacity=100", "token_bucket rate=1.6666666666666667 capacity=100", Exact, 1, 1, "\"0.600s\"", 100},
		{"gcra rate=2 capacity=3", "token_bucket rate=2 capacity=3", Equivalent, 1, 2, "\"1.000s\"", 3},
		{"nginx rate=20 burst=5 delay=5", "token_bucket rate=20 capacity=6", Equivalent, 1, 20, "\"1.000s\"", 6},
		{"token_bucket rate=30 capacity=90", "token_bucket rate=30 capacity=90", Exact, 3, 10, "\"1.000s\"", 30},
		{"token_bucket rate=3.14159 capacity=10", "token_bucket rate=3 capacity=10", Nearest, 1, 3, "\"1.000s\"", 10},
		{"token_bucket rate=1000000000 capacity=70", "token_bucket rate=1000000000 capacity=70", Exact, 7, 8000000, "\"0.056s\"", 10}, // 1e9/7 r/s: 8,000,000 per 56 ms
	}
	for _, c := range cases {
		p, err := model.ParseLabel(c.label)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Export(p, "envoy", Options{Key: "global", Nodes: c.nodes})
		if err != nil {
			t.Fatalf("%s: %v", c.label, err)
		}
		if r.Fit != c.fit || r.Exported.Canonical() != c.exported {
			t.Errorf("%s: %v %s (%s), want %v %s", c.label, r.Fit, r.Exported.Canonical(), r.Why, c.fit, c.exported)
		}
		body := strings.SplitN(r.Config, "\n", 2)[1]
		var f envoyLocalFilter
		dec := yaml.NewDecoder(strings.NewReader(body))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("%s: %v\n%s", c.label, err, r.Config)
		}
		tc := f.TypedConfig
		if f.Name != "envoy.filters.http.local_ratelimit" || tc.Type != "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit" || tc.StatPrefix != "ratesweep" {
			t.Errorf("%s: filter %+v", c.label, f)
		}
		if !envoyDurationRe.MatchString(tc.TokenBucket.FillInterval) || !strings.Contains(r.Config, "fill_interval: "+c.fill+"\n") {
			t.Errorf("%s: fill_interval %q, want %s", c.label, tc.TokenBucket.FillInterval, c.fill)
		}
		if tc.TokenBucket.TokensPerFill != c.tokens || tc.TokenBucket.MaxTokens != c.max {
			t.Errorf("%s: %d per fill, max %d; want %d, %d", c.label, tc.TokenBucket.TokensPerFill, tc.TokenBucket.MaxTokens, c.tokens, c.max)
		}
		for _, fr := range []envoyFraction{tc.FilterEnabled, tc.FilterEnforced} {
			if fr.RuntimeKey == "" || fr.DefaultValue.Numerator != 100 || fr.DefaultValue.Denominator != "HUNDRED" {
				t.Errorf("%s: fraction %+v", c.label, fr)
			}
		}
		if tc.PerConnection {
			t.Errorf("%s: a bucket per connection", c.label)
		}
	}
	// A per-client key: a bucket per value (a dynamic descriptor), exact.
	p, _ := model.ParseLabel("token_bucket rate=10 capacity=900")
	for key, want := range map[string][2]string{
		"ip":               {"remote_address", "- remote_address: {}"},
		"header:X-Api-Key": {"client_key", "- request_headers: {header_name: X-Api-Key, descriptor_key: client_key}"},
	} {
		r, err := Export(p, "envoy", Options{Key: key})
		if err != nil || r.Fit != Exact || r.Exported.Canonical() != p.Canonical() {
			t.Fatalf("key %s: %v %v %s (%s)", key, err, r.Fit, r.Exported.Canonical(), r.Why)
		}
		var f envoyLocalFilter
		dec := yaml.NewDecoder(strings.NewReader(strings.SplitN(r.Config, "\n", 2)[1]))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("key %s: %v\n%s", key, err, r.Config)
		}
		tc := f.TypedConfig
		if len(tc.Descriptors) != 1 || len(tc.Descriptors[0].Entries) != 1 {
			t.Fatalf("key %s: descriptors %+v", key, tc.Descriptors)
		}
		d := tc.Descriptors[0]
		if e := d.Entries[0]; e.Key != want[0] || e.Value == nil || *e.Value != "" {
			t.Errorf("key %s: entry %+v, want key %s with an empty value", key, e, want[0])
		}
		if d.TokenBucket != tc.TokenBucket || d.TokenBucket.MaxTokens != 900 || d.TokenBucket.TokensPerFill != 10 || d.TokenBucket.FillInterval != "1.000s" {
			t.Errorf("key %s: descriptor bucket %+v, filter bucket %+v", key, d.TokenBucket, tc.TokenBucket)
		}
		if tc.AlwaysConsume == nil || *tc.AlwaysConsume || tc.MaxDynamicDescriptors == nil || *tc.MaxDynamicDescriptors != envoyDynamicDescriptors {
			t.Errorf("key %s: always_consume_default_token_bucket %v, max_dynamic_descriptors %v", key, tc.AlwaysConsume, tc.MaxDynamicDescriptors)
		}
		if !strings.Contains(r.Config, "#         "+want[1]+"\n") {
			t.Errorf("key %s: no route action %q in\n%s", key, want[1], r.Config)
		}
		if key == "ip" {
			var b bytes.Buffer
			if err := Write(&b, r, nil, nil, ""); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "envoy", "local_ratelimit_ip.txt"), b.Bytes())
		}
	}
	r, err := Export(p, "envoy", Options{Key: "global"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, r, nil, nil, ""); err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "envoy", "local_ratelimit_global.txt"), b.Bytes())
}

// With a run, a token bucket that envoy writes exactly on any key is
// described by its own metrics.
func TestEnvoyBucketRunMetrics(t *testing.T) {
	bucket := &Point{Label: "token_bucket rate=10 capacity=600", OfferedLegit: 100, OfferedAbusive: 100, FalseCut: 1, Missed: 2}
	window := &Point{Label: "fixed_window window_s=60 limit=600", OfferedLegit: 100, OfferedAbusive: 100, FalseCut: 3, Missed: 4}
	for _, pt := range []*Point{bucket, window} {
		p, err := model.ParseLabel(pt.Label)
		if err != nil {
			t.Fatal(err)
		}
		pt.Policy = p
	}
	run := []*Point{bucket, window}
	for key, want := range map[string]*Point{"ip": bucket, "global": bucket} {
		res, asked, exported, err := NewIndex(run).Nearest(bucket.Policy, "envoy", Options{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if asked != bucket || exported != want || res.Exported.Canonical() != want.Label {
			t.Errorf("key %s: exported %s (point %v), want %s", key, res.Exported.Canonical(), exported, want.Label)
		}
	}
}
