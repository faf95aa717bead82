package sweep

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/ingest"
)

// writeMembersLog writes a gzip log of members members of perMember lines
// each over keys keys.
func writeMembersLog(t *testing.T, path string, members, perMember, keys int) {
	t.Helper()
	var out bytes.Buffer
	for m := range members {
		zw := gzip.NewWriter(&out)
		for i := range perMember {
			fmt.Fprintf(zw, "10.0.%d.%d - - [01/Jul/1995:00:%02d:%02d -0400] \"GET / HTTP/1.0\" 200 1\n", i%keys/250, i%keys%250, m, i*60/perMember)
		}
		zw.Close()
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A log read that passes the run's memory budget, whatever the estimate
// said before (a gzip of many members), is not kept: the run spills it
// into key partitions, as many as the share read says, more when the
// partitions written say so, and ends with the bytes of the run in memory.
// A run that key passes cannot split (a key shard already, or no output)
// stops with exit 2 naming --max-memory, as does a log whose one key holds
// more than the budget; a replay of standard input is refused before
// anything is read.
func TestRunSpillsPastItsBudget(t *testing.T) {
	dir := t.TempDir()
	writeMembersLog(t, filepath.Join(dir, "m.log.gz"), 8, 20_000, 64)
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(p, []byte("name: m\ntraffic: {log: m.log.gz, format: combined, top_keys: 10}\nsweep:\n"+
		"  - {algorithm: fixed_window, window_s: 60, limit: [500, 2000]}\n"), 0o644)
	spec, err := LoadSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	mustRun(t, spec, Options{OutDir: whole, MaxMemory: -1, Workers: 1})

	// A budget with room for a fifth of the log's 160,000 requests.
	est := estimateRun(spec, Shard{0, 1}, 1, 1, 0)
	maxMemory := est.logBase + 32_000*est.logPerRequest + 64*memPerLogKey
	_, err = newSource(t.Context(), withLogBudget(spec, est.logBudget(maxMemory)), false)
	be, ok := isBudget(err)
	if !ok || be.Requests > 40_000 || be.Lines == 0 || !strings.Contains(be.Error(), "--max-memory") {
		t.Fatalf("the read within the budget: %v", err)
	}
	out := filepath.Join(t.TempDir(), "out")
	res, err := overBudget(t.Context(), spec, Options{OutDir: out, MaxMemory: maxMemory, Workers: 1}, be)
	if err != nil {
		t.Fatal(err)
	}
	if res.Passes < 8 {
		t.Errorf("%d passes for partitions of a fifth of the log each at most", res.Passes)
	}
	sameRunFiles(t, whole, out)
	for _, d := range []string{SpillDir, KeyShardsDir} {
		if fileExists(filepath.Join(out, d)) {
			t.Errorf("%s/ left behind", d)
		}
	}

	var ie *InputError
	for _, o := range []Options{{NoOutput: true}, {keyShard: Shard{0, 2}}} {
		o.OutDir, o.MaxMemory = t.TempDir(), maxMemory
		if _, err := overBudget(t.Context(), spec, o, be); !errors.As(err, &ie) || !strings.Contains(err.Error(), "raise --max-memory") {
			t.Errorf("%+v: %v", o, err)
		}
	}
	// A rotated set read as one log spills too.
	writeMembersLog(t, filepath.Join(dir, "access.log.1.gz"), 4, 20_000, 64)
	writeMembersLog(t, filepath.Join(dir, "access.log.2.gz"), 4, 20_000, 64)
	ps := filepath.Join(dir, "set.yaml")
	os.WriteFile(ps, []byte("name: set\ntraffic:\n  log: {files: [access.log.2.gz, access.log.1.gz], as: one}\n  format: combined\n  top_keys: 10\nsweep:\n"+
		"  - {algorithm: fixed_window, window_s: 60, limit: [500, 2000]}\n"), 0o644)
	set, err := LoadSpec(ps)
	if err != nil {
		t.Fatal(err)
	}
	wholeSet := filepath.Join(t.TempDir(), "whole")
	mustRun(t, set, Options{OutDir: wholeSet, MaxMemory: -1, Workers: 1})
	_, err = newSource(t.Context(), withLogBudget(set, est.logBudget(maxMemory)), false)
	if be, ok = isBudget(err); !ok || be.Stdin {
		t.Fatalf("a set: %v", err)
	}
	outSet := filepath.Join(t.TempDir(), "out")
	if res, err = overBudget(t.Context(), set, Options{OutDir: outSet, MaxMemory: maxMemory, Workers: 1}, be); err != nil || res.Passes < 2 {
		t.Fatalf("a set: %v", err)
	}
	sameRunFiles(t, wholeSet, outSet)

	// One key of every request: no number of passes splits it.
	writeMembersLog(t, filepath.Join(dir, "m.log.gz"), 8, 20_000, 1)
	_, err = newSource(t.Context(), withLogBudget(spec, est.logBudget(maxMemory)), false)
	if be, ok = isBudget(err); !ok {
		t.Fatalf("one key: %v", err)
	}
	_, err = overBudget(t.Context(), spec, Options{OutDir: filepath.Join(t.TempDir(), "one"), MaxMemory: maxMemory, Workers: 1}, be)
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "more passes do not split it") || !strings.Contains(err.Error(), "raise --max-memory") {
		t.Errorf("one key: %v", err)
	}

	stdin := *spec
	tr := *spec.Traffic
	tr.Log = ingest.Stdin
	stdin.Traffic = &tr
	if _, err := Run(t.Context(), &stdin, Options{OutDir: t.TempDir()}); !errors.As(err, &ie) || !strings.Contains(err.Error(), "a sweep needs the log as a file") {
		t.Errorf("log: -: %v", err)
	}
}
