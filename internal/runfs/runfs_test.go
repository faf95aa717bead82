package runfs

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestMain lets the test binary hold a lock as a second process:
// RUNFS_HOLD=DIR[,shared] locks DIR, prints "locked" and waits for stdin to close.
func TestMain(m *testing.M) {
	if spec := os.Getenv("RUNFS_HOLD"); spec != "" {
		dir, mode, _ := strings.Cut(spec, ",")
		l, err := Acquire(dir, mode == "shared")
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		bufio.NewReader(os.Stdin).ReadString('\n')
		l.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hold starts a process holding dir's lock; the returned func ends it.
func hold(t *testing.T, dir string, shared bool) func() {
	t.Helper()
	spec := dir
	if shared {
		spec += ",shared"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RUNFS_HOLD="+spec)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("helper: %q", line)
	}
	return func() { stdin.Close(); cmd.Wait() }
}

func TestLockTwoProcesses(t *testing.T) {
	if runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no advisory locks")
	}
	dir := t.TempDir()
	stop := hold(t, dir, false)
	_, err := Acquire(dir, false)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: %v, want a LockedError", err)
	}
	if le.PID <= 0 || !strings.Contains(err.Error(), dir) {
		t.Errorf("message %q: want the directory and the holder's pid", err)
	}
	if _, err := Acquire(dir, true); !errors.Is(err, ErrLocked) {
		t.Errorf("shared while held exclusively: %v", err)
	}
	stop()
	if _, err := os.Lstat(filepath.Join(dir, LockName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left after release: %v", err)
	}
	l, err := Acquire(dir, false)
	if err != nil {
		t.Fatalf("after the holder ended: %v", err)
	}
	l.Release()
}

func TestLockShared(t *testing.T) {
	dir := t.TempDir()
	stop := hold(t, dir, true)
	l, err := Acquire(dir, true)
	if err != nil {
		t.Fatalf("two shards: %v", err)
	}
	if _, err := Acquire(dir, false); !errors.Is(err, ErrLocked) {
		t.Errorf("exclusive while shared: %v", err)
	}
	l.Release()
	if _, err := os.Lstat(filepath.Join(dir, LockName)); err != nil {
		t.Errorf("a shard removed the lock file while another holds it: %v", err)
	}
	stop()
	if _, err := os.Lstat(filepath.Join(dir, LockName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the last shard left the lock file: %v", err)
	}
}

func TestLockFileSymlinkRefused(t *testing.T) {
	dir, victim := t.TempDir(), filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	if err := os.Symlink(victim, filepath.Join(dir, LockName)); err != nil {
		t.Skip(err)
	}
	if _, err := Acquire(dir, false); err == nil {
		t.Fatal("locked through a symbolic link")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim changed: %q", b)
	}
}

func TestDirRefusesSymlink(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(root, "report")); err != nil {
		t.Skip(err)
	}
	if _, err := Dir(root, "report"); !errors.Is(err, ErrSymlink) {
		t.Errorf("Dir through a link: %v", err)
	}
	if _, err := Dir(root, "../x"); err == nil {
		t.Error("Dir accepted ../x")
	}
	p, err := Dir(root, filepath.Join("a", "b"))
	if err != nil || p != filepath.Join(root, "a", "b") {
		t.Fatalf("Dir a/b: %q %v", p, err)
	}
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		t.Errorf("a/b not created: %v", err)
	}
}

func TestWriteFileReplacesLink(t *testing.T) {
	dir, victim := t.TempDir(), filepath.Join(t.TempDir(), "index.html")
	os.WriteFile(victim, []byte("keep"), 0o644)
	if err := os.Symlink(victim, filepath.Join(dir, "index.html")); err != nil {
		t.Skip(err)
	}
	if err := WriteFile(dir, "index.html", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim overwritten: %q", b)
	}
	st, err := os.Lstat(filepath.Join(dir, "index.html"))
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("index.html: %v %v", st, err)
	}
	if err := WriteFile(dir, "../x", nil); err == nil {
		t.Error("WriteFile accepted ../x")
	}
}
