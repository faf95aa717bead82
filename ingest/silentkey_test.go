package ingest

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// A request whose key field is missing, empty or "-" is malformed with its
// own reason, never counted under a shared key "-".
func TestMissingKeyIsMalformed(t *testing.T) {
	clf := `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "curl"
- - - [01/Jan/2026:00:00:01 +0000] "GET / HTTP/1.1" 200 1 "-" "curl"
1.2.3.4 - - [01/Jan/2026:00:00:02 +0000] "GET / HTTP/1.1" 200 1 "-" "-"
`
	jsonl := `{"t":1767225600,"ip":"1.2.3.4","ua":"curl"}
{"t":1767225601,"ua":"curl"}
{"t":1767225602,"ip":"","ua":"curl"}
`
	jopt := ReaderOptions{Format: FormatJSONL, CSV: CSVOptions{Columns: map[string]string{"time": "t", "ip": "ip", "user_agent": "ua"}}}
	for _, c := range []struct {
		name, log string
		opt       Options
		reason    string
		malformed int64
	}{
		{"clf ip", clf, Options{}, "no ip to key by (missing, empty or -)", 1},
		{"clf user", clf, Options{Key: []Field{FieldUser}}, "no user to key by (missing, empty or -)", 3},
		{"clf ip and user_agent", clf, Options{Key: []Field{FieldIP, FieldUserAgent}}, "no user_agent to key by (missing, empty or -)", 2},
		{"jsonl ip", jsonl, Options{Reader: jopt}, "no ip to key by (missing, empty or -)", 2},
	} {
		tr, err := build(t, c.log, c.opt)
		if c.malformed == 3 {
			if err == nil || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if tr.Stats.Malformed != c.malformed || tr.Stats.Reasons[c.reason] == 0 {
			t.Errorf("%s: malformed %d, reasons %v", c.name, tr.Stats.Malformed, tr.Stats.Reasons)
		}
		for _, k := range tr.Keys {
			if k.Name == "-" || strings.Contains(k.Name, " -") || strings.HasPrefix(k.Name, "- ") {
				t.Errorf("%s: shared key %q", c.name, k.Name)
			}
		}
	}
}

// NUL bytes before a line (the gap of a truncated file) never reach a key.
func TestNULsBeforeALine(t *testing.T) {
	log := `1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1` + "\n" +
		"\x00\x00\x00\x00" + `1.2.3.4 - - [01/Jan/2026:00:00:01 +0000] "GET / HTTP/1.1" 200 1` + "\n" +
		"\x00\x00\x00\x00\n"
	tr, err := build(t, log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Keys) != 1 || tr.Keys[0].Name != "1.2.3.4" || tr.Keys[0].Requests != 2 || tr.Stats.NULPrefixed != 2 || tr.Stats.Blank != 1 {
		t.Errorf("keys %+v stats %+v", tr.Keys, tr.Stats)
	}
	// A NUL inside the key field is malformed.
	tr, err = build(t, log+"1.2\x003.4 - - [01/Jan/2026:00:00:02 +0000] \"GET / HTTP/1.1\" 200 1\n", Options{})
	if err != nil || tr.Stats.Reasons["the ip to key by holds a NUL byte"] != 1 {
		t.Errorf("%v %v", err, tr.Stats.Reasons)
	}
}

// A W3C log without the key's column is an error naming the columns it has.
func TestW3CWithoutKeyColumn(t *testing.T) {
	log := "#Fields: date time cs-method cs-uri-stem sc-status\n2026-01-01 00:00:00 GET / 200\n"
	_, err := build(t, log, Options{})
	if err == nil || !strings.Contains(err.Error(), "no column for the key field ip (c-ip); its columns: date time cs-method cs-uri-stem sc-status") {
		t.Errorf("%v", err)
	}
	if _, err := build(t, log, Options{Key: []Field{FieldMethod}}); err != nil {
		t.Errorf("keyed by method: %v", err)
	}
}

// Caddy's preset keys by client_ip, the address Caddy believes behind a
// trusted proxy; a log from before Caddy 2.7 (no client_ip) by remote_ip.
func TestCaddyClientIP(t *testing.T) {
	log := `{"ts":1767225600.1,"request":{"remote_ip":"10.0.0.1","client_ip":"203.0.113.7","method":"GET","uri":"/"},"status":200}
{"ts":1767225600.2,"request":{"remote_ip":"10.0.0.1","client_ip":"198.51.100.4","method":"GET","uri":"/"},"status":200}
`
	tr, err := build(t, log, Options{})
	if err != nil || tr.Format != FormatCaddy || len(tr.Keys) != 2 || tr.Keys[0].Name == "10.0.0.1" {
		t.Fatalf("%v %v %+v", err, tr.Format, tr.Keys)
	}
	old := strings.ReplaceAll(strings.ReplaceAll(log, `"client_ip":"203.0.113.7",`, ""), `"client_ip":"198.51.100.4",`, "")
	tr, err = build(t, old, Options{})
	if err != nil || tr.Format != FormatCaddy || len(tr.Keys) != 1 || tr.Keys[0].Name != "10.0.0.1" {
		t.Fatalf("before 2.7: %v %v %+v", err, tr.Format, tr.Keys)
	}
}

// A leap second is read in RFC 3339 as in CLF: the next second.
func TestLeapSecond(t *testing.T) {
	sec, ns, err := parseRFC3339([]byte("2016-12-31T23:59:60.5Z"))
	clf, err2 := parseCLFTime([]byte("31/Dec/2016:23:59:60 +0000"))
	if err != nil || err2 != nil || sec != 1483228800 || ns != 500_000_000 || clf != sec {
		t.Errorf("rfc3339 %d.%09d %v, clf %d %v", sec, ns, err, clf, err2)
	}
	if _, _, err := parseRFC3339([]byte("2016-12-31T23:59:61Z")); err == nil {
		t.Error(":61 accepted")
	}
}

// An ALB line is timed at the request's creation but written at its
// completion: a WebSocket that lasted longer than max_backwards_s is not
// malformed.
func TestALBLongWebSocket(t *testing.T) {
	line := func(done, created, ip string) string {
		return `wss ` + done + ` app/lb/1 ` + ip + `:1 10.0.0.1:80 0.000 0.001 0.000 101 101 1 1 "GET wss://h:443/ws HTTP/1.1" "ua" - - arn "Root=1" "h" "-" 0 ` + created + ` "forward" "-" "-" "10.0.0.1:80" "101" "-" "-"` + "\n"
	}
	log := line("2026-01-01T01:00:00.000000Z", "2026-01-01T00:59:59.000000Z", "1.1.1.1") +
		line("2026-01-01T01:00:01.000000Z", "2026-01-01T00:00:00.000000Z", "2.2.2.2") // open for an hour
	tr, err := build(t, log, Options{})
	if err != nil || tr.Requests() != 2 || tr.Stats.Malformed != 0 || tr.DurationS != 3600 {
		t.Errorf("%v %+v duration %d", err, tr.Stats, tr.DurationS)
	}
}

// One key with most of the requests is warned about, with the setting that
// keys by the client behind it.
func TestKeyWarning(t *testing.T) {
	var main, plain strings.Builder
	for i := range 60 {
		lb, client := "10.0.0.5", fmt.Sprintf("203.0.113.%d", i%20)
		if i%5 == 0 {
			lb = client // some clients come directly
		}
		fmt.Fprintf(&main, "%s - - [01/Jan/2026:00:00:%02d +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"curl\" \"%s\"\n", lb, i, client)
		fmt.Fprintf(&plain, "%s - - [01/Jan/2026:00:00:%02d +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"curl\"\n", lb, i)
	}
	nginxMain := `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$http_x_forwarded_for"`
	for _, c := range []struct {
		name, log string
		opt       Options
		want      string
	}{
		{"combined with xff", main.String(), Options{}, "key 10.0.0.5 holds 80% of the requests: a load balancer or proxy in front of the server? 60 lines end with an X-Forwarded-For address (nginx's main format): read them with format: nginx"},
		{"nginx main", main.String(), Options{Reader: ReaderOptions{Format: FormatNginx, Template: nginxMain}}, "60 requests log X-Forwarded-For: trusted_proxies: [10.0.0.5]"},
		{"plain", plain.String(), Options{}, "log the client it forwards"},
		{"keyed by path", plain.String(), Options{Key: []Field{FieldPath}}, ""},
	} {
		tr, err := build(t, c.log, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		got := tr.KeyWarning(c.opt.Key)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// With the balancer trusted, the clients are the keys and nothing is
	// warned about.
	p, _ := ParseTrustedProxy("10.0.0.5")
	tr, err := build(t, main.String(), Options{Reader: ReaderOptions{Format: FormatNginx, Template: nginxMain, TrustedProxies: []netip.Prefix{p}}})
	if err != nil || len(tr.Keys) != 20 || tr.KeyWarning(nil) != "" {
		t.Errorf("%v keys %d warning %q", err, len(tr.Keys), tr.KeyWarning(nil))
	}
}
