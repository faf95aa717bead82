package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestAdversarialFlipCampaign flips one random bit of a run's points part
// at a time, half of them in the footer (where a flip reaches the metadata
// decoders), and runs the readers on each: every one must exit 0, 1 (the
// part is damaged) or 2 (refused), with one line of error and never a Go
// panic, a runtime fatal error or an allocation the file does not justify.
// RATESWEEP_FLIPS sets the number of flips (make test-adversarial runs a
// few hundred; the unit run a handful). The flips are seeded: a failure
// names the offset and bit to reproduce it.
func TestAdversarialFlipCampaign(t *testing.T) {
	n := 4
	if v, err := strconv.Atoi(os.Getenv("RATESWEEP_FLIPS")); err == nil && v > 0 {
		n = v
	}
	ref := sweepRun(t, "flips", lessonScenario(t), "", checkGrid)
	const part = "part-000000.parquet"
	orig, err := os.ReadFile(filepath.Join(ref, "points", part))
	if err != nil {
		t.Fatal(err)
	}
	footer := int64(len(orig)) - 8 - int64(uint32(orig[len(orig)-8])|uint32(orig[len(orig)-7])<<8|uint32(orig[len(orig)-6])<<16|uint32(orig[len(orig)-5])<<24)
	if footer < 4 || footer >= int64(len(orig)) {
		t.Fatalf("footer offset %d of %d bytes", footer, len(orig))
	}
	rng := rand.New(rand.NewPCG(36, 34))
	dir := copyRun(t, ref)
	path := filepath.Join(dir, "points", part)
	codes := map[int]int{}
	for i := range n {
		off := footer + rng.Int64N(int64(len(orig))-footer)
		if i%2 == 1 {
			off = rng.Int64N(int64(len(orig)))
		}
		bit := byte(1) << rng.IntN(8)
		b := bytes.Clone(orig)
		b[off] ^= bit
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		readers := [][]string{
			{"check", "--baseline", ref, dir},
			{"recommend", dir, "--max-false-cut", "1%"},
			{"export", "--to", "nginx", "--run", dir, "fixed_window window_s=30 limit=100"},
		}
		if i%8 == 0 {
			readers = append(readers, []string{"report", dir, "--quiet"})
		}
		for _, args := range readers {
			code, _, stderr := runCLI(t, args...)
			codes[code]++
			bad := code > 2 || strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "fatal error") ||
				strings.Contains(stderr, "internal error") || strings.Count(strings.TrimSpace(stderr), "\n") > 3
			if bad {
				t.Errorf("byte %d bit %#x flipped: %s: exit %d\nstderr: %s", off, bit, args[0], code, stderr)
			}
		}
	}
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d flips: exit codes %v", n, codes)
}
