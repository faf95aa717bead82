//go:build proxies

// HAProxy's HTTP log through real HAProxy (make test-proxies): HAProxy
// started on free loopback ports with option httplog, one frontend with
// captured request headers and one without, logging each line three
// ways (raw to a file, RFC 3164 with its hostname to another, and the
// default "local" syslog format to a datagram socket, written to a file as
// a syslog daemon does: without the <priority>); requests sent with
// missing and empty fields (no User-Agent, no Host, HTTP/1.0, an aborted
// request, a bad request, a connection closed without one). Every line is
// read back by ingest: each request with its client address, its accept
// time to the millisecond and the status the client received; every
// other line malformed for want of a request's fields.
package ingest_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/proxytest"
)

// haproxyCase is one connection: what the client sends (closing its side
// after it when half is set) and the status it receives (0: none).
type haproxyCase struct {
	name, send string
	half       bool
}

var haproxyCases = []haproxyCase{
	{"full", "GET /full?q=1 HTTP/1.1\r\nHost: x.test\r\nUser-Agent: ua/1.0 (test)\r\nConnection: close\r\n\r\n", false},
	{"no user agent", "GET /noua HTTP/1.1\r\nHost: x.test\r\nConnection: close\r\n\r\n", false},
	{"empty user agent", "GET /emptyua HTTP/1.1\r\nHost: x.test\r\nUser-Agent:\r\nConnection: close\r\n\r\n", false},
	{"HTTP/1.0, no Host", "GET /h10 HTTP/1.0\r\n\r\n", false},
	{"aborted before the headers end", "GET /abort HTTP/1.1\r\nHost: x.test\r\n", true},
	{"bad request", "GARBAGE\r\n\r\n", false},
	{"nothing sent", "", true},
}

func TestProxiesHAProxyEmptyFields(t *testing.T) {
	haproxy := proxytest.Binary(t, "haproxy")
	dir := t.TempDir()
	var daemons sync.WaitGroup
	var socks []*net.UnixConn
	// syslogd listens on a datagram socket and writes each message as a
	// line without its <priority>, as a syslog daemon writes a file.
	syslogd := func(name string) (sock, file string) {
		sock, file = filepath.Join(dir, name+".sock"), filepath.Join(dir, name+".log")
		pc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		socks = append(socks, pc)
		daemons.Add(1)
		go func() {
			defer daemons.Done()
			f, _ := os.Create(file)
			defer f.Close()
			buf := make([]byte, 65536)
			pri := regexp.MustCompile(`^<\d+>`)
			for {
				n, err := pc.Read(buf)
				if err != nil {
					return
				}
				f.Write(append(pri.ReplaceAll(bytes.TrimRight(buf[:n], "\n"), nil), '\n'))
			}
		}()
		return sock, file
	}
	localSock, localFile := syslogd("syslog-local")
	rfcSock, rfcFile := syslogd("syslog-rfc3164")
	capPort, plainPort := proxytest.FreePort(t), proxytest.FreePort(t)
	conf := filepath.Join(dir, "haproxy.cfg")
	os.WriteFile(conf, []byte(fmt.Sprintf(`global
    log stdout format raw local0
    log stderr format rfc3164 local0
    log %[1]s format local local0
    log %[4]s format rfc3164 local0
defaults
    mode http
    log global
    option httplog
    timeout connect 1s
    timeout client 2s
    timeout server 2s
    timeout http-request 1s
frontend fe_capture
    bind 127.0.0.1:%[2]d
    capture request header Host len 32
    capture request header User-Agent len 64
    http-request return status 200 content-type text/plain string ok
frontend fe_plain
    bind 127.0.0.1:%[3]d
    http-request return status 200 content-type text/plain string ok
`, localSock, capPort, plainPort, rfcSock)), 0o644)
	rawFile, stderrFile := filepath.Join(dir, "stdout.log"), filepath.Join(dir, "stderr.log")
	stdout, _ := os.Create(rawFile)
	stderr, _ := os.Create(stderrFile)
	cmd := exec.Command(haproxy, "-f", conf, "-db")
	cmd.Env = append(os.Environ(), "TZ=UTC") // the accept date is local time
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGUSR1) // soft stop: logs flushed
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		stdout.Close()
		stderr.Close()
		time.Sleep(100 * time.Millisecond) // the last datagrams
		for _, pc := range socks {
			pc.Close()
		}
		daemons.Wait()
	}
	defer stop()
	var probes []time.Time
	for _, port := range []int{capPort, plainPort} {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			at := time.Now()
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
			if err == nil {
				probes = append(probes, at)
				// A probe that sends nothing is logged too: send a
				// request that the reading below knows.
				c.Write([]byte("GET /probe HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n"))
				readStatus(c)
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(stderrFile)
				t.Fatalf("haproxy did not listen on %d: %v\n%s", port, err, log)
			}
		}
	}
	// want are the connections in the order HAProxy logs them (each ends
	// before the next starts): when, and the status the client read.
	type conn struct {
		name string
		at   time.Time
		got  int
	}
	want := []conn{{"probe", probes[0], 200}, {"probe", probes[1], 200}}
	for _, port := range []int{capPort, plainPort} {
		for _, c := range haproxyCases {
			time.Sleep(37 * time.Millisecond) // accept dates apart
			at := time.Now()
			nc, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				t.Fatal(err)
			}
			nc.Write([]byte(c.send))
			if c.half {
				nc.(*net.TCPConn).CloseWrite()
			}
			want = append(want, conn{c.name, at, readStatus(nc)})
			nc.Close()
		}
	}
	time.Sleep(200 * time.Millisecond)
	stop()

	for _, file := range []string{rawFile, stderrFile, localFile, rfcFile} {
		data, _ := os.ReadFile(file)
		for _, opt := range []ingest.ReaderOptions{
			{Format: ingest.FormatHAProxy},
			{Format: ingest.FormatAuto},
			{Format: ingest.FormatHAProxy, Template: ingest.HAProxyHTTPFormat}, // haproxy_format: httplog's, read by the format string reader
		} {
			format := fmt.Sprintf("%v %q", opt.Format, opt.Template)
			rd, err := ingest.NewReader(bytes.NewReader(data), opt)
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			for ; rd.Scan(); i++ {
				rec := rd.Record()
				if i >= len(want) {
					t.Errorf("%s (%v): line %d is request %d of %d: %s", filepath.Base(file), format, rec.Line, i+1, len(want), lineOf(data, rec.Line))
					continue
				}
				w := want[i]
				at := time.Unix(rec.Time, rec.TimeNs)
				// The accept date is when HAProxy accepted the connection:
				// just after the client's connect on the loopback.
				d := at.Sub(w.at)
				status := w.got
				if status == 0 {
					// No response: HAProxy logs 400 for a connection closed
					// before a whole request (termination state CR--).
					status = 400
				}
				if string(rec.Host) != "127.0.0.1" || d < -2*time.Millisecond || d > 250*time.Millisecond || rec.TimeNs%1e6 != 0 || rec.Status != status {
					t.Errorf("%s (%v): line %d (%s, sent %s, status %d) read as %s at %s (%v), status %d: %s", filepath.Base(file), format, rec.Line,
						w.name, w.at.UTC().Format("15:04:05.000"), w.got, rec.Host, at.UTC().Format("15:04:05.000"), d, rec.Status, lineOf(data, rec.Line))
				}
			}
			if rd.Err() != nil || i != len(want) {
				t.Errorf("%s (%v): %d requests of %d, %v", filepath.Base(file), format, i, len(want), rd.Err())
			}
			if rd.Format() != ingest.FormatHAProxy && opt.Format == ingest.FormatAuto {
				t.Errorf("%s (%v): read as %v", filepath.Base(file), format, rd.Format())
			}
			// The rest are HAProxy's own messages (proxies stopping),
			// malformed for want of a client and accept date (or, read by
			// the format string, of the " [" after the client port).
			for _, e := range rd.Samples() {
				if !(strings.Contains(e.Msg, "accept date") || strings.Contains(e.Msg, `" [" after %cp`)) || !strings.Contains(e.Excerpt, "Proxy ") {
					t.Errorf("%s (%v): malformed %+v", filepath.Base(file), format, e)
				}
			}
			if rd.Malformed() == 0 {
				t.Errorf("%s (%v): no malformed line (HAProxy's messages?)", filepath.Base(file), format)
			}
		}
		fmt.Printf("test-proxies: haproxy %s: %d requests (captures, no User-Agent, no Host, HTTP/1.0, aborted, bad, empty) read back with key, ms time and status\n",
			filepath.Base(file), len(want))
	}
}

// lineOf is line n (1-based) of data.
func lineOf(data []byte, n int64) string {
	lines := strings.Split(string(data), "\n")
	if n < 1 || int(n) > len(lines) {
		return ""
	}
	return lines[n-1]
}

// readStatus reads an HTTP response's status code from c (0: none).
func readStatus(c net.Conn) int {
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	var code int
	if err == nil {
		fmt.Sscanf(line, "HTTP/1.%d %d", new(int), &code)
	}
	return code
}
