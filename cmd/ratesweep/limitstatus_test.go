package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// An nginx dry-run log ($limit_req_status after the user agent): inspect
// reports the statuses, and a sweep labels what production would have
// rejected as abusive, so the Parquet compares the model's decisions with
// the proxy's (caught: both reject; missed: only the proxy; false_cut:
// only the model).
func TestInspectAndRunDryRunLog(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	rejected := 0
	for s := range 30 {
		for i := range 4 { // key 10.0.0.1 sends 4/s, the others 1/s
			host, st := "10.0.0.1", "PASSED"
			switch {
			case i == 3:
				host = fmt.Sprintf("10.0.0.%d", 2+s%3)
			case i > 0: // production's limit: 1/s per address, no burst
				st = "REJECTED_DRY_RUN"
				rejected++
			}
			fmt.Fprintf(&b, "%s - - [01/Jan/2026:00:00:%02d +0000] \"GET /api HTTP/1.1\" 200 2 \"-\" \"curl/8\" %s %d.%03d\n",
				host, s, st, 1767225600+s, 250*i)
		}
	}
	log := filepath.Join(dir, "access.log")
	os.WriteFile(log, []byte(b.String()), 0o644)
	code, out, stderr := runCLI(t, "inspect", log, "--top", "0")
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	golden(t, "inspect-dryrun.txt", strings.ReplaceAll(out, dir, "DIR"))
	if want := fmt.Sprintf("REJECTED_DRY_RUN %d ", rejected); !strings.Contains(out, want) {
		t.Errorf("no %q in\n%s", want, out)
	}
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(`name: dry-run
traffic:
  log: access.log
  format: combined
  key: ip
  rules:
    - name: production would reject
      stage: none
      scope: request
      limit_req_status: [REJECTED, REJECTED_DRY_RUN]
sweep:
  - algorithm: nginx
    rate: [1, 2]
    burst: [0]
`), 0o644)
	runDir := filepath.Join(dir, "out")
	if code, _, stderr := runCLI(t, "run", spec, "--out", runDir, "-q"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	rows, err := sweep.ReadPoints(context.Background(), runDir)
	if err != nil || len(rows) != 2 {
		t.Fatalf("%v %d rows", err, len(rows))
	}
	for _, r := range rows {
		if r.OfferedAbusive != int64(rejected) || r.OfferedLegit != 120-int64(rejected) {
			t.Errorf("%s: offered abusive %d, legit %d; the log has %d rejected of 120", r.Key(), r.OfferedAbusive, r.OfferedLegit, rejected)
		}
	}
	// nginx rate=1 burst=0 is production's limit here: the model rejects
	// what the dry run would have (times are whole seconds in the replay).
	if r := rows[0]; r.Caught != int64(rejected) || r.Missed != 0 || r.FalseCut != 0 {
		t.Errorf("%s: caught %d, missed %d, false cut %d; want %d, 0, 0", r.Key(), r.Caught, r.Missed, r.FalseCut, rejected)
	}
}
