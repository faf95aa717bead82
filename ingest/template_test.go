package ingest

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
)

// The envoy, HAProxy and nginx samples (the vendors' defaults and a custom
// format string each) read as the same requests as the CSV of the same
// trace (multiline.csv), times as precise as the format writes them.
func TestTemplateSamples(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}
	noUA := func(i int, w *want) { w.ua = "" }
	cases := []struct {
		file   string
		opt    ReaderOptions
		detect bool // auto-detected as opt.Format
		adjust func(i int, w *want)
	}{
		{"envoy.log", ReaderOptions{Format: FormatEnvoyText}, true, nil},
		{"envoy-custom.log", ReaderOptions{Format: FormatEnvoyText,
			Template: `%START_TIME(%s.%3f)% %DOWNSTREAM_REMOTE_ADDRESS% %REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE% "%REQ(USER-AGENT)%"`}, false, nil},
		{"haproxy.log", ReaderOptions{Format: FormatHAProxy}, true, noUA},
		{"haproxy-custom.log", ReaderOptions{Format: FormatHAProxy,
			Template: `%ci [%tr] %HM %HU %ST %{+Q}[req.hdr(user-agent)]`}, false, nil},
		{"nginx-export.log", ReaderOptions{Format: FormatNginx,
			Template: `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $limit_req_status $msec`}, false, nil},
		// The exported log_format read as Combined (detected): $msec still
		// gives the milliseconds.
		{"nginx-export.log", ReaderOptions{}, false, nil},
		{"nginx-custom.log", ReaderOptions{Format: FormatNginx, TrustedProxies: trusted,
			Template: `$msec $remote_addr "$http_x_forwarded_for" $request_method $request_uri $status "$http_user_agent"`}, false, nil},
	}
	for _, c := range cases {
		t.Run(c.file+"/"+c.opt.Format.String(), func(t *testing.T) {
			path := filepath.Join("testdata", "formats", c.file)
			got, rd := readAll(t, path, c.opt)
			if rd.Malformed() != 0 || len(got) != len(sampleRequests) {
				t.Fatalf("%d malformed %v, %d requests: %+v", rd.Malformed(), rd.Samples(), len(got), got)
			}
			for i, w := range sampleRequests {
				if c.adjust != nil {
					c.adjust(i, &w)
				}
				if got[i] != w {
					t.Errorf("request %d:\n got %+v\nwant %+v", i, got[i], w)
				}
			}
			if c.detect {
				auto, rd := readAll(t, path, ReaderOptions{})
				if rd.Format() != c.opt.Format || len(auto) != len(got) {
					t.Errorf("detected %v (%d requests)", rd.Format(), len(auto))
				}
			}
			// The same rows as the CSV of the trace: keys and times.
			tr, err := Load(context.Background(), path, Options{Reader: c.opt})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Load(context.Background(), filepath.Join("testdata", "formats", "multiline.csv"), Options{Reader: ReaderOptions{Format: FormatCSV,
				CSV: CSVOptions{TimeFormat: TimeUnix, Columns: map[string]string{"time": "ts", "ip": "client", "method": "method", "path": "url", "status": "status", "user_agent": "agent"}}}})
			if err != nil {
				t.Fatal(err)
			}
			for i := range ref.Keys {
				if tr.Keys[i].Name != ref.Keys[i].Name || !equalTimes(tr.Times(i), ref.Times(i)) {
					t.Errorf("key %d: %s %v, CSV %s %v", i, tr.Keys[i].Name, tr.Times(i), ref.Keys[i].Name, ref.Times(i))
				}
			}
		})
	}
}

func equalTimes(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// nginx's $msec is preferred to $time_local wherever a log_format has
// both, in either order; $limit_req_status is counted.
func TestNginxMsecPrecision(t *testing.T) {
	log := "1767225600.123 [01/Jan/2026:00:00:00 +0000] 1.2.3.4 REJECTED\n"
	tr, err := build(t, log, Options{Reader: ReaderOptions{Format: FormatNginx, Template: "$msec [$time_local] $remote_addr $limit_req_status"}})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.SubSecond || tr.Times(0)[0] != 123_000_000 || tr.Stats.LimitReqStatus["REJECTED"] != 1 {
		t.Errorf("times %v sub-second %v limit_req %v", tr.Times(0), tr.SubSecond, tr.Stats.LimitReqStatus)
	}
}

// Format strings that cannot be read are refused with the reason.
func TestTemplateErrors(t *testing.T) {
	for _, c := range []struct {
		f      Format
		format string
		want   string
	}{
		{FormatNginx, "$remote_addr $status", "no time variable ($msec"},
		{FormatNginx, "$msec$remote_addr", "not separated"},
		{FormatNginx, "${msec", "closing }"},
		{FormatEnvoyText, "%START_TIME% %REQ(:PATH)", "without a closing %"},
		{FormatHAProxy, "%ci %ST", "no time variable (%t"},
	} {
		if _, err := newTemplate(c.f, c.format, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %q: %v, want %q", c.f, c.format, err, c.want)
		}
	}
}

// The client address the proxy believes: the first X-Forwarded-For hop
// from the right that is not a trusted proxy.
func TestTrustedProxies(t *testing.T) {
	var trusted []netip.Prefix
	for _, s := range []string{"10.0.0.0/8", "192.0.2.1", "2001:db8:ffff::/48"} {
		p, err := ParseTrustedProxy(s)
		if err != nil {
			t.Fatal(err)
		}
		trusted = append(trusted, p)
	}
	tm, err := newTemplate(FormatNginx, `$msec $remote_addr "$http_x_forwarded_for"`, trusted)
	if err != nil {
		t.Fatal(err)
	}
	none, _ := newTemplate(FormatNginx, `$msec $remote_addr "$http_x_forwarded_for"`, nil)
	xffOnly, _ := newTemplate(FormatNginx, `$msec "$http_x_forwarded_for"`, trusted)
	for _, c := range []struct {
		tm         *template
		line, want string
	}{
		{tm, `1 10.1.1.1 "203.0.113.9, 198.51.100.1, 10.2.2.2"`, "198.51.100.1"},
		{tm, `1 192.0.2.1 "203.0.113.9"`, "203.0.113.9"},
		{tm, `1 198.51.100.7 "203.0.113.9"`, "198.51.100.7"}, // the peer is not trusted: its header is not believed
		{tm, `1 10.1.1.1 "10.3.3.3, 10.2.2.2"`, "10.3.3.3"},  // all trusted: the first hop
		{tm, `1 10.1.1.1 "-"`, "10.1.1.1"},
		{tm, `1 10.1.1.1 "2001:db8:1::5, 2001:db8:ffff::1"`, "2001:db8:1::5"},
		{none, `1 10.1.1.1 "203.0.113.9"`, "10.1.1.1"},
		{xffOnly, `1 "203.0.113.9, 198.51.100.1:4567"`, "198.51.100.1"},
	} {
		var rec Record
		if err := c.tm.parse([]byte(c.line), &rec); err != nil || string(rec.Host) != c.want {
			t.Errorf("%s: %q %v, want %q", c.line, rec.Host, err, c.want)
		}
	}
	if _, err := ParseTrustedProxy("10.0.0/8"); err == nil {
		t.Error("bad prefix accepted")
	}
}

// The format string fields and trusted_proxies decode, check their format,
// and read back from the canonical YAML.
func TestTemplateConfig(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "spec.yaml", `traffic:
  log: access.log
  format: nginx
  nginx_log_format: '$msec $remote_addr "$http_x_forwarded_for"'
  trusted_proxies: [10.0.0.0/8, 192.0.2.1]
`)
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	ro := cfg.Options.Reader
	if ro.Template != `$msec $remote_addr "$http_x_forwarded_for"` || len(ro.TrustedProxies) != 2 || ro.TrustedProxies[1].String() != "192.0.2.1/32" {
		t.Errorf("reader options %+v", ro)
	}
	back, err := LoadConfig(writeFile(t, dir, "canon.yaml", string(cfg.YAML())))
	if err != nil || string(back.YAML()) != string(cfg.YAML()) {
		t.Errorf("round trip: %v\n%s", err, cfg.YAML())
	}
	for body, want := range map[string]string{
		"traffic:\n  log: a\n  format: nginx\n  nginx_log_format: '$remote_addr'\n": `:4: traffic.nginx_log_format: format string "$remote_addr": no time variable`,
		"traffic:\n  log: a\n  format: combined\n  envoy_format: '%START_TIME%'\n":  `traffic.envoy_format: only with format: envoy-text`,
		"traffic:\n  log: a\n  format: combined\n  trusted_proxies: 10.0.0.1\n":     `traffic.trusted_proxies: only with format envoy-text, haproxy, nginx or a JSON format`,
		"traffic:\n  log: a\n  format: haproxy\n  trusted_proxies: [10.0.0/8]\n":    `"10.0.0/8" is not an address or a CIDR prefix`,
	} {
		_, err := LoadConfig(writeFile(t, dir, "bad.yaml", body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

// The real Combined logs read as format nginx by nginx's combined
// log_format give the rows format combined gives: the same requests, keys
// and times.
func TestNginxCombinedEqualsCombined(t *testing.T) {
	for _, log := range []string{"antlr_org_20030902/access.log.gz", "elastic_apache_logs/apache_logs.gz"} {
		path := filepath.Join("..", "configs", "examples", "logs", log)
		ref, err := Load(context.Background(), path, Options{Reader: ReaderOptions{Format: FormatCombined}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := Load(context.Background(), path, Options{Reader: ReaderOptions{Format: FormatNginx}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Requests() != ref.Requests() || len(got.Keys) != len(ref.Keys) || got.Stats.Malformed != ref.Stats.Malformed {
			t.Fatalf("%s: %d requests %d keys %d malformed, combined %d %d %d", log, got.Requests(), len(got.Keys), got.Stats.Malformed,
				ref.Requests(), len(ref.Keys), ref.Stats.Malformed)
		}
		for i := range ref.Keys {
			if got.Keys[i].Name != ref.Keys[i].Name || !equalTimes(got.Times(i), ref.Times(i)) {
				t.Fatalf("%s: key %d %s, combined %s", log, i, got.Keys[i].Name, ref.Keys[i].Name)
			}
		}
	}
}
