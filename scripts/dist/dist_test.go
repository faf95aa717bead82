package main

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestArchive checks the archives of `make dist` (RATESWEEP_DIST_DIR names
// their directory; `make dist` sets it): SHA256SUMS holds, and the binary of
// the linux/amd64 archive, unpacked, prints its version and runs `tables`.
func TestArchive(t *testing.T) {
	dir := os.Getenv("RATESWEEP_DIST_DIR")
	if dir == "" {
		t.Skip("RATESWEEP_DIST_DIR not set: `make dist` runs this test on its archives")
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var linux string
	sc := bufio.NewScanner(strings.NewReader(string(sums)))
	n := 0 // files listed
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: bad line %q", sc.Text())
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
			t.Errorf("%s: SHA-256 %x, SHA256SUMS says %s", name, h, sum)
		}
		if strings.HasSuffix(name, "-linux-amd64.tar.gz") {
			linux = filepath.Join(dir, name)
		}
		n++
	}
	platforms := Platforms
	if p := os.Getenv("RATESWEEP_DIST_PLATFORMS"); p != "" {
		platforms = strings.Fields(strings.ReplaceAll(p, ",", " "))
	}
	for _, p := range platforms {
		if !strings.Contains(string(sums), "-"+strings.ReplaceAll(p, "/", "-")+".") {
			t.Errorf("SHA256SUMS has no archive for %s", p)
		}
	}
	if n == 0 {
		t.Error("SHA256SUMS is empty")
	}
	if linux == "" {
		t.Fatal("no linux/amd64 archive in SHA256SUMS")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("cannot run the linux/amd64 binary on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bin := unpack(t, linux, t.TempDir())
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("ratesweep --version: %v\n%s", err, out)
	}
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(linux), "ratesweep-"), "-linux-amd64.tar.gz")
	if !strings.Contains(string(out), version) {
		t.Errorf("ratesweep --version printed %q, want the archive's version %s", out, version)
	}
	out, err = exec.Command(bin, "tables").CombinedOutput()
	if err != nil {
		t.Fatalf("ratesweep tables: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "token bucket") && !strings.Contains(string(out), "token_bucket") {
		t.Errorf("ratesweep tables printed no token bucket row:\n%s", out)
	}
}

// unpack extracts a .tar.gz into dir and returns the path of its ratesweep.
func unpack(t *testing.T, archive, dir string) string {
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	bin := ""
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(hdr.Name))
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, os.FileMode(hdr.Mode)); err != nil {
			t.Fatal(err)
		}
		if filepath.Base(hdr.Name) == "ratesweep" {
			bin = p
		}
	}
	for _, want := range []string{"LICENSE", "NOTICE", "README.md", "THIRD_PARTY_NOTICES", "usage.md", "compatibility.md", "tradeoff.png"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("%s: %s missing", archive, want)
		}
	}
	if bin == "" {
		t.Fatalf("%s: no ratesweep binary", archive)
	}
	return bin
}
