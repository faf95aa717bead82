package sweep

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeGzipMembers writes members gzip members of lines log lines each
// (highly compressible, as real logs are) and returns the path and the
// uncompressed size.
func writeGzipMembers(t *testing.T, members, lines int) (string, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "access.log.gz")
	var out bytes.Buffer
	var size int64
	for m := range members {
		zw := gzip.NewWriter(&out)
		for i := range lines {
			n, _ := fmt.Fprintf(zw, "10.0.%d.%d - - [01/Jul/1995:00:00:01 -0400] \"GET / HTTP/1.0\" 200 1\n", m%250, i%250)
			size += int64(n)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, size
}

// A gzip of many members is sized by sampling its members, not by its last
// member's ISIZE nor by a fixed ratio: the estimate covers every request,
// exactly when the sample reads the whole file, and grows with the file.
func TestGzipMembersEstimate(t *testing.T) {
	small, smallSize := writeGzipMembers(t, 40, 500)
	st, _ := os.Stat(small)
	if r := float64(smallSize) / float64(st.Size()); r <= gzipRatio {
		t.Fatalf("the test log compresses %.0f:1, not more than the fixed ratio %d:1", r, gzipRatio)
	}
	reqs, how := logRequests(small)
	if !strings.Contains(how, "uncompressed") {
		t.Errorf("how: %q", how)
	}
	if want := float64(smallSize) / logLineBytes; reqs != want {
		t.Errorf("a fully sampled gzip: %.0f requests (%s), want %.0f", reqs, how, want)
	}
	// Larger than the sample: extrapolated from it, never below the truth,
	// and ten times the members is about ten times the estimate.
	const sampleIn, sampleOut = 8 << 10, 256 << 10
	est := func(path string) int64 {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, _ := f.Stat()
		n, ok := gzipSizeSampled(f, st.Size(), sampleIn, sampleOut)
		if !ok {
			t.Fatal("not a gzip")
		}
		return n
	}
	smallEst := est(small)
	big, bigSize := writeGzipMembers(t, 400, 500)
	bigEst := est(big)
	if smallEst < smallSize || bigEst < bigSize || smallEst > 2*smallSize || bigEst > 2*bigSize {
		t.Errorf("sampled estimates %d of %d bytes and %d of %d", smallEst, smallSize, bigEst, bigSize)
	}
	if r := float64(bigEst) / float64(smallEst); r < 8 || r > 12 {
		t.Errorf("ten times the members: %.1f times the estimate", r)
	}
}

// A scenario's clients count in the estimate: ten times the clients is
// about ten times the memory they take.
func TestScenarioClientsEstimate(t *testing.T) {
	spec := func(clients int) *Spec {
		var b strings.Builder
		b.WriteString("name: many\nscenario:\n  name: many\n  duration_s: 60\n  clients:\n")
		for i := range clients {
			fmt.Fprintf(&b, "    - {name: c%d, class: legit, segments: [[0, 60, 1]]}\n", i)
		}
		b.WriteString("sweep: [{algorithm: fixed_window, window_s: 10, limit: [5, 10]}]\n")
		s, err := ParseSpec([]byte(b.String()), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := EstimateRun(spec(1000), Shard{0, 1}, 2, 0)
	b := EstimateRun(spec(10000), Shard{0, 1}, 2, 0)
	per := float64(b.MemoryBytes-a.MemoryBytes) / 9000
	if per < 3500 || per > 4500 {
		t.Errorf("%.0f bytes a client, measured 3.9 KiB (a: %d, b: %d)", per, a.MemoryBytes, b.MemoryBytes)
	}
	if !strings.Contains(b.FormatMemory(""), "scenario clients: 10000 clients") {
		t.Errorf("no clients item:\n%s", b.FormatMemory(""))
	}
	// At this rate the 16 MiB scenario of 291,172 clients (peak 1.05 GB)
	// is refused under --max-memory 400MB before anything runs.
	if est := float64(a.MemoryBytes) + per*(291172-1000); est < 1e9 {
		t.Errorf("291,172 clients: %.0f bytes, want over 1 GB", est)
	}
	if err := b.CheckLimits(spec(1), 0, 0, b.MemoryBytes-1, false); err == nil || !strings.Contains(err.Error(), "more than --max-memory") {
		t.Errorf("over budget: %v", err)
	}
}
