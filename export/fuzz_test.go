package export

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ratesweep/ratesweep/model"
)

// exportInput is one fuzz input: what a user (or a run directory's name,
// or a run's labels) can put into an export.
type exportInput struct {
	Target         uint8 // index into Targets
	Zone, Key, Run string
	Label          string // the policy label; also the label of the run's points
	Nodes          uint8
}

// exportSeeds are the fuzz seeds: ordinary exports for every target, and
// the injections that once reached a configuration.
var exportSeeds = func() []exportInput {
	var s []exportInput
	at := func(target string) uint8 { return uint8(slices.Index(Targets, target)) }
	for i := range Targets {
		for _, l := range goldenPolicies {
			s = append(s, exportInput{Target: uint8(i), Label: l, Run: "out/lesson"})
		}
		for _, k := range []string{"ip", "global", "header:X-Account"} {
			s = append(s, exportInput{Target: uint8(i), Key: k, Label: "token_bucket rate=0.3 capacity=7", Nodes: 3})
		}
	}
	long := "header:" + strings.Repeat("X", 20000)
	for _, in := range []exportInput{
		{Target: at("nginx"), Zone: "rs:10m rate=1000r/s;#", Label: "token_bucket rate=2 capacity=10"},
		{Target: at("nginx"), Run: "out/x\nlimit_req_dry_run on;", Label: "nginx rate=1 burst=0"},
		{Target: at("haproxy"), Run: "out/x\nhttp-request allow", Label: "sliding_counter window_s=10 limit=50"},
		{Target: at("traefik"), Run: "x\r\nhttp:\n  middlewares: {}", Label: "token_bucket rate=2 capacity=10"},
		{Target: at("envoy"), Run: "x\u2028domain: other\u0085y\u2029z", Label: "fixed_window window_s=60 limit=600"},
		{Target: at("go"), Run: "x\nfunc init() { panic(1) }", Label: "token_bucket rate=2 capacity=10"},
		{Target: at("redis"), Run: "x */ \n os.Exit(1) //", Label: "token_bucket rate=0.3 capacity=7"},
		{Target: at("nginx"), Key: "header:X-A\nlimit_req_dry_run on;", Label: "nginx rate=1 burst=0"},
		{Target: at("haproxy"), Key: "header:X-A,1", Label: "sliding_counter window_s=10 limit=50"},
		{Target: at("haproxy"), Key: "header:X-A|b", Label: "sliding_counter window_s=10 limit=50"},
		{Target: at("haproxy"), Key: "header:X-A]", Label: "sliding_counter window_s=10 limit=50"},
		{Target: at("nginx"), Key: "header:X-A#", Label: "nginx rate=1 burst=0"},
		{Target: at("kong"), Key: `header:X\A`, Label: "fixed_window window_s=60 limit=600"},
		{Target: at("envoy"), Key: long, Label: "fixed_window window_s=60 limit=600"},
		{Target: at("envoy"), Zone: "x\nname: other", Key: "global", Label: "token_bucket rate=10 capacity=900"},
		{Target: at("envoy"), Zone: "api", Key: "global", Label: "token_bucket rate=1000000000 capacity=4611686018427387904"},
		{Target: at("envoy"), Zone: "api", Key: "global", Label: "gcra rate=0.3333333333333333 capacity=2", Nodes: 7},
		{Target: at("traefik"), Key: "header:X-A\n        average: 1000", Label: "token_bucket rate=2 capacity=10"},
		{Target: at("go"), Key: "header:X\")\n}\nfunc init() {", Label: "token_bucket rate=2 capacity=10"},
		{Target: at("nginx"), Label: "nginx rate=1.5 burst=3"},
		{Target: at("redis"), Label: "nginx rate=1.5 burst=3"},
		{Target: at("haproxy"), Label: "sliding_counter window_s=3000000 limit=50"},
		{Target: at("haproxy"), Label: "sliding_counter window_s=2000000 limit=50"},
		{Target: at("haproxy"), Label: "token_bucket rate=0.000001 capacity=50"},
		{Target: at("nginx"), Label: "token_bucket rate=1000000000 capacity=4611686018427387904"},
		{Target: at("kong"), Label: "fixed_window window_s=86400 limit=9000000000000"},
		{Target: at("aws-waf"), Zone: "a\",\"Priority\": 9", Label: "aws_waf_rate window_s=60 limit=10"},
		{Target: at("aws-waf"), Key: "header:X\"}]}", Label: "aws_waf_rate window_s=60 limit=10"},
		{Target: at("aws-waf"), Run: "x\n{\"Name\": \"y\"}", Label: "sliding_window window_s=7 limit=3"},
		{Target: at("cloudflare"), Key: "header:X\"] or true or [\"", Label: "cloudflare_rule period_s=10 counts=all requests_per_period=1 mitigation_timeout_s=10"},
		{Target: at("cloudflare"), Run: "x\n\"expression\": \"false\"", Label: "sliding_counter window_s=60 limit=0"},
		{Target: at("cloudflare"), Label: "token_bucket rate=1000000000 capacity=4611686018427387904"},
		{Target: at("fastly"), Zone: "a-b", Key: "header:X-Api-Key", Label: "fastly_erl window_s=60 rate=70000000 penalty_box_s=3600"},
		{Target: at("fastly"), Key: "header:X; error 200", Label: "fastly_erl window_s=1 rate=10 penalty_box_s=60"},
		{Target: at("fastly"), Run: "x\n}\nsub vcl_recv {", Label: "concurrency limit=3 service_s=0.5"},
	} {
		s = append(s, in)
	}
	return s
}()

// FuzzExport shows that whatever the inputs, an export is either refused
// or has exactly the target's expected directives (parsed back as the
// target reads them), with every other line a comment.
func FuzzExport(f *testing.F) {
	for _, in := range exportSeeds {
		f.Add(in.Target, in.Zone, in.Key, in.Run, in.Label, in.Nodes)
	}
	f.Fuzz(func(t *testing.T, target uint8, zone, key, run, label string, nodes uint8) {
		in := exportInput{target, zone, key, run, label, nodes}
		out, r := exportOf(in)
		if r == nil {
			return
		}
		if err := checkExport(r.Target, out); err != nil {
			t.Fatalf("%+v: %v\n%s", in, err, out)
		}
	})
}

// exportOf writes in's export as the command does (nil when refused), with
// a run whose points are labelled in.Label.
func exportOf(in exportInput) (string, *Result) {
	target := Targets[int(in.Target)%len(Targets)]
	p, err := model.ParseLabel(in.Label)
	if err != nil {
		return "", nil
	}
	r, err := Export(p, target, Options{Key: in.Key, Zone: in.Zone, Nodes: int(in.Nodes)})
	if err != nil {
		return "", nil
	}
	pt := &Point{Label: in.Label + in.Run, OfferedLegit: 10, OfferedAbusive: 10, FalseCut: 1, Missed: 2}
	var b bytes.Buffer
	if err := Write(&b, r, pt, pt, in.Run); err != nil {
		return "", nil
	}
	return b.String(), r
}

// TestInjection: the inputs that once reached a configuration are refused,
// or stay inside a comment.
func TestInjection(t *testing.T) {
	for _, in := range exportSeeds {
		out, r := exportOf(in)
		if r == nil {
			continue
		}
		if err := checkExport(r.Target, out); err != nil {
			t.Errorf("%+v: %v\n%s", in, err, out)
		}
	}
	p, _ := model.ParseLabel("token_bucket rate=2 capacity=10")
	for _, o := range []Options{
		{Zone: "rs:10m rate=1000r/s;#"}, {Zone: strings.Repeat("z", 65)}, {Zone: "a b"}, {Zone: "é"},
		{Key: "header:X-A\nlimit_req_dry_run on;"}, {Key: "header:X-A,1"}, {Key: "header:X|Y"}, {Key: "header:X]"},
		{Key: "header:X#"}, {Key: `header:X\Y`}, {Key: "header:" + strings.Repeat("X", 20000)}, {Key: "header:"},
		{Key: "header:X_Y"}, {Key: "header:-X"}, {Key: "cookie"},
	} {
		_, err := Export(p, "nginx", o)
		if err == nil || len(err.Error()) > 200 || !strings.HasPrefix(err.Error(), "--zone: ") && !strings.HasPrefix(err.Error(), "--key: ") {
			t.Errorf("%.80q: error %v, want a short error naming the flag", o.Zone+o.Key, err)
		}
	}
	for in, want := range map[string]string{
		"out/lesson": "out/lesson", "a\nb\rc": `a\nb\rc`, "a\xadb": `a\xadb`, "a\u2028b\u0085c": `a\u2028b\u0085c`,
		`a\b`: `a\\b`, "a\uFFFDb é": "a\uFFFDb é",
	} {
		if got := escapeLine(in); got != want {
			t.Errorf("escapeLine(%q) = %q, want %q", in, got, want)
		}
	}
	// A run directory with a line break stays in the comment, escaped.
	r, _ := Export(model.Policy{Algorithm: model.Nginx, Rate: 1}, "nginx", Options{})
	var b bytes.Buffer
	Write(&b, r, nil, nil, "out/x\nlimit_req_dry_run on;")
	if !strings.Contains(b.String(), "# in run out/x\\nlimit_req_dry_run on;:\n") {
		t.Errorf("run directory not escaped:\n%s", b.String())
	}
}

// checkExport parses out as target reads it and reports any directive
// that is not one of the expected ones, once each, with valid values.
func checkExport(target, out string) error {
	header, _, ok := strings.Cut(out, "\n\n")
	if !ok {
		return fmt.Errorf("no blank line after the header")
	}
	prefix := "# "
	if target == "go" || target == "redis" {
		prefix = "// "
	}
	for _, l := range strings.Split(header, "\n") {
		if !strings.HasPrefix(l, prefix) || strings.ContainsAny(l, "\r\v\f\u0085\u2028\u2029") {
			return fmt.Errorf("header line %q", l)
		}
	}
	switch target {
	case "nginx":
		return checkNginx(out)
	case "haproxy":
		return checkHAProxy(out)
	case "envoy", "kong", "traefik":
		return checkYAML(target, out)
	case "go":
		return checkGo(out)
	case "redis":
		return checkRedis(out)
	case "aws-waf":
		return checkAWSWAF(out)
	case "cloudflare":
		return checkCloudflare(out)
	case "fastly":
		return checkFastly(out)
	case "fail2ban":
		_, err := parseFail2ban(configOf(out))
		return err
	}
	return fmt.Errorf("no parser for %s", target)
}

var (
	nginxArgs = map[string]*regexp.Regexp{
		"limit_req_zone":   regexp.MustCompile(`^(\$binary_remote_addr|"global"|\$http_[a-z][a-z0-9_]*) zone=[A-Za-z0-9_-]+:10m rate=[1-9][0-9]*r/[sm]$`),
		"limit_req_status": regexp.MustCompile(`^429$`),
		"log_format":       regexp.MustCompile(`^[A-Za-z0-9_-]+ '\$remote_addr - \$remote_user \[\$time_local\] "\$request" \$status \$body_bytes_sent "\$http_referer" "\$http_user_agent" \$limit_req_status \$msec( "\$http_[a-z][a-z0-9_]*")?'$`),
		// the lines to paste into a server block, commented out
		"limit_req":         regexp.MustCompile(`^zone=[A-Za-z0-9_-]+( burst=[1-9][0-9]*)?( nodelay| delay=[1-9][0-9]*)?$`),
		"access_log":        regexp.MustCompile(`^/var/log/nginx/[A-Za-z0-9_-]+\.log [A-Za-z0-9_-]+$`),
		"limit_req_dry_run": regexp.MustCompile(`^on$`),
	}
)

// nginxDirectives splits an nginx configuration into directives as nginx
// does: words separated by blanks, quoted strings, '#' comments to the end
// of the line, ';' ending a directive.
func nginxDirectives(conf string) ([][2]string, error) {
	var out [][2]string
	var words []string
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(conf); i++ {
		c := conf[i]
		switch {
		case c == '#' && !inWord:
			for i < len(conf) && conf[i] != '\n' {
				i++
			}
		case c == '\'' || c == '"':
			j := strings.IndexByte(conf[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated quote")
			}
			w.WriteString(conf[i : i+j+2])
			inWord = true
			i += j + 1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			flush()
		case c == ';':
			flush()
			if len(words) == 0 {
				return nil, fmt.Errorf("empty directive")
			}
			out = append(out, [2]string{words[0], strings.Join(words[1:], " ")})
			words = nil
		case c == '{' || c == '}':
			return nil, fmt.Errorf("a block")
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	flush()
	if len(words) > 0 {
		return nil, fmt.Errorf("unterminated directive %q", words)
	}
	return out, nil
}

func checkNginx(out string) error {
	live, err := nginxDirectives(out)
	if err != nil {
		return err
	}
	if names := dirNames(live); !slices.Equal(names, []string{"limit_req_zone", "limit_req_status", "log_format"}) {
		return fmt.Errorf("directives %q", names)
	}
	// The commented lines meant to be pasted: uncommented, exactly these.
	var pasted []string
	_, conf, _ := strings.Cut(out, "\n\n")
	for _, l := range strings.Split(conf, "\n") {
		if s, ok := strings.CutPrefix(l, "#   "); ok && !strings.HasPrefix(s, " ") {
			pasted = append(pasted, s)
		}
	}
	paste, err := nginxDirectives(strings.Join(pasted, "\n"))
	if err != nil {
		return err
	}
	if names := dirNames(paste); !slices.Equal(names, []string{"limit_req", "access_log", "limit_req_dry_run"}) {
		return fmt.Errorf("lines to paste %q", names)
	}
	for _, d := range append(live, paste...) {
		if !nginxArgs[d[0]].MatchString(d[1]) {
			return fmt.Errorf("%s %q", d[0], d[1])
		}
	}
	return nil
}

func dirNames(ds [][2]string) []string {
	var s []string
	for _, d := range ds {
		s = append(s, d[0])
	}
	return s
}

// haproxyRecipes are the two forms of an HAProxy export, line by line:
// gpc0 incremented on allow (counts admitted) and http_req_rate (counts
// all).
var haproxyRecipes = [][]*regexp.Regexp{{
	regexp.MustCompile(`^stick-table type (ip|string len (8|64)) size 1m expire [1-9][0-9]*m?s store gpc0,gpc0_rate\([1-9][0-9]*m?s\)$`),
	regexp.MustCompile(`^http-request track-sc0 (src|str\(all\)|req\.hdr\([A-Za-z][A-Za-z0-9-]*\))$`),
	regexp.MustCompile(`^http-request deny deny_status 429 if \{ sc0_gpc0_rate ge [0-9]+ \}$`),
	regexp.MustCompile(`^http-request sc-inc-gpc0\(0\)$`),
}, {
	regexp.MustCompile(`^stick-table type (ip|string len (8|64)) size 1m expire [1-9][0-9]*m?s store http_req_rate\([1-9][0-9]*m?s\)$`),
	regexp.MustCompile(`^http-request track-sc0 (src|str\(all\)|req\.hdr\([A-Za-z][A-Za-z0-9-]*\))$`),
	regexp.MustCompile(`^http-request deny deny_status 429 if \{ sc0_http_req_rate gt [0-9]+ \}$`),
}}

// checkHAProxy reads the lines as HAProxy does ('#' starts a comment, blank
// lines are skipped) and wants one recipe's lines, each of its form.
func checkHAProxy(out string) error {
	var err error
	for _, r := range haproxyRecipes {
		if err = checkHAProxyLines(out, r); err == nil {
			return nil
		}
	}
	return err
}

func checkHAProxyLines(out string, haproxyLines []*regexp.Regexp) error {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		if strings.ContainsAny(l, "\r\\\"'") {
			return fmt.Errorf("a quote, escape or carriage return in %q", l)
		}
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(haproxyLines) {
		return fmt.Errorf("%d lines, want %d: %q", len(lines), len(haproxyLines), lines)
	}
	for i, l := range lines {
		if !haproxyLines[i].MatchString(l) {
			return fmt.Errorf("line %q", l)
		}
	}
	return nil
}

// yamlShapes are the expected documents: every mapping's keys, with "*"
// for the one key that the zone names.
var yamlShapes = map[string]string{
	"envoy":         `{domain: s, descriptors: [{key: s, rate_limit: {unit: s, requests_per_unit: n}}]}`,
	"envoy route":   `{rate_limits: [{actions: [{"*": x}]}]}`,
	"envoy local":   `{name: s, typed_config: {"@type": s, stat_prefix: s, token_bucket: {max_tokens: n, tokens_per_fill: n, fill_interval: s}, filter_enabled: {runtime_key: s, default_value: {numerator: n, denominator: s}}, filter_enforced: {runtime_key: s, default_value: {numerator: n, denominator: s}}, local_rate_limit_per_downstream_connection: b}}`,
	"envoy keyed":   `{name: s, typed_config: {"@type": s, stat_prefix: s, token_bucket: {max_tokens: n, tokens_per_fill: n, fill_interval: s}, descriptors: [{entries: [{key: s, value: s}], token_bucket: {max_tokens: n, tokens_per_fill: n, fill_interval: s}}], always_consume_default_token_bucket: b, max_dynamic_descriptors: n, filter_enabled: {runtime_key: s, default_value: {numerator: n, denominator: s}}, filter_enforced: {runtime_key: s, default_value: {numerator: n, denominator: s}}, local_rate_limit_per_downstream_connection: b}}`,
	"kong":          `{plugins: [{name: s, config: {"*": n, limit_by: s, policy: s, error_code: n, fault_tolerant: b}}]}`,
	"kong header":   `{plugins: [{name: s, config: {"*": n, limit_by: s, header_name: s, policy: s, error_code: n, fault_tolerant: b}}]}`,
	"traefik":       `{http: {middlewares: {"*": {rateLimit: {average: n, period: s, burst: n, sourceCriterion: {"*": x}}}}}}`,
	"traefik depth": `{http: {middlewares: {"*": {rateLimit: {average: n, period: s, burst: n, sourceCriterion: {ipStrategy: {depth: n}}}}}}}`,
}

func checkYAML(target, out string) error {
	var doc any
	if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
		return err
	}
	shapes := []string{yamlShapes[target], yamlShapes[target+" header"], yamlShapes[target+" depth"], yamlShapes[target+" local"], yamlShapes[target+" keyed"]}
	if !slices.ContainsFunc(shapes, func(s string) bool { return s != "" && sameShape(doc, mustYAML(s)) }) {
		return fmt.Errorf("document %v", doc)
	}
	if target == "envoy" && strings.Contains(out, "\n# envoy route") { // the route lines to paste, commented out
		var route []string
		on := false
		_, conf, _ := strings.Cut(out, "\n\n")
		for _, l := range strings.Split(conf, "\n") {
			if strings.HasPrefix(l, "# envoy route") {
				on = true
			} else if s, ok := strings.CutPrefix(l, "#   "); on && ok {
				route = append(route, s)
			}
		}
		var r any
		if err := yaml.Unmarshal([]byte(strings.Join(route, "\n")), &r); err != nil {
			return fmt.Errorf("route: %v", err)
		}
		if !sameShape(r, mustYAML(yamlShapes["envoy route"])) {
			return fmt.Errorf("route %v", r)
		}
	}
	return nil
}

func mustYAML(s string) any {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

// sameShape reports whether doc has the keys of shape (a mapping with one
// "*" key matches any single key) and scalars of its kinds: s a string,
// n an integer, b a boolean, x anything.
func sameShape(doc, shape any) bool {
	switch sh := shape.(type) {
	case map[string]any:
		d, ok := doc.(map[string]any)
		if !ok || len(d) != len(sh) {
			return false
		}
		if v, ok := sh["*"]; ok && len(sh) > 0 {
			for k, dv := range d {
				if _, named := sh[k]; named {
					continue
				}
				if !zoneRe.MatchString(k) || !sameShape(dv, v) {
					return false
				}
			}
			for k, sv := range sh {
				if k != "*" && !sameShape(d[k], sv) {
					return false
				}
			}
			return true
		}
		for k, sv := range sh {
			if dv, ok := d[k]; !ok || !sameShape(dv, sv) {
				return false
			}
		}
		return true
	case []any:
		d, ok := doc.([]any)
		return ok && len(d) == len(sh) && sameShape(d[0], sh[0])
	case string:
		switch sh {
		case "s":
			_, ok := doc.(string)
			return ok
		case "n":
			_, ok := doc.(int)
			return ok
		case "b":
			_, ok := doc.(bool)
			return ok
		}
		return true
	}
	return false
}

var goImport = regexp.MustCompile(`^// import \(("[a-z./]+"; )*"[a-z./]+"\)$`)

// checkGo parses the Go export as a file: one function, limit, and every
// other line a comment.
func checkGo(out string) error {
	f, err := parser.ParseFile(token.NewFileSet(), "export.go", "package p\n"+out, parser.ParseComments)
	if err != nil {
		return err
	}
	if len(f.Decls) != 1 {
		return fmt.Errorf("%d declarations", len(f.Decls))
	}
	if fd, ok := f.Decls[0].(*ast.FuncDecl); !ok || fd.Name.Name != "limit" || len(fd.Body.List) != 3 {
		return fmt.Errorf("declaration %T", f.Decls[0])
	}
	return goComments(out)
}

// checkRedis parses the Redis snippet as a function body: its six
// statements.
func checkRedis(out string) error {
	f, err := parser.ParseFile(token.NewFileSet(), "export.go", "package p\nfunc f() {\n"+out+"\n}\n", parser.ParseComments)
	if err != nil {
		return err
	}
	if n := len(f.Decls[0].(*ast.FuncDecl).Body.List); len(f.Decls) != 1 || n != 6 {
		return fmt.Errorf("%d declarations, %d statements", len(f.Decls), n)
	}
	return goComments(out)
}

// goComments checks the import line of a Go export.
func goComments(out string) error {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "// import") {
			n++
			if !goImport.MatchString(l) {
				return fmt.Errorf("import line %q", l)
			}
		}
	}
	if n != 1 {
		return fmt.Errorf("%d import lines", n)
	}
	return nil
}

// corpus reads the fuzz corpus in testdata/fuzz/FuzzExport (go test's
// format), for the tests that feed it to the real proxies.
func corpus(t *testing.T) []exportInput {
	out := slices.Clone(exportSeeds)
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzExport", "*"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var vals []string
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
			open, close := strings.IndexByte(l, '('), strings.LastIndexByte(l, ')')
			if open < 0 || close < open {
				t.Fatalf("%s: line %q", name, l)
			}
			vals = append(vals, l[open+1:close])
		}
		if len(vals) != 6 {
			t.Fatalf("%s: %d values", name, len(vals))
		}
		str := func(s string) string {
			u, err := strconv.Unquote(s)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return u
		}
		num := func(s string) uint8 {
			if u, err := strconv.Unquote(s); err == nil && len(u) == 1 {
				return u[0]
			}
			n, err := strconv.ParseUint(s, 0, 8)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return uint8(n)
		}
		out = append(out, exportInput{num(vals[0]), str(vals[1]), str(vals[2]), str(vals[3]), str(vals[4]), num(vals[5])})
	}
	return out
}
