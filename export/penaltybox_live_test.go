//go:build proxies

// The penalty box and haproxy_rate as exported, against the real HAProxy
// (make test-proxies): the configuration export --to haproxy writes (both
// counts, with and without block_s) is run as written, the hostile trace
// of haproxyrate_live_test.go is replayed in real time, and every decision
// is compared with the model's decider fed HAProxy's own clock, live and
// through ratesweep shadow on HAProxy's access log.
package export_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/export"
	"github.com/ratesweep/ratesweep/internal/proxytest"
	"github.com/ratesweep/ratesweep/model"
)

// pbTolMs is the tolerance of a disagreement: the model, given the same
// requests before it, decides as HAProxy did with the request moved by at
// most this many ms (a period boundary, or a block's end: HAProxy drops an
// expired entry of the blocked-keys table when its expiry task runs, in
// the ms of the expiry or the next).
const pbTolMs = 2

func TestPenaltyBoxLive(t *testing.T) {
	bin := proxytest.Binary(t, "haproxy")
	out, _ := exec.Command(bin, "-v").Output()
	fmt.Printf("test-proxies: penalty box: %s", firstLine(out))
	sched := hrSchedules(rand.New(rand.NewPCG(28, 4)))
	for _, label := range []string{
		"haproxy_rate limit=10 period_s=1 counts=all",
		"haproxy_rate limit=10 period_s=1 counts=admitted",
		"haproxy_rate limit=10 period_s=1 counts=all block_s=1.5",
		"haproxy_rate limit=10 period_s=1 counts=admitted block_s=1.5",
	} {
		t.Run(strings.ReplaceAll(label, " ", "_"), func(t *testing.T) {
			p, err := model.ParseLabel(label)
			if err != nil {
				t.Fatal(err)
			}
			res, err := export.Export(p, "haproxy", export.Options{Key: "header:X-Key"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Fit != export.Exact {
				t.Fatalf("%s: %s (%s)", label, res.Fit, res.Why)
			}
			dir := t.TempDir()
			port := proxytest.FreePort(t)
			conf := filepath.Join(dir, "haproxy.cfg")
			lua := filepath.Join(dir, "now.lua")
			if err := os.WriteFile(lua, []byte(pbNowLua), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(conf, []byte(pbConf(t, port, lua, res.Config)), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "-c", "-f", conf).CombinedOutput(); err != nil {
				t.Fatalf("haproxy -c: %v\n%s", err, out)
			}
			logPath := filepath.Join(dir, "haproxy.log")
			stop := proxytest.Serve(t, "haproxy", exec.Command(bin, "-db", "-f", conf), port, logPath, "")
			got := hrReplay(t, fmt.Sprintf("http://127.0.0.1:%d", port), sched)
			pbWaitLog(logPath, got)
			stop()
			pbCompare(t, p, got)
			pbShadow(t, p, got, logPath)
		})
	}
}

// pbNowLua sets txn.now to HAProxy's clock (µs, as hrNowLua) and txn.msec
// to it as nginx's $msec (seconds with ms), for the access log.
const pbNowLua = `core.register_action("now_us", { "http-req" }, function(txn)
  local t = core.now()
  txn:set_var("txn.now", t.sec * 1000000 + t.usec)
  txn:set_var("txn.msec", string.format("%d.%03d", t.sec, t.usec // 1000))
end)
`

// pbConf is a complete haproxy.cfg around the export as written: its
// frontend lines in the frontend, its blocked-keys section after it. Every
// response carries HAProxy's clock at the decision, and the access log
// (stdout) has one Combined line per request with the decision, the time
// and the key as ratesweep shadow reads them.
func pbConf(t *testing.T, port int, lua, config string) string {
	front, back := config, ""
	if i := strings.Index(config, "\n# in the frontend\n"); i >= 0 {
		back, front = config[:i+1], config[i+1:]
	} else if strings.Contains(config, "\nbackend ") {
		t.Fatalf("the export has a section but no frontend marker:\n%s", config)
	}
	return proxytest.HAProxy{Port: port, Global: "    nbthread 1\n    lua-load " + lua + "\n    log stdout format raw local0\n",
		Defaults: "    log global\n", After: back, Frontend: fmt.Sprintf(`    log-format "%%ci - - [%%trg] \"%%HM %%HU %%HV\" %%ST %%B \"-\" \"-\" %%[var(txn.st)] %%[var(txn.msec)] \"%%[var(txn.key)]\""
    http-request lua.now_us
    http-request set-var(txn.date) date(0,us)
    http-request set-var(txn.key) req.hdr(X-Key)
%s
    http-request return status 200 content-type text/plain string ok
    http-after-response set-header X-Now-Us %%[var(txn.now)]
    http-after-response set-header X-Date-Us %%[var(txn.date)]
    http-after-response set-var(txn.st) str(PASSED) if { status 200 }
    http-after-response set-var(txn.st) str(REJECTED) if { status 429 }
`, front)}.Conf()
}

// pbCompare decides every request with the model on HAProxy's times, key
// by key, and prints every disagreement; a disagreement is within the
// tolerance when the model, replayed on the key's requests before it,
// decides as HAProxy with the request moved by up to pbTolMs.
func pbCompare(t *testing.T, p model.Policy, got [][]hrReq) {
	name := p.Canonical()
	var n, agree, adm, modAdm, far int
	for k, reqs := range got {
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		times := make([]int64, len(reqs))
		for i, r := range reqs {
			times[i] = r.haproxyUs / 1000 * 1e6
		}
		for i, r := range reqs {
			if r.status != 200 && r.status != 429 {
				t.Fatalf("key %d request %d: status %d", k, i, r.status)
			}
			proxy, mod := r.status == 200, d.Allow(times[i])
			n++
			if proxy {
				adm++
			}
			if mod {
				modAdm++
			}
			if proxy == mod {
				agree++
				continue
			}
			shift := pbShift(t, p, times[:i], times[i], proxy)
			if shift < 0 {
				far++
			}
			fmt.Printf("test-proxies: %s: key %d request %d at HAProxy %d.%03d ms: HAProxy admitted=%v, model admitted=%v; the model agrees with the request moved by %d ms (-1: not within %d ms)\n",
				name, k, i, r.haproxyUs/1000, r.haproxyUs%1000, proxy, mod, shift, pbTolMs)
		}
	}
	pct := 100 * float64(agree) / float64(n)
	msg := fmt.Sprintf("%s vs HAProxy, live: %d requests over %d keys, admitted %d by HAProxy and %d by the model; agreement %d/%d = %.2f%%, %d disagreements beyond %d ms",
		name, n, len(got), adm, modAdm, agree, n, pct, far, pbTolMs)
	fmt.Println("test-proxies: " + msg)
	t.Log(msg)
	if float64(agree) < hrMinAgree*float64(n) {
		t.Errorf("%s: agreement %.2f%% is below %.1f%%", name, pct, 100*hrMinAgree)
	}
	if far > 0 {
		t.Errorf("%s: %d disagreements beyond %d ms", name, far, pbTolMs)
	}
	if adm == 0 || adm == n {
		t.Errorf("%s: the trace does not exercise the limit (%d of %d admitted)", name, adm, n)
	}
}

// pbShift returns the least shift (ms, 0 < |shift| <= pbTolMs) of a
// request at t after the requests before (their times) at which a fresh
// model decides want, or -1.
func pbShift(t *testing.T, p model.Policy, before []int64, at int64, want bool) int64 {
	for s := int64(1); s <= pbTolMs; s++ {
		for _, sign := range []int64{-1, 1} {
			tt := at + sign*s*1e6
			if len(before) > 0 && tt < before[len(before)-1] {
				continue
			}
			d, err := model.NewDecider(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range before {
				d.Allow(b)
			}
			if d.Allow(tt) == want {
				return s
			}
		}
	}
	return -1
}

// pbWaitLog waits (up to 5 s) until HAProxy has logged every request of
// got: it logs a request when its stream ends, after the response.
func pbWaitLog(logPath string, got [][]hrReq) {
	n := 0
	for _, k := range got {
		n += len(k)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(logPath)
		if strings.Count(string(data), "\"GET /k") >= n {
			return
		}
	}
}

// pbShadow reads HAProxy's access log back through export.Shadow (ratesweep
// shadow) and requires the same agreement as live.
func pbShadow(t *testing.T, p model.Policy, got [][]hrReq, logPath string) {
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "\"GET /k") {
			lines.WriteString(l + "\n")
		}
	}
	sh, err := export.Shadow(&lines, p, export.ShadowOptions{Key: "header:X-Key"})
	if err != nil {
		t.Fatalf("shadow: %v", err)
	}
	var b strings.Builder
	export.WriteShadow(&b, p, sh)
	fmt.Printf("test-proxies: %s: HAProxy's access log read back by ratesweep shadow:\n", p.Canonical())
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		fmt.Println("test-proxies:   " + l)
	}
	n := int64(0)
	for _, k := range got {
		n += int64(len(k))
	}
	if sh.Compared != n || sh.Keys != len(got) || !sh.ExactTimes {
		t.Errorf("shadow: %d decisions over %d keys (exact times %v), want %d over %d", sh.Compared, sh.Keys, sh.ExactTimes, n, len(got))
	}
	if float64(sh.Agree) < hrMinAgree*float64(sh.Compared) {
		t.Errorf("shadow: agreement %d/%d is below %.1f%%", sh.Agree, sh.Compared, 100*hrMinAgree)
	}
}
