//go:build unix

// Package proxytest runs the real servers of the proxy tests (nginx,
// HAProxy, fail2ban; go test -tags proxies): it finds their binaries,
// picks free loopback ports, writes their configuration files, and starts
// each server in a process group of its own, stopping it by its process
// id when the test ends. Only tests import it.
package proxytest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary returns the path of the installed program name, looked up in
// PATH and /usr/sbin (where Debian puts nginx, haproxy and
// fail2ban-server), failing the test when it is not installed.
func Binary(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); fileExists(p) {
		return p
	}
	t.Fatalf("%s is not installed (scripts/test-proxies.sh installs it)", name)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WriteFile writes a configuration (or any) file, creating its directory,
// and fails the test when it cannot.
func WriteFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stopWait is how long a server has to exit after SIGTERM before its
// process group is killed.
const stopWait = 10 * time.Second

// Start starts cmd in a process group of its own, its output going to
// logPath, and returns a function that stops it: SIGTERM to its process
// id, then SIGKILL to its process group if it has not exited after
// stopWait. The function may be called more than once; the test's cleanup
// calls it too. exited is closed when the process has exited.
func Start(t testing.TB, name string, cmd *exec.Cmd, logPath string) (stop func(), exited <-chan struct{}) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(stopWait):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its own group (Setpgid)
				<-done
			}
			out.Close()
		})
	}
	t.Cleanup(stop)
	return stop, done
}

// Serve is Start, then waits until the server accepts connections on
// port (127.0.0.1) and returns the function that stops it. A server that
// exits or does not listen within 10 s fails the test with its log
// (logPath, or errLog when not empty: nginx writes its errors there).
func Serve(t testing.TB, name string, cmd *exec.Cmd, port int, logPath, errLog string) (stop func()) {
	t.Helper()
	stop, exited := Start(t, name, cmd, logPath)
	if err := WaitPort(port, 10*time.Second, exited); err != nil {
		stop()
		if errLog == "" {
			errLog = logPath
		}
		log, _ := os.ReadFile(errLog)
		t.Fatalf("%s did not listen on 127.0.0.1:%d: %v\n%s", name, port, err, log)
	}
	return stop
}

// WaitPort waits until 127.0.0.1:port accepts a connection, for at most
// timeout, or until exited (when not nil) is closed.
func WaitPort(port int, timeout time.Duration, exited <-chan struct{}) error {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("the server exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// NginxConf writes dir/nginx.conf, a complete nginx configuration for a
// test: one worker in the foreground, its pid, error log and temporary
// files under dir, the http-level lines http (verbatim), and one server on
// 127.0.0.1:port with the server-level lines server and, in location /,
// the lines location before answering every request with dir/ok.txt
// (written too). It returns the configuration's path.
func NginxConf(t testing.TB, dir string, port int, http, server, location string) string {
	t.Helper()
	WriteFile(t, filepath.Join(dir, "ok.txt"), "ok\n")
	conf := filepath.Join(dir, "nginx.conf")
	WriteFile(t, conf, fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 256; }
http {
    client_body_temp_path %[1]s/body; proxy_temp_path %[1]s/proxy; fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi; scgi_temp_path %[1]s/scgi;
%[2]s
    server {
        listen 127.0.0.1:%[3]d;
        %[4]s
        location / {
            %[5]s
            root %[1]s;
            try_files /ok.txt =404;
        }
    }
}
`, dir, http, port, server, location))
	return conf
}

// HAProxy is a complete haproxy.cfg for a test: HTTP mode with the usual
// timeouts and one frontend, fe, on 127.0.0.1:Port. Every field but Port
// is lines to add (each ending in a newline, or empty).
type HAProxy struct {
	Port     int
	Global   string // after maxconn 256 in the global section
	Defaults string // after mode http, before the timeouts
	Before   string // sections before the frontend (a stick table's backend)
	Frontend string // after its bind line
	After    string // sections after the frontend
}

// Conf returns the configuration's text.
func (h HAProxy) Conf() string {
	return fmt.Sprintf(`global
    maxconn 256
%sdefaults
    mode http
%s    timeout connect 5s
    timeout client 30s
    timeout server 30s
%sfrontend fe
    bind 127.0.0.1:%d
%s%s`, h.Global, h.Defaults, h.Before, h.Port, h.Frontend, h.After)
}
