package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// The vendors' published limits, from their documentation (not from the
// model): AWS WAF RateBasedStatement (EvaluationWindowSec 60, 120, 300,
// 600; Limit 10 to 2,000,000,000), Cloudflare rate limiting parameters
// (period, mitigation_timeout), Fastly ratelimit.check_rate (window 1, 10,
// 60; limit 10 to 70,000,000; ttl 1 to 60 minutes).
var (
	vendorAWSWindows         = []float64{60, 120, 300, 600}
	vendorAWSLimits          = [2]float64{10, 2_000_000_000}
	vendorAWSKeyTypes        = []string{"IP", "FORWARDED_IP", "CUSTOM_KEYS", "CONSTANT"}
	vendorCloudflarePeriods  = []float64{10, 60, 120, 300, 600, 3600}
	vendorCloudflareTimeouts = []float64{0, 10, 60, 120, 300, 600, 3600, 86400}
	vendorFastlyWindows      = []int64{1, 10, 60}
	vendorFastlyLimits       = [2]int64{10, 70_000_000}
)

var managedGolden = []string{
	"aws_waf_rate window_s=300 limit=100",
	"aws_waf_rate window_s=60 limit=10 lag_s=5",
	"cloudflare_rule period_s=60 counts=all requests_per_period=100 mitigation_timeout_s=600",
	"cloudflare_rule period_s=10 counts=admitted requests_per_period=5 mitigation_timeout_s=0",
	"fastly_erl window_s=10 rate=100 penalty_box_s=120",
	"fastly_erl window_s=1 rate=50 penalty_box_s=60 undercount_pct=10",
}

var managedTargets = []string{"aws-waf", "cloudflare", "fastly"}

func TestManagedGolden(t *testing.T) {
	for _, target := range managedTargets {
		for _, label := range managedGolden {
			p, err := model.ParseLabel(label)
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"", "header:X-Api-Key", "global"} {
				if key != "" && !strings.HasPrefix(label, map[string]string{"aws-waf": "aws", "cloudflare": "cloud", "fastly": "fastly"}[target]) {
					continue
				}
				r, err := Export(p, target, Options{Key: key})
				if err != nil {
					t.Fatalf("%s %s: %v", target, label, err)
				}
				var b bytes.Buffer
				if err := Write(&b, r, nil, nil, ""); err != nil {
					t.Fatal(err)
				}
				if err := checkExport(target, b.String()); err != nil {
					t.Errorf("%s %s key %q: %v\n%s", target, label, key, err, b.String())
				}
				name := strings.ReplaceAll(label, " ", "_")
				if key != "" {
					name += "_" + strings.NewReplacer(":", "_").Replace(key)
				}
				golden(t, filepath.Join("testdata", target, name+".txt"), b.Bytes())
			}
		}
	}
}

func TestManagedFit(t *testing.T) {
	for _, c := range []struct {
		label, target string
		fit           Fit
		exported      string
	}{
		{"aws_waf_rate window_s=300 limit=100", "aws-waf", Exact, "aws_waf_rate window_s=300 limit=100"},
		{"aws_waf_rate window_s=60 limit=10 lag_s=5", "aws-waf", Exact, "aws_waf_rate window_s=60 limit=10 lag_s=5"},
		{"sliding_window window_s=60 limit=600", "aws-waf", Nearest, "aws_waf_rate window_s=60 limit=600"},
		{"token_bucket rate=0.1 capacity=5", "aws-waf", Nearest, "aws_waf_rate window_s=60 limit=10"},
		{"cloudflare_rule period_s=10 counts=admitted requests_per_period=5 mitigation_timeout_s=0", "cloudflare", Exact,
			"cloudflare_rule period_s=10 counts=admitted requests_per_period=5 mitigation_timeout_s=0"},
		{"sliding_counter window_s=60 limit=50", "cloudflare", Nearest, "cloudflare_rule period_s=60 counts=admitted requests_per_period=50 mitigation_timeout_s=0"},
		{"sliding_counter window_s=30 limit=50", "cloudflare", Nearest, "cloudflare_rule period_s=60 counts=admitted requests_per_period=100 mitigation_timeout_s=0"},
		{"fastly_erl window_s=10 rate=100 penalty_box_s=120", "fastly", Exact, "fastly_erl window_s=10 rate=100 penalty_box_s=120"},
		{"token_bucket rate=50 capacity=500", "fastly", Nearest, "fastly_erl window_s=10 rate=50 penalty_box_s=60"},
		{"fixed_window window_s=60 limit=60", "fastly", Nearest, "fastly_erl window_s=60 rate=10 penalty_box_s=60"},
		// the managed rules elsewhere: by their rate and requests at once
		{"aws_waf_rate window_s=60 limit=600", "nginx", Nearest, "nginx rate=10 burst=599 delay=599"},
		{"fastly_erl window_s=10 rate=100 penalty_box_s=120", "redis", Nearest, "token_bucket rate=100 capacity=1000"},
		{"cloudflare_rule period_s=60 counts=all requests_per_period=100 mitigation_timeout_s=600", "haproxy", Nearest, "haproxy_rate limit=100 period_s=60 counts=admitted"},
	} {
		p, err := model.ParseLabel(c.label)
		if err != nil {
			t.Fatal(err)
		}
		q, fit, why, err := Translate(p, c.target)
		if err != nil {
			t.Fatalf("%s → %s: %v", c.label, c.target, err)
		}
		if fit != c.fit || q.Canonical() != c.exported {
			t.Errorf("%s → %s: %s %q, want %s %q", c.label, c.target, fit, q.Canonical(), c.fit, c.exported)
		}
		if (fit == Nearest) != (why != "") {
			t.Errorf("%s → %s: fit %s with reason %q", c.label, c.target, fit, why)
		}
	}
}

// Every export to a managed target, of its own algorithm or the nearest
// of another, parses back into the vendor's field names with values within
// the vendor's published limits, and into the policy exported.
func TestManagedVendorLimits(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 9))
	var labels []string
	for range 60 {
		labels = append(labels,
			fmt.Sprintf("aws_waf_rate window_s=%d limit=%d", []int{60, 120, 300, 600}[rng.IntN(4)], 10+rng.Int64N(5000)),
			fmt.Sprintf("cloudflare_rule period_s=%d counts=all requests_per_period=%d mitigation_timeout_s=%d",
				[]int{10, 60, 120, 300, 600, 3600}[rng.IntN(6)], 1+rng.Int64N(5000), []int{0, 10, 60, 120, 300, 600, 3600, 86400}[rng.IntN(8)]),
			fmt.Sprintf("fastly_erl window_s=%d rate=%d penalty_box_s=%d", []int{1, 10, 60}[rng.IntN(3)], 10+rng.IntN(1000), 60*(1+rng.IntN(60))),
			fmt.Sprintf("sliding_counter window_s=%d limit=%d", 1+rng.IntN(7200), rng.IntN(100000)),
			fmt.Sprintf("token_bucket rate=%g capacity=%d", 0.001+rng.Float64()*rng.Float64()*1e4, 1+rng.Int64N(1e6)),
			fmt.Sprintf("concurrency limit=%d service_s=%g", 1+rng.IntN(100), 0.01+rng.Float64()))
	}
	for _, label := range labels {
		p, err := model.ParseLabel(label)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range managedTargets {
			for _, key := range []string{"ip", "global", "header:X-Api-Key"} {
				r, err := Export(p, target, Options{Key: key})
				if err != nil {
					t.Fatalf("%s → %s: %v", label, target, err)
				}
				var back model.Policy
				switch target {
				case "aws-waf":
					back, err = parseAWSWAF(r.Config, key)
				case "cloudflare":
					back, err = parseCloudflare(r.Config, key)
				case "fastly":
					back, err = parseFastly(r.Config, key)
				}
				if err != nil {
					t.Fatalf("%s → %s (key %s): %v\n%s", label, target, key, err, r.Config)
				}
				want := r.Exported
				want.LagS, want.UndercountPct = 0, 0 // properties of the product, not of its configuration
				if target == "cloudflare" {
					back.Counts = want.Counts // a model assumption, not a setting
				}
				if back.Canonical() != want.Canonical() {
					t.Errorf("%s → %s: the configuration reads back as %s, exported %s", label, target, back.Canonical(), want.Canonical())
				}
			}
		}
	}
}

// parseAWSWAF reads a WAFv2 Rule back: exactly the documented fields, the
// documented values.
func parseAWSWAF(conf, key string) (model.Policy, error) {
	var rule struct {
		Name      string
		Priority  int
		Statement struct {
			RateBasedStatement struct {
				Limit               float64
				EvaluationWindowSec float64
				AggregateKeyType    string
				CustomKeys          []struct {
					Header struct {
						Name                string
						TextTransformations []struct {
							Priority int
							Type     string
						}
					}
				}
				ScopeDownStatement map[string]any
			}
		}
		Action struct {
			Block struct{ CustomResponse struct{ ResponseCode int } }
		}
		VisibilityConfig struct {
			SampledRequestsEnabled, CloudWatchMetricsEnabled bool
			MetricName                                       string
		}
	}
	dec := json.NewDecoder(strings.NewReader(conf))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rule); err != nil {
		return model.Policy{}, err
	}
	s := rule.Statement.RateBasedStatement
	switch {
	case !slices.Contains(vendorAWSWindows, s.EvaluationWindowSec):
		return model.Policy{}, fmt.Errorf("EvaluationWindowSec %v", s.EvaluationWindowSec)
	case s.Limit < vendorAWSLimits[0] || s.Limit > vendorAWSLimits[1] || s.Limit != float64(int64(s.Limit)):
		return model.Policy{}, fmt.Errorf("Limit %v", s.Limit)
	case !slices.Contains(vendorAWSKeyTypes, s.AggregateKeyType):
		return model.Policy{}, fmt.Errorf("AggregateKeyType %q", s.AggregateKeyType)
	case s.AggregateKeyType == "CONSTANT" && s.ScopeDownStatement == nil:
		return model.Policy{}, fmt.Errorf("CONSTANT without a ScopeDownStatement")
	case map[string]string{"ip": "IP", "global": "CONSTANT", "header:X-Api-Key": "CUSTOM_KEYS"}[key] != s.AggregateKeyType:
		return model.Policy{}, fmt.Errorf("key %s as %s", key, s.AggregateKeyType)
	case key == "header:X-Api-Key" && (len(s.CustomKeys) != 1 || s.CustomKeys[0].Header.Name != "X-Api-Key"):
		return model.Policy{}, fmt.Errorf("CustomKeys %v", s.CustomKeys)
	case rule.Action.Block.CustomResponse.ResponseCode != 429 || rule.Name == "" || rule.VisibilityConfig.MetricName == "":
		return model.Policy{}, fmt.Errorf("rule %+v", rule)
	}
	return model.Policy{Algorithm: model.AWSWAFRate, WindowS: int(s.EvaluationWindowSec), Limit: int64(s.Limit)}, nil
}

// parseCloudflare reads a Rulesets API body back.
func parseCloudflare(conf, key string) (model.Policy, error) {
	var doc struct {
		Rules []struct {
			Description string `json:"description"`
			Expression  string `json:"expression"`
			Action      string `json:"action"`
			Enabled     bool   `json:"enabled"`
			Ratelimit   struct {
				Characteristics    []string `json:"characteristics"`
				Period             float64  `json:"period"`
				RequestsPerPeriod  float64  `json:"requests_per_period"`
				MitigationTimeout  float64  `json:"mitigation_timeout"`
				CountingExpression string   `json:"counting_expression"`
			} `json:"ratelimit"`
		} `json:"rules"`
	}
	dec := json.NewDecoder(strings.NewReader(conf))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return model.Policy{}, err
	}
	if len(doc.Rules) != 1 {
		return model.Policy{}, fmt.Errorf("%d rules", len(doc.Rules))
	}
	r := doc.Rules[0]
	rl := r.Ratelimit
	wantChars := map[string][]string{"ip": {"cf.colo.id", "ip.src"}, "global": {"cf.colo.id"},
		"header:X-Api-Key": {"cf.colo.id", `http.request.headers["x-api-key"]`}}[key]
	switch {
	case !slices.Contains(vendorCloudflarePeriods, rl.Period):
		return model.Policy{}, fmt.Errorf("period %v", rl.Period)
	case !slices.Contains(vendorCloudflareTimeouts, rl.MitigationTimeout):
		return model.Policy{}, fmt.Errorf("mitigation_timeout %v", rl.MitigationTimeout)
	case rl.RequestsPerPeriod < 1 || rl.RequestsPerPeriod != float64(int64(rl.RequestsPerPeriod)):
		return model.Policy{}, fmt.Errorf("requests_per_period %v", rl.RequestsPerPeriod)
	case !slices.Equal(rl.Characteristics, wantChars):
		return model.Policy{}, fmt.Errorf("characteristics %q", rl.Characteristics)
	case r.Action != "block" || r.Expression == "" || rl.CountingExpression != "" || !r.Enabled: // no count_if: no counting expression
		return model.Policy{}, fmt.Errorf("rule %+v", r)
	}
	return model.Policy{Algorithm: model.CloudflareRule, PeriodS: rl.Period, RequestsPerPeriod: int64(rl.RequestsPerPeriod),
		MitigationTimeoutS: int(rl.MitigationTimeout)}, nil
}

var fastlyLines = []*regexp.Regexp{
	regexp.MustCompile(`^ratecounter (rc_[A-Za-z0-9_]+) \{ \}$`),
	regexp.MustCompile(`^penaltybox (pb_[A-Za-z0-9_]+) \{ \}$`),
	regexp.MustCompile(`^if \(ratelimit\.check_rate\((client\.ip|"all"|digest\.hash_sha256\(req\.http\.[A-Za-z][A-Za-z0-9-]*\)), (rc_[A-Za-z0-9_]+), 1, ([0-9]+), ([0-9]+), (pb_[A-Za-z0-9_]+), ([0-9]+)m\)\) \{$`),
	regexp.MustCompile(`^error 429 "Too Many Requests";$`),
	regexp.MustCompile(`^\}$`),
}

// fastlyStatements reads VCL lines as Fastly does ('#' starts a comment),
// wanting exactly the expected statements.
func fastlyStatements(conf string) ([][]string, error) {
	var lines []string
	for _, l := range strings.Split(conf, "\n") {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		if strings.ContainsAny(l, "\r\\") {
			return nil, fmt.Errorf("an escape or carriage return in %q", l)
		}
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(fastlyLines) {
		return nil, fmt.Errorf("%d statements, want %d: %q", len(lines), len(fastlyLines), lines)
	}
	var m [][]string
	for i, l := range lines {
		sub := fastlyLines[i].FindStringSubmatch(l)
		if sub == nil {
			return nil, fmt.Errorf("line %q", l)
		}
		m = append(m, sub)
	}
	if m[2][2] != m[0][1] || m[2][5] != m[1][1] {
		return nil, fmt.Errorf("check_rate uses %s and %s, declared %s and %s", m[2][2], m[2][5], m[0][1], m[1][1])
	}
	return m, nil
}

// parseFastly reads the VCL back.
func parseFastly(conf, key string) (model.Policy, error) {
	m, err := fastlyStatements(conf)
	if err != nil {
		return model.Policy{}, err
	}
	c := m[2]
	window, _ := strconv.ParseInt(c[3], 10, 64)
	limit, _ := strconv.ParseInt(c[4], 10, 64)
	ttl, _ := strconv.ParseInt(c[6], 10, 64)
	switch {
	case !slices.Contains(vendorFastlyWindows, window):
		return model.Policy{}, fmt.Errorf("window %d", window)
	case limit < vendorFastlyLimits[0] || limit > vendorFastlyLimits[1]:
		return model.Policy{}, fmt.Errorf("limit %d", limit)
	case ttl < 1 || ttl > 60:
		return model.Policy{}, fmt.Errorf("ttl %dm", ttl)
	case map[string]string{"ip": "client.ip", "global": `"all"`, "header:X-Api-Key": "digest.hash_sha256(req.http.X-Api-Key)"}[key] != c[1]:
		return model.Policy{}, fmt.Errorf("entry %s for key %s", c[1], key)
	}
	return model.Policy{Algorithm: model.FastlyERL, WindowS: int(window), Rate: float64(limit), PenaltyBoxS: int(ttl) * 60}, nil
}

// The fuzz checks: the header is comments, the rest the document.
func configOf(out string) string { _, conf, _ := strings.Cut(out, "\n\n"); return conf }

func checkAWSWAF(out string) error {
	var doc map[string]any
	if err := json.Unmarshal([]byte(configOf(out)), &doc); err != nil {
		return err
	}
	for _, key := range []string{"ip", "global", "header:X-Api-Key"} {
		if _, err := parseAWSWAF(configOf(out), key); err == nil {
			return nil
		}
	}
	// another header name
	stmt, _ := doc["Statement"].(map[string]any)
	rb, _ := stmt["RateBasedStatement"].(map[string]any)
	keys, _ := rb["CustomKeys"].([]any)
	if len(keys) != 1 {
		return fmt.Errorf("document %v", doc)
	}
	h, _ := keys[0].(map[string]any)["Header"].(map[string]any)
	name, _ := h["Name"].(string)
	if !regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`).MatchString(name) {
		return fmt.Errorf("header %q", name)
	}
	_, err := parseAWSWAF(strings.Replace(configOf(out), `"Name": "`+name+`"`, `"Name": "X-Api-Key"`, 1), "header:X-Api-Key")
	return err
}

func checkCloudflare(out string) error {
	conf := configOf(out)
	for _, key := range []string{"ip", "global", "header:X-Api-Key"} {
		if _, err := parseCloudflare(conf, key); err == nil {
			return nil
		}
	}
	re := regexp.MustCompile(`"http\.request\.headers\[\\"([a-z][a-z0-9-]*)\\"\]"`)
	sub := re.FindStringSubmatch(conf)
	if sub == nil {
		_, err := parseCloudflare(conf, "ip")
		return err
	}
	_, err := parseCloudflare(strings.Replace(conf, sub[0], `"http.request.headers[\"x-api-key\"]"`, 1), "header:X-Api-Key")
	return err
}

func checkFastly(out string) error {
	_, err := fastlyStatements(configOf(out))
	return err
}

// TestFastlyEntryLength: check_rate never limits an entry over 256 bytes,
// so a header key's entry is its SHA-256 (64 hex characters), and the VCL
// states the documented under-count beside the check.
func TestFastlyEntryLength(t *testing.T) {
	p, _ := model.ParseLabel("fastly_erl window_s=10 rate=100 penalty_box_s=120")
	for key, entry := range map[string]string{
		"ip":                      "client.ip",
		"global":                  `"all"`,
		"header:X-Api-Key":        "digest.hash_sha256(req.http.X-Api-Key)",
		"header:Authorization":    "digest.hash_sha256(req.http.Authorization)",
		"header:X-Very-Long-Name": "digest.hash_sha256(req.http.X-Very-Long-Name)",
	} {
		r, err := Export(p, "fastly", Options{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		m, err := fastlyStatements(r.Config)
		if err != nil {
			t.Fatalf("%s: %v\n%s", key, err, r.Config)
		}
		if m[2][1] != entry {
			t.Errorf("%s: entry %s, want %s", key, m[2][1], entry)
		}
		if strings.Contains(m[2][1], "req.http.") && !strings.HasPrefix(m[2][1], "digest.hash_sha256(") {
			t.Errorf("%s: a raw header value as the entry", key)
		}
		if !strings.Contains(r.Config, "under count by up to 10%: a key is penalized only over about\n# 111.1 requests per second (the limit 100 / 0.9), not 100.") {
			t.Errorf("%s: no under-count beside the check:\n%s", key, r.Config)
		}
	}
}
