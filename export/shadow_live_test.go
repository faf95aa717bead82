//go:build proxies

package export

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/internal/proxytest"
	"github.com/ratesweep/ratesweep/model"
)

// ratesweep shadow on HAProxy's own log (make test-proxies): the export
// of a haproxy_rate policy keyed by the client address (src), run by the
// real HAProxy with option httplog writing its log to stdout, a trace
// from four loopback addresses (one key each), and the log read back by
// Shadow. HAProxy logs the request's date (its wall clock), while its
// counters read its internal clock (now_ms), which sits tens to hundreds
// of ms off the wall clock, by an offset that can change while it runs:
// each line also captures that clock (Lua core.now, µs). Shadow on the log
// with each date replaced by it must agree on every decision; on the dates
// as logged on 90% (a change of the offset moves the requests after it
// against the period boundaries).
func TestHAProxyShadowLive(t *testing.T) {
	haproxy := proxytest.Binary(t, "haproxy")
	for _, label := range []string{"haproxy_rate limit=20 period_s=4 counts=admitted", "haproxy_rate limit=20 period_s=4 counts=all"} {
		p, err := model.ParseLabel(label)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Export(p, "haproxy", Options{Key: "ip"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Fit != Exact || !strings.Contains(res.Config, "track-sc0 src") {
			t.Fatalf("%s: %s\n%s", label, res.Fit, res.Config)
		}
		dir := t.TempDir()
		port := proxytest.FreePort(t)
		conf, lua := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "now.lua")
		if err := os.WriteFile(lua, []byte(shadowNowLua), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := proxytest.HAProxy{Port: port,
			Global:   "    nbthread 1\n    lua-load " + lua + "\n    log stdout format raw local0\n",
			Defaults: "    log global\n    option httplog\n",
			Frontend: "    http-request lua.now_us\n    http-request capture var(txn.now) len 20\n" + res.Config + "\n    http-request return status 200 content-type text/plain string ok\n"}.Conf()
		if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(haproxy, "-c", "-f", conf).CombinedOutput(); err != nil {
			t.Fatalf("haproxy -c: %v\n%s", err, out)
		}
		logPath := filepath.Join(dir, "haproxy.log")
		stop := proxytest.Serve(t, "haproxy", exec.Command(haproxy, "-db", "-f", conf), port, logPath, "")
		got := replayFrom(t, fmt.Sprintf("http://127.0.0.1:%d", port), schedules(p, 3))
		n, admitted := 0, int64(0)
		for _, k := range got {
			for _, r := range k {
				n++
				if r.status == 200 {
					admitted++
				} else if r.status != 429 {
					t.Fatalf("%s: status %d for %s", label, r.status, r.path)
				}
			}
		}
		waitLines(logPath, "\"GET /k", n)
		stop()
		data, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		own, offsets := ownClock(t, data)
		fmt.Printf("test-proxies: %s: HAProxy's logged date − its counters' clock, ms: requests %v\n", label, offsets)
		for _, c := range []struct {
			name string
			log  []byte
			min  float64
		}{{"dates as logged", data, 0.9}, {"dates replaced by HAProxy's own clock", own, 1}} {
			sh, err := Shadow(bytes.NewReader(c.log), p, ShadowOptions{}) // detected: HAProxy's log; key ip
			if err != nil {
				t.Fatalf("%s: shadow: %v", label, err)
			}
			var b strings.Builder
			WriteShadow(&b, p, sh)
			fmt.Printf("test-proxies: %s, HAProxy's option httplog (%s) read back by ratesweep shadow:\n", label, c.name)
			for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
				fmt.Println("test-proxies:   " + l)
			}
			if sh.Proxy != "haproxy" || sh.Compared != int64(n) || sh.Keys != traceKeys || !sh.ExactTimes {
				t.Errorf("%s: %s log, %d decisions over %d keys read back (exact times %v), want haproxy, %d over %d", label, sh.Proxy, sh.Compared, sh.Keys, sh.ExactTimes, n, traceKeys)
			}
			if sh.ProxyAdmits != admitted {
				t.Errorf("%s: the log says %d admitted, the client saw %d", label, sh.ProxyAdmits, admitted)
			}
			if float64(sh.Agree) < c.min*float64(sh.Compared) {
				t.Errorf("%s, %s: agreement %d/%d, want at least %g%%", label, c.name, sh.Agree, sh.Compared, 100*c.min)
			}
		}
		if admitted == 0 || admitted == int64(n) {
			t.Errorf("%s: the trace does not exercise the limit (%d of %d admitted)", label, admitted, n)
		}
	}
}

// shadowNowLua sets txn.now to HAProxy's own clock (core.now), µs.
const shadowNowLua = `core.register_action("now_us", { "http-req" }, function(txn)
  local t = core.now()
  txn:set_var("txn.now", t.sec * 1000000 + t.usec)
end)
`

// ownClock returns the log with each request's date replaced by HAProxy's
// clock as captured ({µs}), and how many dates sat how many ms off it.
func ownClock(t *testing.T, log []byte) ([]byte, map[int64]int) {
	var out bytes.Buffer
	offsets := map[int64]int{}
	for _, l := range strings.SplitAfter(string(log), "\n") {
		open, close := strings.Index(l, " {"), strings.Index(l, "} \"")
		at := strings.Index(l, " [")
		if open < 0 || close < open || at < 0 || at > open {
			out.WriteString(l)
			continue
		}
		us, err := strconv.ParseInt(l[open+2:close], 10, 64)
		if err != nil {
			t.Fatalf("captured clock %q: %v", l[open+2:close], err)
		}
		logged, err := time.Parse("02/Jan/2006:15:04:05.000", l[at+2:at+26])
		if err != nil {
			t.Fatalf("date %q: %v", l[at+2:at+26], err)
		}
		offsets[logged.UnixMilli()-us/1000]++
		out.WriteString(l[:at+2] + time.UnixMilli(us/1000).UTC().Format("02/Jan/2006:15:04:05.000") + l[at+26:])
	}
	return out.Bytes(), offsets
}

// replayFrom sends each key's schedule from a loopback address of its own
// (127.0.0.10, 127.0.0.11, …): HAProxy's src is the key.
func replayFrom(t *testing.T, url string, sched [][]time.Duration) [][]sent {
	clients := make([]*http.Client, len(sched))
	for k := range sched {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(10+k))}}
		tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true, DialContext: d.DialContext}
		defer tr.CloseIdleConnections()
		clients[k] = &http.Client{Transport: tr, Timeout: 5 * time.Second}
	}
	return sendSchedules(t, url, sched, func(k int) *http.Client { return clients[k] }, false)
}

// waitLines waits up to 5 s until the file at path holds n lines with
// marker.
func waitLines(path, marker string, n int) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(path)
		if strings.Count(string(data), marker) >= n {
			return
		}
	}
}
