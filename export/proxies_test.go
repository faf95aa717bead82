//go:build proxies

// The round trip through real proxies (make test-proxies): export a policy
// to nginx and to HAProxy, start the real server on a free loopback port
// with that configuration, replay a trace of known timing against it from
// this process, record every response status and compare decision by
// decision with the model's limiter on the same times. Needs nginx and
// haproxy on PATH (or in /usr/sbin); servers are stopped by PID.
package export

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/proxytest"
	"github.com/ratesweep/ratesweep/model"
)

const (
	traceKeys = 4
	traceDur  = 20 * time.Second
	// boundaryTol is the clock tolerance: a decision that flips when the
	// request moves by less than this is at a boundary (the proxies count
	// whole milliseconds, and the client's sleeps and the loopback add
	// jitter). The trace keeps its requests this far from boundaries.
	boundaryTol = 20 * time.Millisecond
	// minGap is the least time between two requests of one key.
	minGap = 6 * time.Millisecond
)

// decide replays times (ns) through a fresh decider for p and returns the
// decision of the last one, moved by shift.
func decideAt(p model.Policy, prefix []int64, t int64) bool {
	d, _ := model.NewDecider(p)
	for _, s := range prefix {
		d.Allow(s)
	}
	return d.Allow(t)
}

// atBoundary reports whether the decision on a request at t after prefix
// changes when the request moves by less than boundaryTol.
func atBoundary(p model.Policy, prefix []int64, t int64) bool {
	return flips(p, prefix, t, int64(boundaryTol), int64(boundaryTol))
}

// flips reports whether the decision on a request at t after prefix
// changes when the request moves within [t−early, t+late].
func flips(p model.Policy, prefix []int64, t, early, late int64) bool {
	a := decideAt(p, prefix, max(t-early, lastOf(prefix)))
	return a != decideAt(p, prefix, t) || a != decideAt(p, prefix, t+late)
}

func lastOf(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// schedule is one key's request times from the start of the trace: bursts,
// steady traffic below and floods above the limit, and pauses, with every
// request at least boundaryTol away from a boundary of the model's limiter
// (p, times relative to the key's first request).
func schedule(p model.Policy, rng *rand.Rand) []time.Duration {
	var out []time.Duration
	var rel []int64 // relative to the first request, ns
	t := time.Duration(rng.IntN(300)) * time.Millisecond
	add := func(at time.Duration) { // t moves on even when no time fits
		defer func() { t = max(t, at) }()
		for try := 0; try < 8 && at < traceDur; try++ {
			r := int64(0)
			if len(out) > 0 {
				r = int64(at - out[0])
			}
			if !atBoundary(p, rel, r) {
				out, rel = append(out, at), append(rel, r)
				return
			}
			at += boundaryTol
		}
	}
	for t < traceDur {
		switch rng.IntN(4) {
		case 0: // a burst
			for range 3 + rng.IntN(10) {
				add(t + minGap)
			}
		case 1: // steady, below the limit
			gap := time.Duration(150+rng.IntN(250)) * time.Millisecond
			for end := t + time.Duration(1+rng.IntN(3))*time.Second; t < end; {
				add(t + gap + time.Duration(rng.IntN(40))*time.Millisecond)
			}
		case 2: // a flood above it
			gap := time.Duration(25+rng.IntN(40)) * time.Millisecond
			for end := t + time.Duration(1+rng.IntN(2))*time.Second; t < end; {
				add(t + gap)
			}
		default: // a pause
			t += time.Duration(200+rng.IntN(1200)) * time.Millisecond
		}
	}
	return out
}

type sent struct {
	at     time.Duration // from the start of the trace, as sent
	rtt    time.Duration // until the response came back
	path   string
	status int
}

// replay sends every key's schedule to url with header X-Key and returns
// what was sent and answered, per key.
func replay(t *testing.T, url string, sched [][]time.Duration) [][]sent {
	tr := &http.Transport{MaxIdleConnsPerHost: traceKeys * 2, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	return sendSchedules(t, url, sched, func(int) *http.Client { return client }, true)
}

// sendSchedules sends every key's schedule to url, key k's requests through
// clientOf(k) (with header X-Key: key-k when keyHeader), and returns what
// was sent and answered, per key.
func sendSchedules(t *testing.T, url string, sched [][]time.Duration, clientOf func(k int) *http.Client, keyHeader bool) [][]sent {
	start := time.Now().Add(300 * time.Millisecond)
	out := make([][]sent, len(sched))
	var wg sync.WaitGroup
	errs := make(chan error, len(sched))
	for k, times := range sched {
		wg.Go(func() {
			client := clientOf(k)
			for i, at := range times {
				time.Sleep(time.Until(start.Add(at)))
				path := fmt.Sprintf("/k%d/%d", k, i)
				req, _ := http.NewRequest("GET", url+path, nil)
				if keyHeader {
					req.Header.Set("X-Key", fmt.Sprintf("key-%d", k))
				}
				sentAt := time.Since(start)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				out[k] = append(out[k], sent{sentAt, time.Since(start) - sentAt, path, resp.StatusCode})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return out
}

// agreement compares the proxy's decisions with the model's on the same
// times, each key's times relative to its first request. A disagreement is
// allowed only at a boundary (the model decides otherwise when the request
// moves by less than boundaryTol) or as the neighbouring request that
// brings the two back in step (the proxy admitted the request after the
// boundary one instead, or the other way round: the same admission shifted
// by one request). More than 1% of other disagreements, or totals more
// than 1% apart, fail the test.
func agreement(t *testing.T, name string, p model.Policy, got [][]sent, admitted func(sent) (bool, error)) {
	agreementOf(t, name, p, got, admitted, true)
}

// agreementOf is agreement; with strict false it only reports, and returns
// the proxy's and the model's admitted totals.
func agreementOf(t *testing.T, name string, p model.Policy, got [][]sent, admitted func(sent) (bool, error), strict bool) (adm, modAdm int) {
	var n, agree, boundary, shifted int
	var maxRTT time.Duration
	for k, reqs := range got {
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		var rel []int64
		var slowest time.Duration // the longest response time so far
		debt := 0                 // admitted by the proxy − admitted by the model, since the last boundary case
		for i, r := range reqs {
			tr := int64(r.at - reqs[0].at)
			proxy, err := admitted(r)
			if err != nil {
				t.Fatalf("%s: key %d request %d: %v", name, k, i, err)
			}
			mod := d.Allow(tr)
			n++
			if proxy {
				adm++
			}
			if mod {
				modAdm++
			}
			step := 1
			if !proxy {
				step = -1
			}
			switch {
			case proxy == mod:
				agree++
			case !strict:
			case flips(p, rel, tr, int64(boundaryTol+slowest), int64(boundaryTol+r.rtt)):
				// The proxy read its clock between sending and answering: for
				// this request up to its response time later, and for any
				// earlier one (the key's state) up to theirs.
				boundary++
				debt += step
				t.Logf("%s: key %d request %d at %v (answered in %v): proxy admitted=%v, model %v (within %v + the response times of a boundary)", name, k, i, r.at, r.rtt, proxy, mod, boundaryTol)
			case debt*step < 0:
				shifted++
				debt += step
				t.Logf("%s: key %d request %d at %v: proxy admitted=%v, model %v (the neighbour of a boundary case)", name, k, i, r.at, proxy, mod)
			default:
				t.Logf("%s: key %d request %d at %v (answered in %v): proxy admitted=%v, model admitted=%v, away from any boundary", name, k, i, r.at, r.rtt, proxy, mod)
			}
			rel = append(rel, tr)
			slowest = max(slowest, r.rtt)
			maxRTT = max(maxRTT, r.rtt)
		}
	}
	msg := fmt.Sprintf("%s vs model %s: %d requests over %d keys, admitted %d by the proxy and %d by the model; "+
		"agreement %d/%d = %.2f%%; disagreements: %d within %v + the response times (at most %v) of a boundary, %d their neighbour (one admission shifted by one request), %d elsewhere",
		name, p.Canonical(), n, len(got), adm, modAdm, agree, n, 100*float64(agree)/float64(n), boundary, boundaryTol, maxRTT.Round(time.Microsecond), shifted, n-agree-boundary-shifted)
	if !strict {
		msg = fmt.Sprintf("%s vs model %s: %d requests over %d keys, admitted %d by the proxy and %d by the model; agreement %d/%d = %.2f%%",
			name, p.Canonical(), n, len(got), adm, modAdm, agree, n, 100*float64(agree)/float64(n))
	}
	fmt.Println("test-proxies: " + msg)
	t.Log(msg)
	if !strict {
		return adm, modAdm
	}
	// Timing noise beyond the stated tolerance (a machine so loaded that the
	// proxy's clock reads lag by more than the response times show) may
	// leave a rare disagreement elsewhere; a systematic difference shows as
	// more of them, or as the proxy admitting more or fewer in total.
	allowed := max(2, n/100)
	if other := n - agree - boundary - shifted; other > allowed {
		t.Errorf("%s: %d disagreements away from any boundary (at most %d allowed)", name, other, allowed)
	}
	if d := adm - modAdm; d > allowed || -d > allowed {
		t.Errorf("%s: the proxy admitted %d, the model %d (at most %d apart allowed)", name, adm, modAdm, allowed)
	}
	if adm == 0 || adm == n {
		t.Errorf("%s: the trace does not exercise the limit (%d of %d admitted)", name, adm, n)
	}
	return adm, modAdm
}

func schedules(p model.Policy, seed uint64) [][]time.Duration {
	rng := rand.New(rand.NewPCG(seed, 15))
	out := make([][]time.Duration, traceKeys)
	for k := range out {
		out[k] = schedule(p, rng)
	}
	return out
}

func status429(r sent) (bool, error) {
	switch r.status {
	case 200:
		return true, nil
	case 429:
		return false, nil
	}
	return false, fmt.Errorf("status %d", r.status)
}

// nginxConf writes a complete nginx.conf around the export's http-level
// lines and its limit_req line (dry: limit_req_dry_run on), with an access
// log in its ratesweep format, and returns its path.
func nginxConf(t *testing.T, dir string, port int, res *Result, dry bool) string {
	var httpLines []string
	var limit string
	for _, l := range strings.Split(res.Config, "\n") {
		switch {
		case strings.HasPrefix(l, "#   limit_req "):
			limit = strings.TrimPrefix(l, "#   ")
		case l != "" && !strings.HasPrefix(l, "#"):
			httpLines = append(httpLines, l)
		}
	}
	if limit == "" {
		t.Fatalf("no limit_req line in the export:\n%s", res.Config)
	}
	httpLines = append(httpLines, "access_log "+filepath.Join(dir, "access.log")+" ratesweep;")
	if dry {
		limit += "\n            limit_req_dry_run on;"
	}
	return proxytest.NginxConf(t, dir, port, "    "+strings.Join(httpLines, "\n    "), "", limit)
}

func TestProxiesNginx(t *testing.T) {
	nginx := proxytest.Binary(t, "nginx")
	p, _ := model.ParseLabel("nginx rate=10 burst=5 delay=5")
	res, err := Export(p, "nginx", Options{Key: "header:X-Key"})
	if err != nil {
		t.Fatal(err)
	}
	sched := schedules(p, 1)
	for _, dry := range []bool{false, true} {
		name := "nginx"
		if dry {
			name = "nginx dry run"
		}
		dir := t.TempDir()
		os.Chmod(dir, 0o755)
		port := proxytest.FreePort(t)
		conf := nginxConf(t, dir, port, res, dry)
		stop := proxytest.Serve(t, name, exec.Command(nginx, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")), port, filepath.Join(dir, "stdout.log"), filepath.Join(dir, "error.log"))
		got := replay(t, fmt.Sprintf("http://127.0.0.1:%d", port), sched)
		stop()
		if !dry {
			agreement(t, name, p, got, status429)
			continue
		}
		// Shadow mode: everything passes; the access log's $limit_req_status
		// says what the limit would have done: read it back as a user would
		// (ratesweep shadow), with nginx's own $msec times.
		for _, r := range got[0] {
			if r.status != 200 {
				t.Fatalf("%s: status %d for %s", name, r.status, r.path)
			}
		}
		f, err := os.Open(filepath.Join(dir, "access.log"))
		if err != nil {
			t.Fatal(err)
		}
		sh, err := Shadow(f, p, ShadowOptions{Key: "header:X-Key"}) // the key the limit hangs on, logged by the exported log_format
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		// ratesweep inspect/run read the same statuses from the real log, and
		// a rule on them labels what the dry run would have rejected.
		rule, err := ingest.ParseRules([]byte("rules: [{name: rejected, stage: none, scope: request, limit_req_status: [REJECTED_DRY_RUN]}]"), dir)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := ingest.Load(context.Background(), filepath.Join(dir, "access.log"), ingest.Options{Rules: rule})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(tr.Stats.LimitReqStatus, sh.Statuses) || tr.Profile(0, 1).ByStage[model.StageNone] != sh.Statuses["REJECTED_DRY_RUN"] {
			t.Errorf("%s: ingest reads statuses %v (labelled %d), shadow %v", name, tr.Stats.LimitReqStatus, tr.Profile(0, 1).ByStage[model.StageNone], sh.Statuses)
		}
		fmt.Printf("test-proxies: ingest (inspect, run) reads the same $limit_req_status counts: %v\n", tr.Stats.LimitReqStatus)
		var b strings.Builder
		WriteShadow(&b, p, sh)
		fmt.Println("test-proxies: nginx dry run, its access log read back by ratesweep shadow:")
		for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			fmt.Println("test-proxies:   " + l)
		}
		n := int64(0)
		for _, k := range got {
			n += int64(len(k))
		}
		allowed := max(2, n/100)
		if sh.Compared != n || sh.Keys != traceKeys || !sh.ExactTimes {
			t.Errorf("%s: %d decisions over %d keys read back (exact times %v), want %d over %d", name, sh.Compared, sh.Keys, sh.ExactTimes, n, traceKeys)
		}
		if sh.ProxyOnly+sh.ModelOnly > allowed || sh.ProxyAdmits == 0 || sh.ProxyAdmits == sh.Compared {
			t.Errorf("%s: %d disagreements (at most %d allowed), %d of %d admitted", name, sh.ProxyOnly+sh.ModelOnly, allowed, sh.ProxyAdmits, sh.Compared)
		}
	}
}

// haproxyConf is a complete haproxy.cfg around the export's frontend lines.
func haproxyConf(port int, res *Result) string {
	return proxytest.HAProxy{Port: port, Frontend: res.Config + "\n    http-request return status 200 content-type text/plain string ok\n"}.Conf()
}

func TestProxiesHAProxy(t *testing.T) {
	haproxy := proxytest.Binary(t, "haproxy")
	dir := t.TempDir()
	conf := filepath.Join(dir, "haproxy.cfg")
	// Both recipes of the export, each against the model's haproxy_rate it
	// is exact for: gpc0 incremented on allow (counts admitted) and
	// http_req_rate (counts all, denied requests too).
	admitted := map[model.HAProxyCounts]int{}
	for _, label := range []string{"haproxy_rate limit=20 period_s=4 counts=admitted", "haproxy_rate limit=20 period_s=4 counts=all"} {
		p, err := model.ParseLabel(label)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Export(p, "haproxy", Options{Key: "header:X-Key"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Fit != Exact {
			t.Fatalf("%s: %s", label, res.Fit)
		}
		port := proxytest.FreePort(t)
		os.WriteFile(conf, []byte(haproxyConf(port, res)), 0o644)
		if out, err := exec.Command(haproxy, "-c", "-f", conf).CombinedOutput(); err != nil {
			t.Fatalf("haproxy -c: %v\n%s", err, out)
		}
		stop := proxytest.Serve(t, "haproxy "+p.Counts.String(), exec.Command(haproxy, "-db", "-f", conf), port, filepath.Join(dir, p.Counts.String()+".log"), "")
		got := replay(t, fmt.Sprintf("http://127.0.0.1:%d", port), schedules(p, 2))
		stop()
		admitted[p.Counts], _ = agreementOf(t, "haproxy counts "+p.Counts.String(), p, got, status429, true)
	}
	// Counting denied requests locks a retrying client out: on the same
	// trace, fewer admitted.
	if admitted[model.HAProxyCountsAll] >= admitted[model.HAProxyCountsAdmitted] {
		t.Errorf("http_req_rate admitted %d, gpc0 on allow %d: counting denied requests should admit fewer", admitted[model.HAProxyCountsAll], admitted[model.HAProxyCountsAdmitted])
	}
}

// nginxTestConf writes a complete nginx.conf with an export's whole
// output (its comment header included) verbatim in the http block, and its
// commented limit_req line in the location, and returns its path.
func nginxTestConf(t *testing.T, dir string, port int, out string) string {
	limit := ""
	for _, l := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(l, "#   limit_req "); ok {
			limit = "limit_req " + s
		}
	}
	if limit == "" {
		t.Fatalf("no limit_req line in the export:\n%s", out)
	}
	return proxytest.NginxConf(t, dir, port, "    access_log off;\n"+out, "", limit)
}

// The fuzz corpus (its seeds: the injections that once reached a
// configuration, and ordinary exports) through the real parsers: every
// nginx and HAProxy export that is not refused passes nginx -t or
// haproxy -c as written, header comments included.
func TestProxiesCorpus(t *testing.T) {
	nginx, haproxy := proxytest.Binary(t, "nginx"), proxytest.Binary(t, "haproxy")
	checked := map[string]int{}
	for i, in := range corpus(t) {
		out, r := exportOf(in)
		if r == nil || r.Target != "nginx" && r.Target != "haproxy" {
			continue
		}
		dir := t.TempDir()
		var cmd *exec.Cmd
		if r.Target == "nginx" {
			conf := nginxTestConf(t, dir, 1, out)
			cmd = exec.Command(nginx, "-t", "-q", "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"))
		} else {
			conf := filepath.Join(dir, "haproxy.cfg")
			os.WriteFile(conf, []byte(haproxyConf(1, &Result{Config: out})), 0o644)
			cmd = exec.Command(haproxy, "-c", "-q", "-f", conf)
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("corpus entry %d %+.200v: %s rejects the export: %v\n%s\n%s", i, in, r.Target, err, b, out)
		}
		checked[r.Target]++
	}
	fmt.Printf("test-proxies: the fuzz corpus's exports pass the real parsers: nginx -t %d, haproxy -c %d\n", checked["nginx"], checked["haproxy"])
	if checked["nginx"] == 0 || checked["haproxy"] == 0 {
		t.Errorf("checked %v", checked)
	}
}

// --key global limits every request together in real nginx, whatever the
// server block: 15 requests at once at rate 1, burst 0 pass once (twice if
// a second turns). $server_name, the key before, is empty without a
// server_name, and nginx limits no empty key: all 15 pass.
func TestProxiesNginxGlobal(t *testing.T) {
	nginx := proxytest.Binary(t, "nginx")
	p, _ := model.ParseLabel("nginx rate=1 burst=0")
	res, err := Export(p, "nginx", Options{Key: "global"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	Write(&b, res, nil, nil, "")
	for _, c := range []struct {
		name, out string
		strict    bool
	}{
		{"nginx --key global", b.String(), true},
		{"nginx keyed by $server_name", strings.Replace(b.String(), `limit_req_zone "global"`, "limit_req_zone $server_name", 1), false},
	} {
		dir := t.TempDir()
		os.Chmod(dir, 0o755)
		port := proxytest.FreePort(t)
		conf := nginxTestConf(t, dir, port, c.out)
		stop := proxytest.Serve(t, c.name, exec.Command(nginx, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")), port, filepath.Join(dir, "stdout.log"), filepath.Join(dir, "error.log"))
		admitted := 0
		for i := range 15 {
			req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/%d", port, i), nil)
			req.Header.Set("X-Key", fmt.Sprintf("client-%d", i)) // different clients, one limit
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				stop()
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == 200 {
				admitted++
			}
		}
		stop()
		fmt.Printf("test-proxies: %s, rate 1 r/s, burst 0: %d of 15 requests admitted\n", c.name, admitted)
		if c.strict && admitted > 2 || !c.strict && admitted != 15 {
			t.Errorf("%s: %d of 15 admitted", c.name, admitted)
		}
	}
}
