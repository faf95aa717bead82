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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/model"
)

const (
	f2bMaxRetry = 5
	f2bFindS    = 3
	f2bBanS     = 4
	// f2bTolS is the tolerance on a ban's start and end, s.
	f2bTolS = 1.0
)

func TestFail2banLive(t *testing.T) {
	bin, err := exec.LookPath("fail2ban-server")
	if err != nil {
		t.Fatal("fail2ban is not installed (apt-get install -y fail2ban)")
	}
	dir := t.TempDir()
	logPath, bansPath := filepath.Join(dir, "access.log"), filepath.Join(dir, "bans.log")
	conf := filepath.Join(dir, "conf")
	files := map[string]string{
		"fail2ban.conf": fmt.Sprintf("[Definition]\nloglevel = INFO\nlogtarget = %s\nsocket = %s\npidfile = %s\ndbfile = :memory:\n",
			filepath.Join(dir, "fail2ban.log"), filepath.Join(dir, "fail2ban.sock"), filepath.Join(dir, "fail2ban.pid")),
		"filter.d/box.conf": "[Definition]\nfailregex = ^\\s*<HOST> GET\ndatepattern = ^%%Y-%%m-%%dT%%H:%%M:%%S(?:\\.%%f)?\n",
		// The action records the wall clock of each ban and unban.
		"action.d/record.conf": fmt.Sprintf("[Definition]\nactionstart =\nactionstop =\nactioncheck =\nactionban = echo \"ban <ip> $(date +%%%%s.%%%%N)\" >> %[1]s\nactionunban = echo \"unban <ip> $(date +%%%%s.%%%%N)\" >> %[1]s\n", bansPath),
		"jail.conf": fmt.Sprintf("[box]\nenabled = true\nfilter = box\naction = record\nlogpath = %s\nbackend = polling\nmaxretry = %d\nfindtime = %d\nbantime = %d\nusedns = no\nlogtimezone = UTC\n",
			logPath, f2bMaxRetry, f2bFindS, f2bBanS),
	}
	for name, text := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(conf, name)), 0o755)
		if err := os.WriteFile(filepath.Join(conf, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(logPath, nil, 0o644)
	out, _ := exec.Command(bin, "-V").Output()
	fmt.Printf("test-proxies: fail2ban %s", out)
	cmd := exec.Command(bin, "-f", "-x", "-c", conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	serverOut, _ := os.Create(filepath.Join(dir, "server.out"))
	cmd.Stdout, cmd.Stderr = serverOut, serverOut
	if err := cmd.Start(); err != nil {
		t.Fatalf("fail2ban-server: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	f2bWaitStarted(t, filepath.Join(dir, "fail2ban.log"))

	// Four addresses, bursts of 3 to 8 requests 200–400 ms apart (5 or
	// more trip the jail), idle long enough between bursts for a ban to end
	// and the count to be forgotten.
	rng := rand.New(rand.NewPCG(28, 5))
	type req struct {
		at   time.Duration
		addr int
	}
	var sched []req
	for a := range 4 {
		at := time.Duration(300*a) * time.Millisecond
		for range 3 {
			for range 3 + rng.IntN(6) {
				sched = append(sched, req{at, a})
				at += time.Duration(200+rng.IntN(200)) * time.Millisecond
			}
			at += (f2bBanS + f2bFindS + 2) * time.Second
		}
	}
	slices.SortStableFunc(sched, func(x, y req) int { return int(x.at - y.at) })
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	sent := make([][]int64, 4) // Unix ns of every request, written or dropped
	dropped := 0
	start := time.Now().Add(500 * time.Millisecond)
	for _, r := range sched {
		time.Sleep(time.Until(start.Add(r.at)))
		now := time.Now().UTC()
		sent[r.addr] = append(sent[r.addr], now.UnixNano())
		if f2bBanned(bansPath, f2bAddr(r.addr)) {
			dropped++ // the firewall: a banned address does not reach the server
			continue
		}
		fmt.Fprintf(logf, "%s %s GET /x\n", now.Format("2006-01-02T15:04:05.000"), f2bAddr(r.addr))
	}
	logf.Close()
	time.Sleep((f2bBanS + 2) * time.Second) // the last bans end
	stop()

	bans := f2bBans(t, bansPath)
	p := model.Policy{Algorithm: model.SlidingWindow, WindowS: f2bFindS, Limit: f2bMaxRetry - 1, BlockS: f2bBanS}
	var nBans, far int
	var worstStart, worstEnd float64
	for a, ts := range sent {
		d, err := model.NewDecider(p)
		if err != nil {
			t.Fatal(err)
		}
		var blocks [][2]float64
		end := int64(math.MinInt64)
		for _, tn := range ts {
			if !d.Allow(tn) && tn >= end {
				end = tn + f2bBanS*1e9
				blocks = append(blocks, [2]float64{float64(tn) / 1e9, float64(end) / 1e9})
			}
		}
		got := bans[f2bAddr(a)]
		if len(got) != len(blocks) {
			t.Errorf("%s: fail2ban banned %d times, the model blocked %d times (%v vs %v)", f2bAddr(a), len(got), len(blocks), got, blocks)
			continue
		}
		for i, b := range got {
			ds, de := b[0]-blocks[i][0], b[1]-blocks[i][1]
			worstStart, worstEnd = max(worstStart, math.Abs(ds)), max(worstEnd, math.Abs(de))
			nBans++
			ok := math.Abs(ds) <= f2bTolS && math.Abs(de) <= f2bTolS
			if !ok {
				far++
			}
			fmt.Printf("test-proxies: fail2ban %s ban %d: start %+.3f s, end %+.3f s from the model's block (%v)\n", f2bAddr(a), i, ds, de, ok)
		}
	}
	msg := fmt.Sprintf("fail2ban (maxretry %d, findtime %d s, bantime %d s) vs %s: %d requests, %d dropped while banned, %d bans matched to the model's blocks; start within %.3f s, end within %.3f s (tolerance %.1f s); %d beyond",
		f2bMaxRetry, f2bFindS, f2bBanS, p.Canonical(), len(sched), dropped, nBans, worstStart, worstEnd, f2bTolS, far)
	fmt.Println("test-proxies: " + msg)
	t.Log(msg)
	if far > 0 || nBans == 0 {
		t.Errorf("%d bans beyond %.1f s of the model's blocks (%d compared)", far, f2bTolS, nBans)
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
		if len(f) == 3 && f[1] == addr {
			banned = f[0] == "ban"
		}
	}
	return banned
}

// f2bBans returns each address's bans: [start, end] as Unix seconds.
func f2bBans(t *testing.T, path string) map[string][][2]float64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no ban recorded: %v", err)
	}
	defer f.Close()
	out := map[string][][2]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			t.Fatalf("bans.log: %q", sc.Text())
		}
		v, err := strconv.ParseFloat(fs[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		switch fs[0] {
		case "ban":
			out[fs[1]] = append(out[fs[1]], [2]float64{v, math.NaN()})
		case "unban":
			bs := out[fs[1]]
			if len(bs) == 0 {
				t.Fatalf("unban of %s without a ban", fs[1])
			}
			bs[len(bs)-1][1] = v
		}
	}
	return out
}
