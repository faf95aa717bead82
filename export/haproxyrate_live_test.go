//go:build proxies

// haproxy_rate against the real HAProxy (make test-proxies): a stick table
// counting http_req_rate (counts all) or gpc0_rate incremented on allow
// (counts admitted), a hostile trace replayed over loopback in real time,
// and every response compared with model's haproxy_rate decider fed the
// times HAProxy decided at (its internal clock, returned in a header).
// Needs haproxy (2.6, with Lua) on PATH or in /usr/sbin; the server is
// started and stopped by PID.
package export_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/internal/proxytest"
	"github.com/ratesweep/ratesweep/model"
)

const (
	hrPeriodMs = 1000 // http_req_rate(1000ms)
	hrLimit    = 10   // requests per period
	hrKeys     = 8
	hrTraceDur = 12 * time.Second
	// hrTolMs is the tolerance: a disagreement is accepted only within
	// this many ms of one of the counter's period boundaries (its start,
	// start + period, start + 2·period). None is expected: the decider is
	// fed HAProxy's own clock at the decision (now, read from Lua in the
	// same rule pass; now_ms, the counters' clock, is its whole ms, and
	// with one thread global_now_ms is now_ms).
	hrTolMs = 2
	// hrMinAgree is the least share of decisions that must agree.
	hrMinAgree = 0.995
)

// hrReq is one request of the replay: as sent by this process and as
// HAProxy answered it.
type hrReq struct {
	sentNs    int64 // Unix ns just before sending
	rttNs     int64 // until the response came back
	status    int
	haproxyUs int64 // HAProxy's clock (now) when it decided (X-Now-Us), Unix µs
	dateUs    int64 // HAProxy's wall-clock date then (X-Date-Us), Unix µs
	rate      string
	count     string // the key's requests counted so far (X-Count)
}

func TestHAProxyRateLive(t *testing.T) {
	bin := proxytest.Binary(t, "haproxy")
	out, _ := exec.Command(bin, "-v").Output()
	fmt.Printf("test-proxies: haproxy_rate: %s", firstLine(out))
	sched := hrSchedules(rand.New(rand.NewPCG(28, 2)))
	for _, counts := range []model.HAProxyCounts{model.HAProxyCountsAll, model.HAProxyCountsAdmitted} {
		t.Run(counts.String(), func(t *testing.T) {
			c := model.HAProxyRateConfig{PeriodS: hrPeriodMs / 1000.0, Limit: hrLimit, Counts: counts}
			dir := t.TempDir()
			port := proxytest.FreePort(t)
			conf := filepath.Join(dir, "haproxy.cfg")
			lua := filepath.Join(dir, "now.lua")
			if err := os.WriteFile(lua, []byte(hrNowLua), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(conf, []byte(hrConf(port, counts, lua)), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "-c", "-f", conf).CombinedOutput(); err != nil {
				t.Fatalf("haproxy -c: %v\n%s", err, out)
			}
			stop := proxytest.Serve(t, "haproxy", exec.Command(bin, "-db", "-f", conf), port, filepath.Join(dir, "haproxy.log"), "")
			got := hrReplay(t, fmt.Sprintf("http://127.0.0.1:%d", port), sched)
			stop()
			hrCompare(t, c, got)
		})
	}
}

// hrConf is a complete haproxy.cfg: one thread (one now_ms), the key in
// header X-Key; every response carries HAProxy's clock at the decision
// (X-Now-Us), its wall-clock date (X-Date-Us), the counter's rate
// (X-Rate) and the key's count so far (X-Count: a request that reached
// HAProxy twice, say a client retry, would show as a jump). The table's expire is more than two periods, so
// an entry expires only when its counter would read as new anyway.
func hrConf(port int, counts model.HAProxyCounts, lua string) string {
	store, rate, count, deny, inc := "http_req_cnt,http_req_rate", "sc0_http_req_rate", "sc0_http_req_cnt", "gt", ""
	if counts == model.HAProxyCountsAdmitted {
		store, rate, count, deny, inc = "gpc0,gpc0_rate", "sc0_gpc0_rate", "sc0_get_gpc0", "ge", "    http-request sc-inc-gpc0(0)\n"
	}
	hdrs := fmt.Sprintf("hdr X-Now-Us %%[var(txn.now)] hdr X-Date-Us %%[var(txn.date)] hdr X-Rate %%[%s] hdr X-Count %%[%s]", rate, count)
	return proxytest.HAProxy{Port: port, Global: "    nbthread 1\n    lua-load " + lua + "\n", Frontend: fmt.Sprintf(`    stick-table type string len 64 size 1m expire %[1]dms store %[2]s(%[3]dms)
    http-request lua.now_us
    http-request set-var(txn.date) date(0,us)
    http-request track-sc0 req.hdr(X-Key)
    http-request deny deny_status 429 content-type text/plain string denied %[4]s if { %[5]s %[6]s %[7]d }
%[8]s    http-request return status 200 content-type text/plain string ok %[4]s
`, 3*hrPeriodMs, store, hrPeriodMs, hdrs, rate, deny, hrLimit, inc)}.Conf()
}

// hrNowLua sets txn.now to HAProxy's own clock, now (core.now(), hlua_now
// in src/hlua_fcn.c), in µs: now_ms, the clock of the frequency counters,
// is its whole ms. The wall-clock date (the date sample fetch) usually
// reads the same, but HAProxy moves now ahead of it when a poll returns
// earlier than its timeout (clock_update_date, src/clock.c).
const hrNowLua = `core.register_action("now_us", { "http-req" }, function(txn)
  local t = core.now()
  txn:set_var("txn.now", t.sec * 1000000 + t.usec)
end)
`

// hrSchedules is each key's request times from the start of the trace, a
// hostile mix: bursts 2–8 ms apart, exactly the limit's rate (one request
// every period/limit), twice it, below it, gaps of a period ± 3 ms and idle
// gaps of two periods or more (exactly two, or a little more).
func hrSchedules(rng *rand.Rand) [][]time.Duration {
	p := time.Duration(hrPeriodMs) * time.Millisecond
	out := make([][]time.Duration, hrKeys)
	for k := range out {
		var ts []time.Duration
		at := time.Duration(rng.IntN(300)) * time.Millisecond
		run := func(n int, gap func() time.Duration) {
			for range n {
				ts = append(ts, at)
				at += gap()
			}
		}
		for i := 0; at < hrTraceDur; i++ {
			seg := rng.IntN(6)
			if i%5 == 4 {
				seg = 3 // an idle gap every fifth segment at least
			}
			switch seg {
			case 0: // a burst
				run(4+rng.IntN(11), func() time.Duration {
					return time.Duration(2+rng.IntN(7))*time.Millisecond + time.Duration(rng.IntN(1000))*time.Microsecond
				})
			case 1: // exactly the limit's rate
				run(8+rng.IntN(13), func() time.Duration { return p / hrLimit })
			case 2: // twice it
				run(10+rng.IntN(16), func() time.Duration { return p / (2 * hrLimit) })
			case 3: // idle: two periods, or a little more, or three
				at += []time.Duration{2 * p, 2*p + time.Duration(rng.IntN(300))*time.Millisecond, 3 * p}[rng.IntN(3)]
			case 4: // a period ± 3 ms, then a short burst
				at += p + time.Duration(rng.IntN(7)-3)*time.Millisecond
				run(3+rng.IntN(4), func() time.Duration { return time.Duration(2+rng.IntN(7)) * time.Millisecond })
			default: // below the rate
				run(5+rng.IntN(6), func() time.Duration { return 3 * p / (2 * hrLimit) })
			}
		}
		out[k] = ts
	}
	return out
}

// hrReplay sends every key's schedule from its own goroutine and
// connection, one request at a time, and returns what came back.
func hrReplay(t *testing.T, url string, sched [][]time.Duration) [][]hrReq {
	start := time.Now().Add(300 * time.Millisecond)
	out := make([][]hrReq, len(sched))
	errs := make(chan error, len(sched))
	var wg sync.WaitGroup
	for k, times := range sched {
		wg.Go(func() {
			tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			for i, at := range times {
				time.Sleep(time.Until(start.Add(at)))
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/k%d/%d", url, k, i), nil)
				req.Header.Set("X-Key", fmt.Sprintf("key-%d", k))
				sent := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				us, err := strconv.ParseInt(resp.Header.Get("X-Now-Us"), 10, 64)
				date, err2 := strconv.ParseInt(resp.Header.Get("X-Date-Us"), 10, 64)
				if err != nil || err2 != nil {
					errs <- fmt.Errorf("key %d request %d: X-Now-Us %q, X-Date-Us %q", k, i, resp.Header.Get("X-Now-Us"), resp.Header.Get("X-Date-Us"))
					return
				}
				out[k] = append(out[k], hrReq{sent.UnixNano(), int64(time.Since(sent)), resp.StatusCode, us, date, resp.Header.Get("X-Rate"), resp.Header.Get("X-Count")})
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

// periodStarter is the haproxy_rate decider's view of its counter.
type periodStarter interface {
	PeriodStartMs() (start, periodMs int64, ok bool)
}

// hrCompare decides every request with the model on HAProxy's own times
// (and, for comparison, on the client's send times and with a
// sliding_counter on the epoch), prints every disagreement with its
// distance to the counter's nearest period boundary, and requires
// hrMinAgree of the decisions to agree, each disagreement within hrTolMs
// of a boundary.
func hrCompare(t *testing.T, c model.HAProxyRateConfig, got [][]hrReq) {
	name := fmt.Sprintf("haproxy_rate period_s=%g limit=%d counts=%s", c.PeriodS, c.Limit, c.Counts)
	epoch, err := model.ParseLabel(fmt.Sprintf("sliding_counter window_s=%d limit=%d", hrPeriodMs/1000, hrLimit))
	if err != nil {
		t.Fatal(err)
	}
	var n, agree, agreeDate, expired, agreeClient, agreeEpoch, adm, modAdm, far, idle, skewed int
	var maxSkewUs int64
	for k, reqs := range got {
		d, _ := model.NewHAProxyRateDecider(c, 0)
		dd, _ := model.NewHAProxyRateDecider(c, 0)
		dc, _ := model.NewHAProxyRateDecider(c, 0)
		de, _ := model.NewDeciderAt(epoch, 0)
		var lastMs, counted int64
		for i, r := range reqs {
			ms := r.haproxyUs / 1000
			gap := ms - lastMs
			if i > 0 && gap >= 2*hrPeriodMs {
				idle++
			}
			lastMs = ms
			dist := int64(-1) // distance to a boundary; -1 for a new key
			if start, p, ok := d.(periodStarter).PeriodStartMs(); ok {
				dist = min(abs(ms-start), abs(ms-start-p), abs(ms-start-2*p))
			}
			proxy := r.status == 200
			if r.status != 200 && r.status != 429 {
				t.Fatalf("key %d request %d: status %d", k, i, r.status)
			}
			step := int64(0)
			if proxy || c.Counts == model.HAProxyCountsAll {
				step = 1
			}
			counted += step
			if r.count != strconv.FormatInt(counted, 10) {
				if i > 0 && gap >= 2*hrPeriodMs && r.count == strconv.FormatInt(step, 10) {
					expired++ // the entry expired in the idle gap and is new
					counted = step
				} else {
					t.Errorf("key %d request %d: HAProxy has counted %s requests of the key, the replay %d (a request sent twice, or lost)", k, i, r.count, counted)
				}
			}
			mod := d.Allow(ms * 1e6)
			n++
			if proxy {
				adm++
			}
			if mod {
				modAdm++
			}
			if r.dateUs/1000 != ms {
				skewed++
			}
			maxSkewUs = max(maxSkewUs, abs(r.haproxyUs-r.dateUs))
			if dd.Allow(r.dateUs*1e3) == proxy {
				agreeDate++
			}
			if dc.Allow(r.sentNs) == proxy {
				agreeClient++
			}
			if de.Allow(r.haproxyUs*1e3) == proxy {
				agreeEpoch++
			}
			if proxy == mod {
				agree++
				continue
			}
			if dist < 0 || dist > hrTolMs {
				far++
			}
			fmt.Printf("test-proxies: %s: key %d request %d at HAProxy %d.%03d ms (sent %+.3f ms from it, answered in %.3f ms): HAProxy admitted=%v (X-Rate %s), model admitted=%v; %d ms from a period boundary\n",
				name, k, i, ms, r.haproxyUs%1000, float64(r.sentNs-r.haproxyUs*1e3)/1e6, float64(r.rttNs)/1e6, proxy, r.rate, mod, dist)
		}
	}
	pct := func(a int) float64 { return 100 * float64(a) / float64(n) }
	msg := fmt.Sprintf("%s vs HAProxy: %d requests over %d keys (%d idle gaps of 2+ periods, after %d of which the entry had expired), admitted %d by HAProxy and %d by the model; "+
		"on HAProxy's times agreement %d/%d = %.2f%% (%d disagreements more than %d ms from a period boundary); "+
		"on its wall-clock date instead %.2f%% (%d requests in another ms than now, now − date up to %d µs); "+
		"on the client's send times %.2f%%; sliding_counter on the epoch %.2f%%",
		name, n, len(got), idle, expired, adm, modAdm, agree, n, pct(agree), far, hrTolMs, pct(agreeDate), skewed, maxSkewUs, pct(agreeClient), pct(agreeEpoch))
	fmt.Println("test-proxies: " + msg)
	t.Log(msg)
	if float64(agree) < hrMinAgree*float64(n) {
		t.Errorf("%s: agreement %.2f%% is below %.1f%%", name, pct(agree), 100*hrMinAgree)
	}
	if far > 0 {
		t.Errorf("%s: %d disagreements more than %d ms from a period boundary", name, far, hrTolMs)
	}
	if adm == 0 || adm == n || idle == 0 {
		t.Errorf("%s: the trace does not exercise the limit (%d of %d admitted, %d idle gaps)", name, adm, n, idle)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i+1])
		}
	}
	return string(b) + "\n"
}
