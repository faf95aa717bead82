//go:build proxies

// fail2ban as the penalty box's second oracle (make test-proxies): Debian's
// fail2ban-server runs in the foreground with its configuration, socket,
// pidfile and log under the test's directory, a jail over an access log
// written in real time and an action that records each ban and unban (no
// firewall). The test plays the firewall: a banned address's requests are
// not written to the log. Every ban's start and end is compared with the
// blocks of the model's penalty box on the same requests: a sliding window
// of findtime admitting maxretry−1 requests (fail2ban bans at the
// maxretry-th failure within findtime) with block_s = bantime.
//
// fail2ban decides on the times it parses from the log (Unix seconds to
// the millisecond, as nginx's $msec): a ban starts at the time of the failure that reached
// maxretry (the action's <time>) and ends bantime later, so these must
// equal the model's block to the millisecond. When the ban and unban are
// applied is wall-clock: the polling backend looks at the log at intervals
// growing from 0.2 to 0.8 s, the actions thread looks for new bans as
// often, so a ban is applied up to about 1.6 s after its line is written
// (more under load); that lag is printed and checked against f2bApplyTolS.
//
// fail2ban's failure count is not a sliding window: an address's failures
// stay in its list until a clean-up (at most every 5 s, on a ban or every
// 100 lines), and a failure more than findtime after the list's first
// scales the count to the rate over the whole span (FailTicket.adjustTime:
// retry × findtime / span, rounded) instead of forgetting the old ones. An
// address that comes back after a few failures is then banned early (a
// burst of 4 after one of 3, 10 s apart, is banned at its 4th), or late
// (the rescaled count can drop within a burst). Each address therefore
// sends one burst, shorter than findtime, so fail2ban's count is exact.
package export_test

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/internal/proxytest"
	"github.com/ratesweep/ratesweep/model"
)

const (
	f2bMaxRetry = 5
	f2bFindS    = 3
	f2bBanS     = 4
	// f2bAddrs is the number of addresses, one burst each.
	f2bAddrs = 12
	// f2bApplyTolS bounds how long after the model's block starts (ends)
	// fail2ban's action applies the ban (unban), s: its polling (up to
	// 1.6 s, see above) and the machine's load (measured up to 2.4 s at a
	// load average of 19 on 2 cores).
	f2bApplyTolS = 5.0
)

func TestFail2banLive(t *testing.T) {
	bin := proxytest.Binary(t, "fail2ban-server")
	dir := t.TempDir()
	logPath, bansPath := filepath.Join(dir, "access.log"), filepath.Join(dir, "bans.log")
	conf := filepath.Join(dir, "conf")
	files := map[string]string{
		"fail2ban.conf": fmt.Sprintf("[Definition]\nloglevel = INFO\nlogtarget = %s\nsocket = %s\npidfile = %s\ndbfile = :memory:\n",
			filepath.Join(dir, "fail2ban.log"), filepath.Join(dir, "fail2ban.sock"), filepath.Join(dir, "fail2ban.pid")),
		// Times as Unix seconds to the ms (nginx's $msec): fail2ban 1.0
		// keeps the fraction of an EPOCH time, but drops it from a
		// strptime pattern's %f (its datetemplate parses whole seconds).
		"filter.d/box.conf": "[Definition]\nfailregex = ^\\s*<HOST> GET\ndatepattern = ^EPOCH\n",
		// The action records each ban and unban: the ban's start as
		// fail2ban decided it (<time>, the failure's time in the log), its
		// length, and the wall clock when the action ran.
		"action.d/record.conf": fmt.Sprintf("[Definition]\nactionstart =\nactionstop =\nactioncheck =\nactionban = echo \"ban <ip> <time> <bantime> $(date +%%%%s.%%%%N)\" >> %[1]s\nactionunban = echo \"unban <ip> <time> <bantime> $(date +%%%%s.%%%%N)\" >> %[1]s\n", bansPath),
		"jail.conf": fmt.Sprintf("[box]\nenabled = true\nfilter = box\naction = record\nlogpath = %s\nbackend = polling\nmaxretry = %d\nfindtime = %d\nbantime = %d\nusedns = no\nlogtimezone = UTC\n",
			logPath, f2bMaxRetry, f2bFindS, f2bBanS),
	}
	for name, text := range files {
		proxytest.WriteFile(t, filepath.Join(conf, name), text)
	}
	proxytest.WriteFile(t, logPath, "")
	out, _ := exec.Command(bin, "-V").Output()
	fmt.Printf("test-proxies: fail2ban %s", out)
	stop, _ := proxytest.Start(t, "fail2ban-server", exec.Command(bin, "-f", "-x", "-c", conf), filepath.Join(dir, "server.out"))
	f2bWaitStarted(t, filepath.Join(dir, "fail2ban.log"))

	// Addresses 0.3 s apart, each one burst of 3 to 8 requests 150–250 ms
	// apart (at most 1.75 s, well within findtime even when the load delays
	// the writer; 5 or more trip the jail).
	rng := rand.New(rand.NewPCG(28, 6))
	type req struct {
		at   time.Duration
		addr int
	}
	var sched []req
	for a := range f2bAddrs {
		at := time.Duration(300*a) * time.Millisecond
		for range 3 + rng.IntN(6) {
			sched = append(sched, req{at, a})
			at += time.Duration(150+rng.IntN(100)) * time.Millisecond
		}
	}
	slices.SortStableFunc(sched, func(x, y req) int { return int(x.at - y.at) })
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Unix ns of every request, written or dropped, to the millisecond
	// the log line gives.
	sent := make([][]int64, f2bAddrs)
	dropped := 0
	start := time.Now().Add(500 * time.Millisecond)
	for _, r := range sched {
		time.Sleep(time.Until(start.Add(r.at)))
		now := time.Now().UTC().Truncate(time.Millisecond)
		sent[r.addr] = append(sent[r.addr], now.UnixNano())
		if f2bBanned(bansPath, f2bAddr(r.addr)) {
			dropped++ // the firewall: a banned address does not reach the server
			continue
		}
		fmt.Fprintf(logf, "%d.%03d %s GET /x\n", now.Unix(), now.Nanosecond()/1e6, f2bAddr(r.addr))
	}
	logf.Close()
	time.Sleep((f2bBanS + f2bApplyTolS + 1) * time.Second) // the last bans end
	stop()

	bans := f2bBans(t, bansPath)
	p := model.Policy{Algorithm: model.SlidingWindow, WindowS: f2bFindS, Limit: f2bMaxRetry - 1, BlockS: f2bBanS}
	var nBans, unbanned, bad int
	var worstApply time.Duration
	for a, ts := range sent {
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		var blocks [][2]int64
		end := int64(math.MinInt64)
		for _, tn := range ts {
			if !d.Allow(tn) && tn >= end {
				end = tn + f2bBanS*1e9
				blocks = append(blocks, [2]int64{tn, end})
			}
		}
		got := bans[f2bAddr(a)]
		if len(blocks) == 0 {
			unbanned++
		}
		if len(got) != len(blocks) {
			bad++
			fmt.Printf("test-proxies: fail2ban %s: %d bans, the model %d blocks (%s vs %s)\n", f2bAddr(a), len(got), len(blocks), f2bFormat(got), f2bFormatBlocks(blocks))
			continue
		}
		for i, b := range got {
			ds, de := time.Duration(b.start-blocks[i][0]), time.Duration(b.start+b.length-blocks[i][1])
			as, ae := time.Duration(b.banned-blocks[i][0]), time.Duration(b.unbanned-blocks[i][1])
			worstApply = max(worstApply, as, ae)
			nBans++
			ok := ds == 0 && de == 0 && as >= 0 && ae >= 0 && max(as, ae) <= f2bApplyTolS*time.Second
			if !ok {
				bad++
			}
			fmt.Printf("test-proxies: fail2ban %s ban %d: start %+d ms, end %+d ms from the model's block; applied %+d ms, lifted %+d ms after it (%v)\n",
				f2bAddr(a), i, ds.Milliseconds(), de.Milliseconds(), as.Milliseconds(), ae.Milliseconds(), ok)
		}
	}
	msg := fmt.Sprintf("fail2ban (maxretry %d, findtime %d s, bantime %d s) vs %s: %d requests of %d addresses, %d dropped while banned, %d bans equal to the model's blocks to the ms (%d addresses never blocked), applied within %d ms (tolerance %.1f s); %d disagreements",
		f2bMaxRetry, f2bFindS, f2bBanS, p.Canonical(), len(sched), f2bAddrs, dropped, nBans, unbanned, worstApply.Milliseconds(), f2bApplyTolS, bad)
	fmt.Println("test-proxies: " + msg)
	t.Log(msg)
	if bad > 0 || nBans == 0 || unbanned == 0 {
		t.Errorf("%d disagreements with the model's blocks (%d bans compared, %d addresses never blocked)", bad, nBans, unbanned)
	}
}

func f2bAddr(a int) string { return fmt.Sprintf("10.0.0.%d", a+1) }

// f2bWaitStarted waits until fail2ban's log says the jail started.
func f2bWaitStarted(t *testing.T, logPath string) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "Jail 'box' started") {
			return
		}
	}
	b, _ := os.ReadFile(logPath)
	t.Fatalf("fail2ban did not start its jail:\n%s", b)
}

// f2bBanned reports whether addr's last ban has no unban yet.
func f2bBanned(path, addr string) bool {
	b, _ := os.ReadFile(path)
	banned := false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 5 && f[1] == addr {
			banned = f[0] == "ban"
		}
	}
	return banned
}

// f2bBan is one ban as fail2ban decided it (start and length, from the
// log's times) and applied it (the wall clock of its ban and unban
// actions), Unix ns.
type f2bBan struct{ start, length, banned, unbanned int64 }

// f2bBans returns each address's bans.
func f2bBans(t *testing.T, path string) map[string][]f2bBan {
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no ban recorded: %v", err)
	}
	defer f.Close()
	out := map[string][]f2bBan{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			t.Fatalf("bans.log: %q", sc.Text())
		}
		var v [3]float64
		for i := range v {
			if v[i], err = strconv.ParseFloat(fs[2+i], 64); err != nil {
				t.Fatalf("bans.log: %q: %v", sc.Text(), err)
			}
		}
		// <time> is the log's time to the ms as a float: round to the ms.
		start := int64(math.Round(v[0]*1e3)) * 1e6
		wall := int64(math.Round(v[2] * 1e9))
		switch fs[0] {
		case "ban":
			out[fs[1]] = append(out[fs[1]], f2bBan{start: start, length: int64(v[1]) * 1e9, banned: wall, unbanned: -1})
		case "unban":
			bs := out[fs[1]]
			if len(bs) == 0 || bs[len(bs)-1].start != start {
				t.Fatalf("unban of %s without its ban: %q", fs[1], sc.Text())
			}
			bs[len(bs)-1].unbanned = wall
		}
	}
	return out
}

// f2bFormat prints bans as [start, end) in Unix ms.
func f2bFormat(bs []f2bBan) string {
	var b strings.Builder
	for _, x := range bs {
		fmt.Fprintf(&b, "[%d, %d) ", x.start/1e6, (x.start+x.length)/1e6)
	}
	return strings.TrimSpace(b.String())
}

// f2bFormatBlocks prints blocks as [start, end) in Unix ms.
func f2bFormatBlocks(bs [][2]int64) string {
	var b strings.Builder
	for _, x := range bs {
		fmt.Fprintf(&b, "[%d, %d) ", x[0]/1e6, x[1]/1e6)
	}
	return strings.TrimSpace(b.String())
}
