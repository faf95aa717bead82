//go:build proxies

package export

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/internal/proxytest"
	"github.com/ratesweep/ratesweep/model"
)

// A two-zone nginx export (5 at once per account, 5 at once per
// organisation, 1 r/s each) against real nginx, on a trace that trips each
// zone in turn: integrator A sends 5 at once (its account's zone rejects 2),
// integrator B of the same organisation sends 5 (the organisation's zone
// rejects 3), then B sends 3 about two seconds later (the organisation's zone
// rejects 1). nginx charges a request to its zones only when every zone
// admits it: its answers are the model's with rejected_counts none, request
// by request, and not those with rejected_counts all (where A's rejected
// requests would use up the organisation's burst and B would get 2, not 4).
func TestProxiesNginxStack(t *testing.T) {
	nginx := proxytest.Binary(t, "nginx")
	label := "all_of rejected_counts=none [nginx rate=1 burst=2 delay=2 key=account] [nginx rate=1 burst=4 delay=4 key=org]"
	p, err := model.ParseLabel(label)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Export(p, "nginx", Options{Zone: "stack"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Fit != Exact {
		t.Fatalf("fit %v: %s", res.Fit, res.Why)
	}
	// The model on the same trace: fluid batches at 0 s and 2 s.
	want := map[string][]int64{}
	for _, rc := range []string{"none", "all"} {
		sc, err := model.ParseScenario([]byte(`name: two zones
duration_s: 3
clients:
  - {name: A, class: legit, org: acme, segments: [[0, 1, 5]]}
  - {name: B, class: legit, org: acme, segments: [[0, 1, 5], [2, 3, 3]]}
`))
		if err != nil {
			t.Fatal(err)
		}
		w, err := model.NewWorkload(sc)
		if err != nil {
			t.Fatal(err)
		}
		q, _ := model.ParseLabel(strings.Replace(label, "=none", "="+rc, 1))
		var out model.Outcome
		w.NewSimulator().Run(q, &out)
		want[rc] = []int64{out.Clients[0].Admitted, out.Clients[1].Admitted}
	}
	if want["none"][1] == want["all"][1] {
		t.Fatalf("the trace does not tell none from all: %v", want)
	}

	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	port := proxytest.FreePort(t)
	var b strings.Builder
	Write(&b, res, nil, nil, "")
	var limits []string
	for _, l := range strings.Split(b.String(), "\n") {
		if s, ok := strings.CutPrefix(l, "#   limit_req "); ok {
			limits = append(limits, "limit_req "+s)
		}
	}
	if len(limits) != 2 {
		t.Fatalf("want two limit_req lines:\n%s", b.String())
	}
	conf := proxytest.NginxConf(t, dir, port, "    access_log off;\n"+b.String(), "", strings.Join(limits, "\n            "))
	if out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	stop := proxytest.Serve(t, "nginx two zones", exec.Command(nginx, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")), port, filepath.Join(dir, "stdout.log"), filepath.Join(dir, "error.log"))
	defer stop()
	send := func(account string, n int) (admitted int64) {
		for range n {
			req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
			req.Header.Set("X-Account", account)
			req.Header.Set("X-Org", "acme")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case 200:
				admitted++
			case 429:
			default:
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		return admitted
	}
	start := time.Now()
	a := send("integrator-a", 5)
	b0 := send("integrator-b", 5)
	if time.Since(start) > 300*time.Millisecond {
		t.Skipf("the first 10 requests took %v: too slow to be at once", time.Since(start))
	}
	// 2.3 s rather than the model's 2 s: nginx counts on its millisecond
	// clock from each request's own arrival, so at exactly 2 s the
	// organisation's bucket would be a few milliseconds short of a
	// request; 0.3 s later every decision is the same with room on both
	// sides (the next boundary is at 3 s).
	time.Sleep(time.Until(start.Add(2300 * time.Millisecond)))
	b2 := send("integrator-b", 3)
	got := []int64{a, b0 + b2}
	fmt.Printf("test-proxies: nginx with two limit_req zones (account, organisation): A %d of 5, B %d+%d of 8; model rejected_counts none %v, all %v\n",
		a, b0, b2, want["none"], want["all"])
	if got[0] != want["none"][0] || got[1] != want["none"][1] {
		t.Errorf("nginx admitted A %d, B %d; the model with rejected_counts none %v (with all %v)", got[0], got[1], want["none"], want["all"])
	}
}

// The stacked HAProxy exports pass haproxy -c: the stick tables as backend
// sections, the tracking and deny lines in a frontend.
func TestProxiesHAProxyStack(t *testing.T) {
	haproxy := proxytest.Binary(t, "haproxy")
	for _, label := range haproxyStackLabels {
		p, _ := model.ParseLabel(label)
		res, err := Export(p, "haproxy", Options{})
		if err != nil {
			t.Fatal(err)
		}
		tables, front, ok := strings.Cut(res.Config, "# in the frontend\n")
		if !ok {
			t.Fatalf("no frontend part:\n%s", res.Config)
		}
		dir := t.TempDir()
		conf := filepath.Join(dir, "haproxy.cfg")
		proxytest.WriteFile(t, conf, proxytest.HAProxy{Port: proxytest.FreePort(t), Before: tables + "\n",
			Frontend: front + "\n    http-request return status 200 content-type text/plain string ok\n"}.Conf())
		if out, err := exec.Command(haproxy, "-c", "-q", "-f", conf).CombinedOutput(); err != nil {
			t.Fatalf("haproxy -c on %s: %v\n%s", label, err, out)
		}
		fmt.Printf("test-proxies: haproxy -c accepts the export of %s\n", label)
	}
}
