package ingest

import (
	"maps"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// An nginx dry-run log (log_format of ratesweep export --to nginx:
// Combined, then $limit_req_status $msec): inspect's counts and a rule on
// the status label the requests production's limit would have rejected.
func TestLimitReqStatus(t *testing.T) {
	var b strings.Builder
	line := func(host, sec, trailer string) {
		b.WriteString(host + ` - - [01/Jan/2020:00:00:` + sec + ` +0000] "GET / HTTP/1.1" 200 1 "-" "curl/8"` + trailer + "\n")
	}
	line("a", "00", " PASSED 1577836800.120")
	line("a", "00", " REJECTED_DRY_RUN 1577836800.130")
	line("a", "01", "\tREJECTED_DRY_RUN 1577836801.000")
	line("b", "01", " DELAYED_DRY_RUN 1577836801.500")
	line("b", "02", " - 1577836802.000") // the limit did not run
	line("c", "02", "")                  // no trailer: not counted
	line("c", "03", " 0.004")            // another log_format: not a status
	rules, err := ParseRules([]byte("rules:\n  - {name: production rejects, stage: none, scope: request, limit_req_status: [REJECTED_DRY_RUN, REJECTED]}\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := build(t, b.String(), Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"PASSED": 1, "REJECTED_DRY_RUN": 2, "DELAYED_DRY_RUN": 1, "-": 1}
	if got := tr.Stats.LimitReqStatus; !maps.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	for _, k := range tr.Keys {
		var wantBy [4]int64 // legit, and stage none for a's two rejections
		wantBy[model.NoStage] = map[string]int64{"a": 1, "b": 2, "c": 2}[k.Name]
		if k.Name == "a" {
			wantBy[model.StageNone] = 2
		}
		if k.ByStage != wantBy {
			t.Errorf("key %s: by stage %v, want %v", k.Name, k.ByStage, wantBy)
		}
	}
	// A log without the field has no counts.
	tr, err = build(t, labelLog(), Options{})
	if err != nil || tr.Stats.LimitReqStatus != nil {
		t.Errorf("plain log: %v %v", err, tr.Stats.LimitReqStatus)
	}
	// A value that nginx never logs is an error naming the field.
	_, err = ParseRules([]byte("rules:\n  - {name: x, stage: none, limit_req_status: [REJECT]}\n"), ".")
	if err == nil || !strings.Contains(err.Error(), "limit_req_status") || !strings.Contains(err.Error(), `"REJECT"`) {
		t.Errorf("bad status: %v", err)
	}
	var r Record
	r.Trailer = []byte(" REJECTED 1.0")
	if r.LimitReqStatus() != "REJECTED" {
		t.Errorf("%q", r.LimitReqStatus())
	}
}
