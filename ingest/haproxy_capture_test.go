package ingest

import (
	"strings"
	"testing"
)

// Lines HAProxy 2.6.12 wrote with option httplog (make test-proxies makes
// them anew: TestProxiesHAProxyEmptyFields): a frontend capturing Host and
// User-Agent, with empty captures, and one capturing nothing, whose lines
// have neither the braces nor the space after them; bad and aborted
// requests. Read by httplog's format string they give what ParseHAProxy
// gives.
const haproxyRealLines = `127.0.0.1:47512 [02/Dec/2026:09:50:59.429] fe_capture fe_capture/<NOSRV> 0/-1/-1/-1/0 200 73 - - LR-- 1/1/0/0/0 0/0 {x.test|ua/1.0 (test)} "GET /full?q=1 HTTP/1.1"
127.0.0.1:47522 [02/Dec/2026:09:50:59.476] fe_capture fe_capture/<NOSRV> 0/-1/-1/-1/0 200 73 - - LR-- 1/1/0/0/0 0/0 {x.test|} "GET /noua HTTP/1.1"
127.0.0.1:47538 [02/Dec/2026:09:50:59.562] fe_capture fe_capture/<NOSRV> 0/-1/-1/-1/0 200 73 - - LR-- 1/1/0/0/0 0/0 {|} "GET /h10 HTTP/1.0"
127.0.0.1:47542 [02/Dec/2026:09:50:59.603] fe_capture fe_capture/<NOSRV> -1/-1/-1/-1/0 400 0 - - CR-- 1/1/0/0/0 0/0 "<BADREQ>"
<134>Dec  2 09:50:59 vm haproxy[976]: 127.0.0.1:38986 [02/Dec/2026:09:50:59.757] fe_plain fe_plain/<NOSRV> 0/-1/-1/-1/0 200 73 - - LR-- 1/1/0/0/0 0/0 "GET /full?q=1 HTTP/1.1"
Dec  2 09:50:59 haproxy[976]: 127.0.0.1:39022 [02/Dec/2026:09:50:59.883] fe_plain fe_plain/<NOSRV> 0/-1/-1/-1/0 200 73 - - LR-- 1/1/0/0/0 0/0 "GET /h10 HTTP/1.0"
127.0.0.1:39048 [02/Dec/2026:09:50:59.969] fe_plain fe_plain/<NOSRV> -1/-1/-1/-1/0 400 0 - - PR-- 1/1/0/0/0 0/0 "<BADREQ>"`

func TestHAProxyCaptures(t *testing.T) {
	tpl, err := newTemplate(FormatHAProxy, HAProxyHTTPFormat, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(haproxyRealLines, "\n") {
		var got, want Record
		if err := tpl.parse([]byte(line), &got); err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if err := ParseHAProxy([]byte(line), &want); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if string(got.Host) != string(want.Host) || got.Time != want.Time || got.TimeNs != want.TimeNs || got.Status != want.Status ||
			string(got.Method) != string(want.Method) || string(got.Path) != string(want.Path) || got.Bytes != want.Bytes ||
			string(got.Flags) != string(want.Flags) || len(want.Flags) != 4 {
			t.Errorf("%s:\nformat string %s %d.%03d %d %s %s %s\nhttplog       %s %d.%03d %d %s %s %s", line,
				got.Host, got.Time, got.TimeNs/1e6, got.Status, got.Method, got.Path, got.Flags, want.Host, want.Time, want.TimeNs/1e6, want.Status, want.Method, want.Path, want.Flags)
		}
	}
	// A brace in the captures' place that never closes, or text where
	// the request's quote belongs, is malformed.
	for _, line := range []string{
		`127.0.0.1:1 [02/Dec/2026:09:50:59.429] fe fe/<NOSRV> 0/-1/-1/-1/0 200 73 - - LR-- 1/1/0/0/0 0/0 {x.test "GET / HTTP/1.1"`,
		`127.0.0.1:1 [02/Dec/2026:09:50:59.429] fe fe/<NOSRV> 0/-1/-1/-1/0 200 73 - - LR-- 1/1/0/0/0 0/0 GET / HTTP/1.1`,
	} {
		var rec Record
		if err := tpl.parse([]byte(line), &rec); err == nil {
			t.Errorf("%s: read as %+v", line, rec)
		}
	}
}
