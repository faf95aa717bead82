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
