//go:build proxies

// fail2ban against the model's fail2ban algorithm (make test-proxies):
// Debian's fail2ban-server (1.0.2) runs in the foreground with its
// configuration, socket, pidfile and log under the test's directory, a jail
// over an access log written in real time and an action that records each
// ban and unban (no firewall). The test plays an instant firewall: a
// request that falls in a ban of the model's fail2ban policy is not written
// to the log; a ban fail2ban starts at another time, or not at all, shows
// up below as a differing or missing ban. Every ban's start and end is
// compared with the model's to the millisecond.
//
// fail2ban decides on the times it parses from the log (Unix seconds to
// the millisecond, as nginx's $msec): a ban starts at the time of the
// failure that reached maxretry (the action's <time>) and ends bantime
// later. When the ban and unban are applied is wall-clock: the polling
// backend looks at the log at intervals growing from 0.2 to 0.8 s, the
// actions thread looks for new bans as often, so a ban is applied up to
// about 1.6 s after its line is written (more under load); that lag is
// printed and checked against f2bApplyTolS.
//
// Addresses come in three kinds: one burst (banned or not); a burst that
// is banned, then another after the ban was lifted (the ban deleted the
// address's count: counting starts afresh); failures spread over more than
// findtime and a burst within findtime of the last (fail2ban rescales the
// count to the rate over the span, retry · findtime / span, rounded, and
// bans where a sliding window would not). fail2ban forgets an address at a
// clean-up that runs at most every 5 s of wall clock, the model as soon as
// its last failure is findtime old: every comeback here is either after a
// ban or well within findtime of the address's last failure, so the two
// agree whenever the clean-up runs.
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
	f2bFindS    = 10
	f2bBanS     = 4
	// f2bOnce, f2bAgain and f2bRescale are the addresses of each kind.
	f2bOnce, f2bAgain, f2bRescale = 8, 3, 3
	f2bAddrs                      = f2bOnce + f2bAgain + f2bRescale
	// f2bApplyTolS bounds how long after the model's ban starts (ends)
	// fail2ban's action applies the ban (unban), s: its polling (up to
	// 1.6 s, see above) and the machine's load (measured up to 2.4 s at a
	// load average of 19 on 2 cores).
	f2bApplyTolS = 5.0
	// f2bAgainS is when an address of the second kind comes back after its
	// first burst's start, s: after its ban's end and fail2ban's unban.
	f2bAgainS = 1 + f2bBanS + f2bApplyTolS + 1
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

	// Addresses start 0.3 s apart. One burst: 3 to 8 requests 150–250 ms
	// apart (5 or more trip the jail). Again: a burst of 6 to 8, then at
	// f2bAgainS a burst of 4 to 7. Rescale: failures near 0, 2.5 and 5 s,
	// then from 10.6 s four 200 ms apart (fail2ban: round(3·10/10.6)+1 = 4,
	// then round(4·10/10.2)+1 = 5 bans at the second; a 10 s sliding
	// window holds 4 there).
	rng := rand.New(rand.NewPCG(28, 6))
	type req struct {
		at   time.Duration
		addr int
	}
	var sched []req
	burst := func(a int, at time.Duration, n int) {
		for range n {
			sched = append(sched, req{at, a})
			at += time.Duration(150+rng.IntN(100)) * time.Millisecond
		}
	}
	kind := make([]string, f2bAddrs)
	for a := range f2bAddrs {
		at := time.Duration(300*a) * time.Millisecond
		switch {
		case a < f2bOnce:
			kind[a] = "once"
			burst(a, at, 3+rng.IntN(6))
		case a < f2bOnce+f2bAgain:
			kind[a] = "again"
			burst(a, at, 6+rng.IntN(3))
			burst(a, at+f2bAgainS*time.Second, 4+rng.IntN(4))
		default:
			kind[a] = "rescale"
			for _, ms := range []int{0, 2500, 5000, 10600, 10800, 11000, 11200} {
				sched = append(sched, req{at + time.Duration(ms+rng.IntN(50))*time.Millisecond, a})
			}
		}
	}
	slices.SortStableFunc(sched, func(x, y req) int { return int(x.at - y.at) })
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := model.Policy{Algorithm: model.Fail2ban, WindowS: f2bFindS, Limit: f2bMaxRetry, MitigationTimeoutS: f2bBanS}
	// The sliding window's penalty box, fail2ban's literal reading, for
	// comparison: it bans at the maxretry-th failure within findtime.
	sw := model.Policy{Algorithm: model.SlidingWindow, WindowS: f2bFindS, Limit: f2bMaxRetry - 1, BlockS: f2bBanS}
	deciders, windows := make([]model.Decider, f2bAddrs), make([]model.Decider, f2bAddrs)
	for a := range f2bAddrs {
		if deciders[a], err = model.NewDecider(p); err != nil {
			t.Fatal(err)
		}
		windows[a], _ = model.NewDecider(sw)
	}
	// The model's bans [start, end) per address, Unix ns, and the sliding
	// window's block starts.
	blocks := make([][][2]int64, f2bAddrs)
	swStarts := make([][]int64, f2bAddrs)
	dropped := 0
	start := time.Now().Add(500 * time.Millisecond)
	for _, r := range sched {
		time.Sleep(time.Until(start.Add(r.at)))
		now := time.Now().UTC().Truncate(time.Millisecond)
		tn := now.UnixNano()
		d := deciders[r.addr]
		before, _, _ := model.BlockStats(d, math.MaxInt64)
		ok := d.Allow(tn)
		if after, _, _ := model.BlockStats(d, math.MaxInt64); after > before {
			blocks[r.addr] = append(blocks[r.addr], [2]int64{tn, tn + f2bBanS*1e9})
		}
		before, _, _ = model.BlockStats(windows[r.addr], math.MaxInt64)
		windows[r.addr].Allow(tn)
		if after, _, _ := model.BlockStats(windows[r.addr], math.MaxInt64); after > before {
			swStarts[r.addr] = append(swStarts[r.addr], tn)
		}
		if !ok {
			dropped++ // the firewall: a banned address does not reach the server
			continue
		}
		fmt.Fprintf(logf, "%d.%03d %s GET /x\n", now.Unix(), now.Nanosecond()/1e6, f2bAddr(r.addr))
	}
	logf.Close()
	time.Sleep((f2bBanS + f2bApplyTolS + 1) * time.Second) // the last bans end
	stop()

	bans := f2bBans(t, bansPath)
	var nBans, unbanned, bad, swDiffer int
	equal := map[string][2]int{} // by kind: bans equal, bans compared
	var worstApply time.Duration
	for a := range f2bAddrs {
		bl := blocks[a]
		got := bans[f2bAddr(a)]
		if len(bl) == 0 {
			unbanned++
		}
		if !slices.Equal(swStarts[a], starts(bl)) {
			swDiffer++
		}
		if len(got) != len(bl) {
			bad++
			e := equal[kind[a]]
			equal[kind[a]] = [2]int{e[0], e[1] + max(len(got), len(bl))}
			fmt.Printf("test-proxies: fail2ban %s (%s): %d bans, the model %d (%s vs %s)\n", f2bAddr(a), kind[a], len(got), len(bl), f2bFormat(got), f2bFormatBlocks(bl))
			continue
		}
		for i, b := range got {
			ds, de := time.Duration(b.start-bl[i][0]), time.Duration(b.start+b.length-bl[i][1])
			as, ae := time.Duration(b.banned-bl[i][0]), time.Duration(b.unbanned-bl[i][1])
			worstApply = max(worstApply, as, ae)
			nBans++
			ok := ds == 0 && de == 0 && as >= 0 && ae >= 0 && max(as, ae) <= f2bApplyTolS*time.Second
			e := equal[kind[a]]
			equal[kind[a]] = [2]int{e[0] + b2i(ds == 0 && de == 0), e[1] + 1}
			if !ok {
				bad++
			}
			fmt.Printf("test-proxies: fail2ban %s (%s) ban %d: start %+d ms, end %+d ms from the model's ban; applied %+d ms, lifted %+d ms after it (%v)\n",
				f2bAddr(a), kind[a], i, ds.Milliseconds(), de.Milliseconds(), as.Milliseconds(), ae.Milliseconds(), ok)
		}
	}
	var byKind []string
	for _, k := range []string{"once", "again", "rescale"} {
		byKind = append(byKind, fmt.Sprintf("%s %d of %d", k, equal[k][0], equal[k][1]))
	}
	msg := fmt.Sprintf("fail2ban (maxretry %d, findtime %d s, bantime %d s) vs %s: %d requests of %d addresses, %d dropped while banned, %d bans equal to the model's to the ms (%s; %d addresses never banned; the sliding window %s bans otherwise at %d addresses), applied within %d ms (tolerance %.1f s); %d disagreements",
		f2bMaxRetry, f2bFindS, f2bBanS, p.Canonical(), len(sched), f2bAddrs, dropped, nBans, strings.Join(byKind, ", "), unbanned, sw.Canonical(), swDiffer, worstApply.Milliseconds(), f2bApplyTolS, bad)
	fmt.Println("test-proxies: " + msg)
	t.Log(msg)
	if bad > 0 || nBans == 0 || unbanned == 0 || equal["again"][0] == 0 || equal["rescale"][0] == 0 {
		t.Errorf("%d disagreements with the model's bans (%d bans compared, %d addresses never banned)", bad, nBans, unbanned)
	}
}

// starts are the blocks' starts.
func starts(bl [][2]int64) []int64 {
	var s []int64
	for _, b := range bl {
		s = append(s, b[0])
	}
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
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
