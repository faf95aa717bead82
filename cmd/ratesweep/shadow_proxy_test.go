package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shadow reads HAProxy's and envoy's logs, detected or named by --proxy;
// a wrong --proxy, or a key the log has not, exits 2 naming it.
func TestShadowProxyCLI(t *testing.T) {
	dir := t.TempDir()
	hap := filepath.Join(dir, "haproxy.log")
	os.WriteFile(hap, []byte(`10.0.0.1:40000 [14/Nov/2023:22:13:20.000] fe fe/<NOSRV> 0/-1/-1/-1/0 200 73 - - LR-- 1/1/0/0/0 0/0 "GET /a HTTP/1.1"
10.0.0.1:40000 [14/Nov/2023:22:13:20.100] fe fe/<NOSRV> 0/-1/-1/-1/0 429 225 - - PR-- 1/1/0/0/0 0/0 "GET /a HTTP/1.1"
`), 0o644)
	envoy := filepath.Join(dir, "envoy.log")
	os.WriteFile(envoy, []byte(`[2023-11-14T22:13:20.000Z] "GET /a HTTP/1.1" 200 - 0 3 1 1 "10.0.0.1" "curl/8" "id" "example.com" "10.1.0.5:8080"
[2023-11-14T22:13:20.100Z] "GET /a HTTP/1.1" 429 RL 0 18 0 - "10.0.0.2" "curl/8" "id" "example.com" "-"
`), 0o644)
	code, out, stderr := runCLI(t, "shadow", hap, "haproxy_rate limit=1 period_s=1 counts=all")
	if code != 0 || !strings.Contains(out, "shadow: haproxy log, 2 requests") || !strings.Contains(out, "agreement: 2/2") {
		t.Errorf("haproxy: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "shadow", "--proxy", "envoy", "--key", "global", envoy, "token_bucket rate=1 capacity=1")
	if code != 0 || !strings.Contains(out, "over 1 keys") || !strings.Contains(out, "agreement: 2/2") {
		t.Errorf("envoy: exit %d\n%s%s", code, out, stderr)
	}
	for _, c := range []struct{ args, want []string }{
		{[]string{"--proxy", "caddy", hap}, []string{"--proxy", "caddy"}},
		{[]string{"--key", "user", hap}, []string{"haproxy.log", "--key", "nginx's log only"}},
		{[]string{"--proxy", "haproxy", envoy}, []string{"envoy.log", "no HAProxy HTTP log", "line 1"}},
		{[]string{"--deny-status", "42", hap}, []string{"--deny-status"}},
	} {
		code, _, stderr := runCLI(t, append(append([]string{"shadow"}, c.args...), "haproxy_rate limit=1 period_s=1 counts=all")...)
		for _, w := range c.want {
			if code != 2 || !strings.Contains(stderr, w) {
				t.Errorf("%v: exit %d, want 2 and %q in %s", c.args, code, w, stderr)
			}
		}
	}
}
