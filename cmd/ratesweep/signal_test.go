package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Every command ends within about a second of SIGTERM or SIGINT, even one
// blocked where its context is not looked at (here: reading a standard
// input that never sends anything), with 143 or 130.
func TestSignalEndsBlockedCommand(t *testing.T) {
	for _, sig := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 143}, {syscall.SIGINT, 130}} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := helperCommand("inspect", "-")
		cmd.Stdin = r
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		time.Sleep(500 * time.Millisecond) // started and blocked in its read
		if err := cmd.Process.Signal(sig.sig); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		select {
		case err := <-done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != sig.code {
				t.Errorf("%v: %v, want exit %d; stderr: %s", sig.sig, err, sig.code, stderr.String())
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("%v: ended %v after the signal", sig.sig, d)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("%v: still running 10 s after the signal; stderr: %s", sig.sig, stderr.String())
		}
		w.Close()
	}
}
