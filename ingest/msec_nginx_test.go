//go:build proxies

// The exported nginx log_format through real nginx (make test-proxies):
// nginx started on a free loopback port with the log_format of ratesweep
// export --to nginx, requests sent at known sub-second times, and the
// access log it writes read back by ingest at millisecond precision from
// $msec, detected as Combined and read as format nginx by that log_format.
package ingest_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/export"
	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/model"
)

func TestProxiesNginxMsecReplay(t *testing.T) {
	nginx := proxyBinary(t, "nginx")
	p, _ := model.ParseLabel("nginx rate=10 burst=5")
	res, err := export.Export(p, "nginx", export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var httpLines []string
	for _, l := range strings.Split(res.Config, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			httpLines = append(httpLines, l)
		}
	}
	m := regexp.MustCompile(`(?m)^log_format (\S+) '(.*)';$`).FindStringSubmatch(res.Config)
	if m == nil {
		t.Fatalf("no log_format in the export:\n%s", res.Config)
	}
	name, logFormat := m[1], m[2]
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("ok\n"), 0o644)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := filepath.Join(dir, "nginx.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 64; }
http {
    client_body_temp_path %[1]s/body; proxy_temp_path %[1]s/proxy; fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi; scgi_temp_path %[1]s/scgi;
    %[2]s
    server {
        listen 127.0.0.1:%[3]d;
        access_log %[1]s/access.log %[4]s;
        location / {
            limit_req zone=%[4]s burst=5;
            limit_req_dry_run on;
            root %[1]s;
            try_files /ok.txt =404;
        }
    }
}
`, dir, strings.Join(httpLines, "\n    "), port, name)), 0o644)
	cmd := exec.Command(nginx, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := os.Create(filepath.Join(dir, "stdout.log"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		out.Close()
	}
	defer stop()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx did not listen: %v\n%s", err, log)
		}
	}
	// 40 requests 137 ms apart: most fall inside a second, not on one.
	const n, gap = 40, 137 * time.Millisecond
	client := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	sent := make([]time.Time, n)
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * gap)))
		sent[i] = time.Now()
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/r%d", port, i))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	stop() // flushes the access log
	log := filepath.Join(dir, "access.log")
	for _, opt := range []ingest.Options{
		{}, // detected: Combined, time from $msec
		{Reader: ingest.ReaderOptions{Format: ingest.FormatNginx, Template: logFormat}},
	} {
		tr, err := ingest.Load(context.Background(), log, opt)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Requests() != n || !tr.SubSecond || tr.Stats.Malformed != 0 || len(tr.Keys) != 1 {
			t.Fatalf("%v: %d requests, sub-second %v, stats %+v", tr.Format, tr.Requests(), tr.SubSecond, tr.Stats)
		}
		times := tr.Times(0)
		whole := 0
		for i, ns := range times {
			at := time.Unix(tr.StartUnix, ns)
			if ns%int64(time.Second) == 0 {
				whole++
			}
			// nginx logs when the response is written: within a few
			// milliseconds of the request on the loopback.
			if d := at.Sub(sent[i]); d < -2*time.Millisecond || d > 50*time.Millisecond {
				t.Errorf("%v: request %d logged at %s, sent at %s (%v)", tr.Format, i, at.Format("15:04:05.000"), sent[i].Format("15:04:05.000"), d)
			}
		}
		if whole > n/4 {
			t.Errorf("%v: %d of %d times on a whole second: read at second precision", tr.Format, whole, n)
		}
		fmt.Printf("test-proxies: nginx $msec: %d requests read back as %v at millisecond precision (first %s)\n",
			n, tr.Format, time.Unix(tr.StartUnix, times[0]).UTC().Format("15:04:05.000"))
	}
}
