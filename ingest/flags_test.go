package ingest

import "testing"

// A proxy's own mark of how it ended a request: HAProxy's termination
// state (after the captured cookies), envoy's %RESPONSE_FLAGS%.
func TestFlags(t *testing.T) {
	var rec Record
	if err := ParseHAProxy([]byte(`10.0.0.1:40000 [14/Nov/2023:22:13:20.999] fe fe/<NOSRV> 0/-1/-1/-1/0 429 120 - - PR-- 1/1/0/0/0 0/0 "GET /a HTTP/1.1"`), &rec); err != nil || string(rec.Flags) != "PR--" {
		t.Errorf("haproxy: %q %v", rec.Flags, err)
	}
	if err := ParseHAProxy([]byte(`10.0.0.1:40000 [14/Nov/2023:22:13:20.999] fe be/s1 0/0/0/1/1 200 120 "GET /a HTTP/1.1"`), &rec); err != nil || rec.Flags != nil {
		t.Errorf("haproxy without a termination state: %q %v", rec.Flags, err)
	}
	tp, err := newTemplate(FormatEnvoyText, EnvoyDefaultFormat, nil)
	if err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]string{
		`[2023-11-14T22:13:20.999Z] "GET /a HTTP/1.1" 429 RL 0 18 0 - "10.0.0.1" "curl/8" "id" "example.com" "-"`:           "RL",
		`[2023-11-14T22:13:20.999Z] "GET /a HTTP/1.1" 200 - 0 3 1 1 "10.0.0.1" "curl/8" "id" "example.com" "10.1.0.5:8080"`: "",
	} {
		if err := tp.parse([]byte(line), &rec); err != nil || string(rec.Flags) != want || rec.TimeNs != 999e6 {
			t.Errorf("envoy %s: %q %v", line, rec.Flags, err)
		}
	}
}
