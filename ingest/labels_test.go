package ingest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// A small log: key a probes /wp-login (key rule), b posts too fast (rate
// rule), c sends one 500 (request rule), d is listed, e is clean.
func labelLog() string {
	var b strings.Builder
	add := func(host, ts, method, path string, status int) {
		b.WriteString(host + ` - - [01/Jan/2020:00:` + ts + ` +0000] "` + method + " " + path + ` HTTP/1.1" ` +
			map[int]string{200: "200", 500: "500", 401: "401"}[status] + ` 1 "-" "python-requests/2"` + "\n")
	}
	add("a", "00:00", "GET", "/", 200)
	add("a", "00:01", "GET", "/wp-login.php", 200)
	for i := range 5 {
		add("b", "01:0"+string(rune('0'+i)), "POST", "/login", 401)
	}
	add("b", "05:00", "GET", "/", 200)
	add("c", "00:00", "GET", "/x", 500)
	add("c", "00:02", "GET", "/y", 200)
	add("c", "00:03", "GET", "/z", 200)
	add("d", "00:00", "GET", "/", 200)
	add("e", "00:09", "GET", "/", 200)
	return b.String()
}

func TestLabelRules(t *testing.T) {
	rules := []Rule{
		{Name: "wordpress probe", Stage: model.StageDesign, Path: regexp.MustCompile(`^/wp-`)},
		{Name: "login burst", Stage: model.StageCode, Methods: []string{"POST"}, Statuses: []StatusRange{{401, 401}}, Rate: &Rate{Requests: 5, WindowS: 10}},
		{Name: "server errors", Stage: model.StageNone, Scope: ScopeRequest, Statuses: []StatusRange{{500, 599}}},
		{Name: "known bad", Stage: model.StageNone, Keys: map[string]bool{"d": true}},
		{Name: "never", Stage: model.StageNone, Rate: &Rate{Requests: 6, WindowS: 10}, Methods: []string{"POST"}},
	}
	tr, err := build(t, labelLog(), Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		by    [4]int64
		class model.Class
		stage model.Stage
		rule  string
	}{
		"a": {[4]int64{0, 2, 0, 0}, model.Abusive, model.StageDesign, "wordpress probe"},
		"b": {[4]int64{0, 0, 6, 0}, model.Abusive, model.StageCode, "login burst"},
		"c": {[4]int64{2, 0, 0, 1}, model.Legit, model.NoStage, "server errors"},
		"d": {[4]int64{0, 0, 0, 1}, model.Abusive, model.StageNone, "known bad"},
		"e": {[4]int64{1, 0, 0, 0}, model.Legit, model.NoStage, ""},
	}
	for i, k := range tr.Keys {
		w, ok := want[k.Name]
		if !ok {
			t.Fatalf("unexpected key %q", k.Name)
		}
		if k.ByStage != w.by || k.Class != w.class || k.Stage != w.stage || k.Rule != w.rule {
			t.Errorf("key %s: by %v class %v stage %v rule %q, want %v %v %v %q", k.Name, k.ByStage, k.Class, k.Stage, k.Rule, w.by, w.class, w.stage, w.rule)
		}
		var by [4]int64
		for _, l := range tr.Labels(i) {
			by[l]++
		}
		if by != k.ByStage {
			t.Errorf("key %s: labels %v, aggregates %v", k.Name, by, k.ByStage)
		}
	}
	// The rate rule needs 5 POSTs within 10 s: with a 4 s window it fails.
	rules[1].Rate.WindowS = 4
	tr, _ = build(t, labelLog(), Options{Rules: rules})
	for _, k := range tr.Keys {
		if k.Name == "b" && k.Class != model.Legit {
			t.Errorf("b labelled %v with a 4 s window", k.Stage)
		}
	}
}

// The first rule (in order) that marks a request decides its label.
func TestRulePrecedence(t *testing.T) {
	a := Rule{Name: "any GET", Stage: model.StageCode, Methods: []string{"GET"}}
	b := Rule{Name: "wp", Stage: model.StageDesign, Scope: ScopeRequest, Path: regexp.MustCompile(`^/wp-`)}
	tr, _ := build(t, labelLog(), Options{Rules: []Rule{b, a}})
	for _, k := range tr.Keys {
		if k.Name == "a" && k.ByStage != [4]int64{0, 1, 1, 0} {
			t.Errorf("request rule first: %v", k.ByStage)
		}
	}
	tr, _ = build(t, labelLog(), Options{Rules: []Rule{a, b}})
	for _, k := range tr.Keys {
		if k.Name == "a" && k.ByStage != [4]int64{0, 0, 2, 0} {
			t.Errorf("key rule first: %v", k.ByStage)
		}
	}
}

func TestCompositeKeys(t *testing.T) {
	tr, err := build(t, labelLog(), Options{Key: []Field{FieldIP, FieldPathPrefix}})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int64{}
	for _, k := range tr.Keys {
		names[k.Name] = k.Requests
	}
	if names["b /login"] != 5 || names["b /"] != 1 || names["a /wp-login.php"] != 1 || len(names) != 9 {
		t.Errorf("keys %v", names)
	}
	tr, _ = build(t, labelLog(), Options{Key: []Field{FieldUserAgent}})
	if len(tr.Keys) != 1 || tr.Keys[0].Name != "python-requests/2" {
		t.Errorf("user agent keys %+v", tr.Keys)
	}
}

func TestRuleValidate(t *testing.T) {
	for _, r := range []Rule{
		{Stage: model.StageCode, Methods: []string{"GET"}},
		{Name: "x", Methods: []string{"GET"}},
		{Name: "x", Stage: model.StageCode},
		{Name: "x", Stage: model.StageCode, Scope: ScopeRequest, Rate: &Rate{1, 1}},
		{Name: "x", Stage: model.StageCode, Rate: &Rate{0, 1}},
	} {
		if _, err := build(t, labelLog(), Options{Rules: []Rule{r}}); err == nil {
			t.Errorf("rule %+v accepted", r)
		}
	}
}

func mustRe(s string) *regexp.Regexp { return regexp.MustCompile(s) }
