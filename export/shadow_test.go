package export

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// nginx rate=1r/s burst=0, worked by hand: the first request passes; 0.5 s
// later the excess would be 500 > 0 (rejected); at 1.0 s it is 0 (passes);
// at 1.2 s 800 (rejected); at 2.1 s max(0, −100) = 0 (passes).
func shadowLog(statuses ...string) string {
	times := []string{"1700000000.000", "1700000000.500", "1700000001.000", "1700000001.200", "1700000002.100"}
	var b strings.Builder
	for i, st := range statuses {
		fmt.Fprintf(&b, "10.0.0.1 - - [14/Nov/2023:22:13:2%d +0000] \"GET /a/%d HTTP/1.1\" 200 3 \"-\" \"curl/8\" %s %s\n", i/2, i, st, times[i])
	}
	// Another key, limited on its own: its first request passes.
	fmt.Fprintf(&b, "10.0.0.2 - - [14/Nov/2023:22:13:20 +0000] \"GET /b HTTP/1.1\" 200 3 \"-\" \"curl/8\" PASSED 1700000000.600\n")
	return b.String()
}

func TestShadow(t *testing.T) {
	p, _ := model.ParseLabel("nginx rate=1 burst=0")
	right := []string{"PASSED", "REJECTED_DRY_RUN", "PASSED", "REJECTED_DRY_RUN", "PASSED"}
	r, err := Shadow(strings.NewReader(shadowLog(right...)), p, ShadowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Compared != 6 || r.Agree != 6 || r.Keys != 2 || !r.ExactTimes || r.ProxyAdmits != 4 {
		t.Errorf("%+v", r)
	}
	// A proxy that let the second request through disagrees there.
	wrong := append([]string{}, right...)
	wrong[1] = "PASSED"
	r, _ = Shadow(strings.NewReader(shadowLog(wrong...)), p, ShadowOptions{})
	if r.Agree != 5 || r.ProxyOnly != 1 || len(r.Worst) != 1 || r.Worst[0].Key != "10.0.0.1" {
		t.Errorf("%+v", r)
	}
	var b strings.Builder
	WriteShadow(&b, p, r)
	if !strings.Contains(b.String(), "agreement: 5/6") {
		t.Errorf("%s", b.String())
	}
	// Keyed by path prefix: /a and /b.
	r, _ = Shadow(strings.NewReader(shadowLog(right...)), p, ShadowOptions{Key: "path_prefix"})
	if r.Keys != 2 || r.Agree != 6 {
		t.Errorf("path_prefix: %+v", r)
	}
	for _, bad := range []string{
		strings.Replace(shadowLog(right...), "REJECTED_DRY_RUN", "MAYBE", 1),
		strings.Replace(shadowLog(right...), "1700000000.500", "soon", 1),
		"10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] \"GET / HTTP/1.1\" 200 3 \"-\" \"curl/8\"\n",
	} {
		if _, err := Shadow(strings.NewReader(bad), p, ShadowOptions{}); err == nil || !strings.Contains(err.Error(), "line 1") && !strings.Contains(err.Error(), "line 2") {
			t.Errorf("accepted or unnamed line: %v", err)
		}
	}
}

// A file with no Combined line is named as such, with its first bad line,
// not called empty.
func TestShadowNotALog(t *testing.T) {
	p := model.Policy{Algorithm: model.Nginx, Rate: 2, Burst: 3}
	_, err := Shadow(strings.NewReader("name: x\nsweep: []\n"), p, ShadowOptions{})
	if err == nil || !strings.Contains(err.Error(), "no Combined Log Format line among 2 (first: line 1:") {
		t.Errorf("got %v", err)
	}
	if _, err := Shadow(strings.NewReader(""), p, ShadowOptions{}); err == nil || err.Error() != "the log is empty" {
		t.Errorf("empty: %v", err)
	}
}

// A header key: the exported log_format writes the header's value, quoted,
// after $msec; shadow --key header:NAME reads it. --key global is one key.
func TestShadowHeaderKey(t *testing.T) {
	p, _ := model.ParseLabel("nginx rate=1 burst=0")
	var b strings.Builder
	for i, l := range []struct{ st, ms, acct string }{
		{"PASSED", "1700000000.000", "a 1"}, {"REJECTED_DRY_RUN", "1700000000.500", "a 1"},
		{"PASSED", "1700000000.600", "b"}, {"PASSED", "1700000001.000", "a 1"},
		{"REJECTED_DRY_RUN", "1700000001.100", "b"},
	} {
		fmt.Fprintf(&b, "10.0.0.%d - - [14/Nov/2023:22:13:20 +0000] \"GET / HTTP/1.1\" 200 3 \"-\" \"curl/8\" %s %s \"%s\"\n", i, l.st, l.ms, l.acct)
	}
	r, err := Shadow(strings.NewReader(b.String()), p, ShadowOptions{Key: "header:X-Account"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Keys != 2 || r.Agree != 5 || !r.ExactTimes {
		t.Errorf("header key: %+v", r)
	}
	// One key for all: the third request (0.6 s) is rejected by the model.
	r, err = Shadow(strings.NewReader(b.String()), p, ShadowOptions{Key: "global"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Keys != 1 || r.Agree != 4 || r.ProxyOnly != 1 {
		t.Errorf("global key: %+v", r)
	}
	// By ip every request is its own key, and all pass in the model.
	r, _ = Shadow(strings.NewReader(b.String()), p, ShadowOptions{Key: "ip"})
	if r.Keys != 5 || r.ModelAdmits != 5 {
		t.Errorf("ip key: %+v", r)
	}
	noHeader := "10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] \"GET / HTTP/1.1\" 200 3 \"-\" \"curl/8\" PASSED 1700000000.000\n"
	if _, err := Shadow(strings.NewReader(noHeader), p, ShadowOptions{Key: "header:X-Account"}); err == nil || !strings.Contains(err.Error(), "line 1: no quoted X-Account value") {
		t.Errorf("a log without the header: %v", err)
	}
	for _, k := range []string{"header:X A", "header:", "cookie"} {
		if _, err := Shadow(strings.NewReader(noHeader), p, ShadowOptions{Key: k}); err == nil || !strings.HasPrefix(err.Error(), "--key: ") {
			t.Errorf("key %q: %v", k, err)
		}
	}
}

// shadowStream is a shadow log of n lines over 16 addresses, generated as
// it is read.
type shadowStream struct {
	n, i int
	buf  []byte
}

func (s *shadowStream) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.i == s.n {
			return 0, io.EOF
		}
		s.buf = fmt.Appendf(s.buf[:0], "10.0.0.%d - - [14/Nov/2023:22:13:20 +0000] \"GET /a HTTP/1.1\" 200 3 \"-\" \"curl/8\" PASSED 1700000000.%03d\n", s.i%16, s.i%1000)
		s.i++
	}
	k := copy(p, s.buf)
	s.buf = s.buf[k:]
	return k, nil
}

// shadow holds every request until it compares them: its reading counts
// them against --max-memory and stops there, naming the line and the flag.
func TestShadowMaxMemory(t *testing.T) {
	p, _ := model.ParseLabel("nginx rate=1 burst=0")
	_, err := Shadow(&shadowStream{n: 300_000}, p, ShadowOptions{MaxMemory: 64<<20 + 100_000*32})
	if err == nil || !strings.Contains(err.Error(), "more than --max-memory") || !strings.HasPrefix(err.Error(), "line ") {
		t.Errorf("over budget: %v", err)
	}
	if r, err := Shadow(&shadowStream{n: 300_000}, p, ShadowOptions{MaxMemory: 1 << 30}); err != nil || r.Compared != 300_000 {
		t.Errorf("within budget: %v", err)
	}
}

// haproxyLine is an option httplog line (with its syslog header) at ms
// milliseconds after 1700000000 s (14/Nov/2023:22:13:20 UTC).
func haproxyLine(ip string, ms, status int, tsc string) string {
	srv := "be/srv1"
	if tsc[0] == 'P' {
		srv = "fe/<NOSRV>"
	}
	return fmt.Sprintf("<134>Nov 14 22:13:%02d haproxy[4021]: %s:40%03d [14/Nov/2023:22:13:%02d.%03d] fe %s 0/0/0/1/1 %d 120 - - %s 1/1/0/0/0 0/0 \"GET /a/%d HTTP/1.1\"\n",
		20+ms/1000, ip, ms%1000, 20+ms/1000, ms%1000, srv, status, tsc, ms)
}

// haproxy_rate limit=2 period_s=1 counts=admitted (gpc0_rate ge 2), worked
// by hand: requests at 0 and 100 ms are admitted (rates 0, 1); at 999 ms
// the rate is 2: denied. At 1000 ms the period rotates (previous 2,
// current 0) with all of the previous period still inside it: rate 2,
// denied; at 1001 ms ⌊2·999/1000⌋ = 1: admitted. A backend's own 429 (its
// termination state ----) is not the deny rule's: admitted by the limit.
func TestShadowHAProxy(t *testing.T) {
	p, _ := model.ParseLabel("haproxy_rate limit=2 period_s=1 counts=admitted")
	log := haproxyLine("10.0.0.1", 0, 200, "----") + haproxyLine("10.0.0.1", 100, 200, "----") +
		haproxyLine("10.0.0.2", 500, 200, "----") + // another key, limited on its own
		haproxyLine("10.0.0.1", 999, 429, "PR--") + haproxyLine("10.0.0.1", 1000, 429, "PR--") +
		haproxyLine("10.0.0.1", 1001, 200, "----") + haproxyLine("10.0.0.1", 1600, 429, "----") +
		haproxyLine("10.0.0.3", 1700, 400, "CR--") + // a connection closed before its request: no decision
		strings.Replace(haproxyLine("10.0.0.4", 1800, 400, "PR--"), "GET /a/1800 HTTP/1.1", "<BADREQ>", 1) // nor a bad request
	for _, proxy := range []string{"", "haproxy"} {
		r, err := Shadow(strings.NewReader("Proxy fe started.\n"+log), p, ShadowOptions{Proxy: proxy})
		if err != nil {
			t.Fatal(err)
		}
		if r.Proxy != "haproxy" || r.Lines != 9 || r.Compared != 7 || r.Agree != 7 || r.Keys != 2 || !r.ExactTimes || r.ProxyAdmits != 5 ||
			r.Statuses["429 denied"] != 2 || r.Statuses["429"] != 1 || r.Statuses["200"] != 4 || r.Statuses["400 CR--"] != 1 || r.Statuses["400 <BADREQ>"] != 1 || r.Skipped != 1 || !strings.HasPrefix(r.SkippedFirst, "line 1: ") {
			t.Errorf("proxy %q: %+v", proxy, r)
		}
	}
	// Admitted one millisecond early, at the edge: the model denies it.
	early := strings.Replace(log, "22:13:21.001", "22:13:21.000", 1)
	r, err := Shadow(strings.NewReader(early), p, ShadowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Agree != 6 || r.ProxyOnly != 1 || len(r.Worst) != 1 || r.Worst[0].Key != "10.0.0.1" {
		t.Errorf("one ms early: %+v", r)
	}
	var b strings.Builder
	WriteShadow(&b, p, r)
	if !strings.Contains(b.String(), "shadow: haproxy log, 9 requests, 7 with a limit decision, over 2 keys") || !strings.Contains(b.String(), "HAProxy statuses: 200 4 400 <BADREQ> 1 400 CR-- 1 429 1 429 denied 2") {
		t.Errorf("%s", b.String())
	}
	// A deny rule answering 403.
	r, err = Shadow(strings.NewReader(strings.ReplaceAll(log, " 429 120 - - PR--", " 403 120 - - PR--")), p, ShadowOptions{DenyStatus: 403})
	if err != nil || r.Agree != 7 || r.Statuses["403 denied"] != 2 {
		t.Errorf("deny_status 403: %+v %v", r, err)
	}
	// One key for every request: the request of 10.0.0.2 is counted with
	// the others (admitted; rate 2 at 999 ms).
	if r, err = Shadow(strings.NewReader(log), p, ShadowOptions{Key: "global"}); err != nil || r.Keys != 1 {
		t.Errorf("global: %+v %v", r, err)
	}
	if _, err := Shadow(strings.NewReader(log), p, ShadowOptions{Key: "header:X-Key"}); err == nil || !strings.Contains(err.Error(), "nginx's log only") {
		t.Errorf("header key on an HAProxy log: %v", err)
	}
	if _, err := Shadow(strings.NewReader("10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] \"GET / HTTP/1.1\" 200 3\n"), p, ShadowOptions{Proxy: "haproxy"}); err == nil ||
		!strings.Contains(err.Error(), "no HAProxy HTTP log (option httplog) line among 1 (first: line 1:") {
		t.Errorf("not an HAProxy log: %v", err)
	}
	if _, err := Shadow(strings.NewReader(log), p, ShadowOptions{Proxy: "caddy"}); err == nil || !strings.HasPrefix(err.Error(), "--proxy: ") {
		t.Errorf("proxy caddy: %v", err)
	}
}

// envoyLine is a line of envoy's default access log format at ms
// milliseconds after 1700000000 s.
func envoyLine(ms, status int, flags string) string {
	return fmt.Sprintf("[2023-11-14T22:13:%02d.%03dZ] \"GET /a/%d HTTP/1.1\" %d %s 0 3 1 - \"10.0.0.%d\" \"curl/8\" \"5b2a3c\" \"example.com\" \"10.1.0.5:8080\"\n",
		20+ms/1000, ms%1000, ms, status, flags, ms%3)
}

// token_bucket rate=1 capacity=2, envoy's local_ratelimit on key global
// (one bucket for every client), worked by hand: at 0 and 100 ms two tokens are taken
// (0.1 left); at 999 ms 0.999 tokens: rate limited (RL); at 1000 ms one
// whole token: admitted. An upstream's 429 without RL is admitted by the
// limit.
func TestShadowEnvoy(t *testing.T) {
	p, _ := model.ParseLabel("token_bucket rate=1 capacity=2")
	log := envoyLine(0, 200, "-") + envoyLine(100, 200, "-") + envoyLine(999, 429, "RL") +
		envoyLine(1000, 200, "-") + envoyLine(1001, 429, "RL") + envoyLine(2001, 429, "-")
	for _, proxy := range []string{"", "envoy"} {
		r, err := Shadow(strings.NewReader(log), p, ShadowOptions{Proxy: proxy, Key: "global"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Proxy != "envoy" || r.Compared != 6 || r.Agree != 6 || r.Keys != 1 || !r.ExactTimes || r.ProxyAdmits != 4 || r.Statuses["429 RL"] != 2 || r.Statuses["429"] != 1 {
			t.Errorf("proxy %q: %+v", proxy, r)
		}
	}
	// Admitted a millisecond before the token is whole: the model limits
	// it, and admits the next request with the token it kept.
	r, err := Shadow(strings.NewReader(strings.Replace(log, "22:13:21.000Z", "22:13:20.999Z", 1)), p, ShadowOptions{Key: "global"})
	if err != nil || r.Agree != 4 || r.ProxyOnly != 1 || r.ModelOnly != 1 || r.Worst[0].Key != "global" {
		t.Errorf("one ms early: %+v %v", r, err)
	}
	var b strings.Builder
	WriteShadow(&b, p, r)
	if !strings.Contains(b.String(), "envoy statuses (RL: rate limited): 200 3 429 1 429 RL 2") {
		t.Errorf("%s", b.String())
	}
	// Keyed by the client address (X-Forwarded-For in the default format),
	// the default: a bucket per address, as export writes it.
	if r, err = Shadow(strings.NewReader(log), p, ShadowOptions{}); err != nil || r.Keys != 3 {
		t.Errorf("ip: %+v %v", r, err)
	}
	// The JSON lines preset (Istio's field names) with response_flags.
	json := func(ms, status int, flags string) string {
		return fmt.Sprintf(`{"start_time":"2023-11-14T22:13:%02d.%03dZ","method":"GET","path":"/a","protocol":"HTTP/1.1","response_code":%d,"response_flags":%q,"downstream_remote_address":"10.0.0.1:5000","user_agent":"curl/8"}`+"\n",
			20+ms/1000, ms%1000, status, flags)
	}
	jl := json(0, 200, "-") + json(100, 200, "-") + json(999, 429, "RL") + json(1000, 200, "-")
	if r, err = Shadow(strings.NewReader(jl), p, ShadowOptions{}); err != nil || r.Proxy != "envoy" || r.Compared != 4 || r.Agree != 4 {
		t.Errorf("JSON: %+v %v", r, err)
	}
	// Without the client address, detection sees JSON lines, not envoy's:
	// --proxy envoy reads them with the preset.
	noAddr := strings.ReplaceAll(jl, `,"downstream_remote_address":"10.0.0.1:5000"`, "")
	if r, err = Shadow(strings.NewReader(noAddr), p, ShadowOptions{Proxy: "envoy", Key: "global"}); err != nil || r.Compared != 4 || r.Agree != 4 {
		t.Errorf("JSON without downstream_remote_address: %+v %v", r, err)
	}
	noFlags := strings.Replace(jl, `,"response_flags":"RL"`, "", 1)
	if _, err := Shadow(strings.NewReader(noFlags), p, ShadowOptions{Proxy: "envoy", Key: "global"}); err == nil || !strings.Contains(err.Error(), "line 3: no response_flags") {
		t.Errorf("JSON without response_flags: %v", err)
	}
	if _, err := Shadow(strings.NewReader(log), p, ShadowOptions{Key: "user"}); err == nil || !strings.HasPrefix(err.Error(), "a log of envoy (detected): --key: ") {
		t.Errorf("user key on an envoy log: %v", err)
	}
}
