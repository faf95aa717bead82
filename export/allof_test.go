package export

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// Stacked limits to nginx: one zone per component on its own key, all on
// one location. nginx counts a request in every zone or none, so
// rejected_counts none is exact (for nginx components) and all is nearest;
// components nginx has no form for are translated as alone.
func TestStackGolden(t *testing.T) {
	for _, c := range []struct {
		file, label string
		fit         Fit
		why         string
	}{
		{"all_of_exact.txt", "all_of rejected_counts=none [nginx rate=10 burst=5 delay=5 key=account] [nginx rate=0.5 burst=100 delay=100 key=org]", Exact, ""},
		{"all_of_nearest.txt", "all_of rejected_counts=all [token_bucket rate=1 capacity=20] [fixed_window window_s=3600 limit=1000 key=global]", Nearest,
			"all_of[1]: nginx limit_req is a leaky bucket (rate, burst): it has no window; rejected_counts: nginx counts a request in every zone or in none"},
	} {
		p, err := model.ParseLabel(c.label)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Export(p, "nginx", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Fit != c.fit || !strings.HasPrefix(r.Why, c.why) {
			t.Errorf("%s: fit %v (%s), want %v (%s)", c.label, r.Fit, r.Why, c.fit, c.why)
		}
		if r.Exported.Stack == nil || r.Exported.Stack.RejectedCounts != model.RejectedCountedByNone || len(r.Exported.Stack.Components) != len(p.Stack.Components) {
			t.Errorf("%s: exported %s", c.label, r.Exported.Canonical())
		}
		if n := strings.Count(r.Config, "limit_req_zone "); n != len(p.Stack.Components) {
			t.Errorf("%s: %d zones", c.label, n)
		}
		var b bytes.Buffer
		if err := Write(&b, r, nil, nil, ""); err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("testdata", "nginx", c.file), b.Bytes())
	}
	p, _ := model.ParseLabel("all_of rejected_counts=none [nginx rate=10 burst=5]")
	for _, target := range Targets {
		if target == "nginx" || target == "kong" || target == "envoy" || target == "haproxy" { // kong, envoy: the nearest fixed window (TestStackKong)
			continue
		}
		if _, err := Export(p, target, Options{}); err == nil || !strings.Contains(err.Error(), "cannot express stacked limits") {
			t.Errorf("%s: %v", target, err)
		}
	}
	if _, err := Export(p, "nginx", Options{Key: "ip"}); err == nil {
		t.Error("--key on a stack: no error")
	}
}

// With a run that measured both, the cost of nginx's counting is the
// difference between the asked point (rejected_counts all) and the
// exported one (none).
func TestStackNearestInRun(t *testing.T) {
	all, _ := model.ParseLabel("all_of rejected_counts=all [nginx rate=1 burst=2 delay=2] [nginx rate=1 burst=4 delay=4 key=org]")
	none, _ := model.ParseLabel("all_of rejected_counts=none [nginx rate=1 burst=2 delay=2] [nginx rate=1 burst=4 delay=4 key=org]")
	run := []*Point{
		{Policy: all, Label: all.Canonical(), OfferedLegit: 100, OfferedAbusive: 100, FalseCut: 10, Missed: 5},
		{Policy: none, Label: none.Canonical(), PointID: 1, OfferedLegit: 100, OfferedAbusive: 100, FalseCut: 4, Missed: 9},
	}
	res, asked, exported, err := NearestIn(all, "nginx", run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if asked != run[0] || exported != run[1] || res.Fit != Nearest {
		t.Fatalf("asked %v, exported %v, fit %v", asked, exported, res.Fit)
	}
	var b bytes.Buffer
	Write(&b, res, asked, exported, "RUN")
	if !strings.Contains(b.String(), "the translation costs -6.00 pp of legitimate requests cut and +4.00 pp of abusive requests missed") {
		t.Errorf("no cost:\n%s", b.String())
	}
}

// Kong: one rate-limiting plugin with a limit per period, when the
// components are fixed windows of distinct periods on one key.
func TestStackKong(t *testing.T) {
	p, _ := model.ParseLabel("all_of rejected_counts=none [fixed_window window_s=1 limit=10] [fixed_window window_s=3600 limit=1000] [fixed_window window_s=60 limit=100]")
	r, err := Export(p, "kong", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Fit != Exact {
		t.Errorf("fit %v: %s", r.Fit, r.Why)
	}
	var b bytes.Buffer
	Write(&b, r, nil, nil, "")
	golden(t, filepath.Join("testdata", "kong", "all_of_periods.txt"), b.Bytes())
	for label, want := range map[string]string{
		"all_of rejected_counts=none [fixed_window window_s=60 limit=10] [fixed_window window_s=60 limit=100 key=org]": "hangs on org, all_of[0] on client",
		"all_of rejected_counts=none [fixed_window window_s=60 limit=10] [sliding_window window_s=60 limit=100]":       "are both per minute",
	} {
		q, _ := model.ParseLabel(label)
		if _, err := Export(q, "kong", Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", label, err, want)
		}
	}
	q, _ := model.ParseLabel(strings.Replace(p.Canonical(), "=none", "=all", 1))
	if r, err := Export(q, "kong", Options{}); err != nil || r.Fit != Nearest || !strings.Contains(r.Why, "Kong answers 429 when any period") {
		t.Errorf("rejected_counts all: %v %v", r, err)
	}
}

// The shapes of envoyproxy/ratelimit's service config (src/config/config_impl.go:
// YamlRoot, YamlDescriptor, YamlRateLimit), to decode an export strictly.
type envoyRoot struct {
	Domain      string
	Descriptors []envoyDescriptor
}

type envoyDescriptor struct {
	Key       string
	Value     string
	RateLimit *struct {
		RequestsPerUnit uint32 `yaml:"requests_per_unit"`
		Unit            string
	} `yaml:"rate_limit"`
	Descriptors []envoyDescriptor
}

// envoy: one descriptor per component under a generic_key naming it, every
// descriptor counting every request (rejected_counts all exact).
func TestStackEnvoy(t *testing.T) {
	p, _ := model.ParseLabel("all_of rejected_counts=all [fixed_window window_s=1 limit=10] [fixed_window window_s=3600 limit=1000] [fixed_window window_s=60 limit=500 key=org] [fixed_window window_s=86400 limit=100000 key=global]")
	r, err := Export(p, "envoy", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Fit != Exact {
		t.Errorf("fit %v: %s", r.Fit, r.Why)
	}
	var b bytes.Buffer
	Write(&b, r, nil, nil, "")
	golden(t, filepath.Join("testdata", "envoy", "all_of_descriptors.txt"), b.Bytes())
	svc, _, _ := strings.Cut(r.Config, "# envoy route")
	var root envoyRoot
	dec := yaml.NewDecoder(strings.NewReader(svc))
	dec.KnownFields(true)
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("service config: %v\n%s", err, svc)
	}
	var limits []string
	var walk func(path string, ds []envoyDescriptor)
	walk = func(path string, ds []envoyDescriptor) {
		for _, d := range ds {
			k := path + d.Key + "=" + d.Value
			if d.RateLimit != nil {
				limits = append(limits, fmt.Sprintf("%s %d/%s", k, d.RateLimit.RequestsPerUnit, d.RateLimit.Unit))
			}
			walk(k+" ", d.Descriptors)
		}
	}
	walk("", root.Descriptors)
	want := []string{
		"generic_key=ratesweep_0 remote_address= 10/SECOND",
		"generic_key=ratesweep_1 remote_address= 1000/HOUR",
		"generic_key=ratesweep_2 org= 500/MINUTE",
		"generic_key=ratesweep_3 100000/DAY",
	}
	if root.Domain != "ratesweep" || !slices.Equal(limits, want) {
		t.Errorf("domain %q, limits %q, want %q", root.Domain, limits, want)
	}
	q, _ := model.ParseLabel(strings.Replace(p.Canonical(), "=all", "=none", 1))
	if r, err := Export(q, "envoy", Options{}); err != nil || r.Fit != Nearest || !strings.Contains(r.Why, "increments every descriptor's counter") {
		t.Errorf("rejected_counts none: %v %v", r, err)
	}
}

// shadow compares one limit per key: a stacked policy is refused.
func TestStackShadowRefused(t *testing.T) {
	p, _ := model.ParseLabel("all_of rejected_counts=none [nginx rate=1 burst=2]")
	if _, err := Shadow(strings.NewReader(""), p, ShadowOptions{Key: "ip"}); err == nil || !strings.Contains(err.Error(), "shadow each component on its own") {
		t.Errorf("shadow of a stack: %v", err)
	}
}

// haproxyStackLabels are stacked policies exported to HAProxy (golden, and
// haproxy -c under make test-proxies).
var haproxyStackLabels = []string{
	"all_of rejected_counts=none [haproxy_rate limit=10 period_s=1 counts=admitted] [haproxy_rate limit=100 period_s=60 counts=admitted key=org]",
	"all_of rejected_counts=all [haproxy_rate limit=10 period_s=1 counts=all] [haproxy_rate limit=1000 period_s=3600 counts=all key=global]",
}

// HAProxy: one stick table per component; counts admitted is
// rejected_counts none, counts all is all; a component with the other
// counts makes the export nearest.
func TestStackHAProxy(t *testing.T) {
	for i, label := range haproxyStackLabels {
		p, _ := model.ParseLabel(label)
		r, err := Export(p, "haproxy", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Fit != Exact || r.Exported.Canonical() != p.Canonical() {
			t.Errorf("%s: fit %v, exported %s (%s)", label, r.Fit, r.Exported.Canonical(), r.Why)
		}
		var b bytes.Buffer
		Write(&b, r, nil, nil, "")
		golden(t, filepath.Join("testdata", "haproxy", fmt.Sprintf("all_of_%d.txt", i)), b.Bytes())
	}
	p, _ := model.ParseLabel(strings.Replace(haproxyStackLabels[0], "=none", "=all", 1))
	r, err := Export(p, "haproxy", Options{})
	if err != nil || r.Fit != Nearest || !strings.Contains(r.Why, "so all_of[0], all_of[1] count all") {
		t.Errorf("counts against rejected_counts: %v %v", r, err)
	}
	p, _ = model.ParseLabel("all_of rejected_counts=none [haproxy_rate limit=1 period_s=1 counts=admitted] [haproxy_rate limit=2 period_s=1 counts=admitted] [haproxy_rate limit=3 period_s=1 counts=admitted] [haproxy_rate limit=4 period_s=1 counts=admitted]")
	if _, err := Export(p, "haproxy", Options{}); err == nil || !strings.Contains(err.Error(), "tune.stick-counters") {
		t.Errorf("4 components: %v", err)
	}
}
