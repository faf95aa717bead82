package report

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// A finished run with a part deleted is incomplete (not bad input): Load
// names the part and the command that recomputes it, --allow-incomplete
// draws what is there, and the named command does make the run whole.
func TestDeletedPartIsIncomplete(t *testing.T) {
	spec := strings.Replace(tinySpec, "limit: {from: 100, to: 1000, step: 100}", "limit: {from: 1, to: 1200, step: 1}", 1)
	dir := runSpec(t, spec)
	whole, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "points", "part-*.parquet"))
	if len(parts) < 2 {
		t.Fatalf("%d points parts, want several", len(parts))
	}
	gone := filepath.Join("points", filepath.Base(parts[1]))
	if err := os.Remove(filepath.Join(dir, gone)); err != nil {
		t.Fatal(err)
	}
	_, err = Load(context.Background(), dir, Options{})
	var ie *IncompleteError
	if !errors.As(err, &ie) || !ie.Finished || !slices.Equal(ie.Missing, []string{gone}) {
		t.Fatalf("got %v, want an *IncompleteError naming %s", err, gone)
	}
	if errors.As(err, new(*sweep.InputError)) {
		t.Fatalf("a deleted part is reported as bad input: %v", err)
	}
	cmd := ResumeCommand(dir)
	if !strings.Contains(err.Error(), cmd) || !strings.Contains(cmd, filepath.Join(dir, "spec.yaml")) || !strings.HasSuffix(cmd, "--resume") {
		t.Fatalf("error %q does not name the resume command %q", err, cmd)
	}
	part, err := Load(context.Background(), dir, Options{AllowIncomplete: true})
	if err != nil {
		t.Fatalf("--allow-incomplete: %v", err)
	}
	if part.Points == 0 || part.Points >= whole.Points || !strings.Contains(part.Incomplete, gone) {
		t.Fatalf("--allow-incomplete: %d of %d points, banner %q", part.Points, whole.Points, part.Incomplete)
	}
	if _, err := part.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	// What the command does: run the directory's spec.yaml with --resume.
	data, err := os.ReadFile(filepath.Join(dir, "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sweep.ParseSpec(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sweep.Run(context.Background(), s, sweep.Options{OutDir: dir, Workers: 1, Shard: sweep.Shard{Count: 1}, Resume: true}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	again, err := Load(context.Background(), dir, Options{})
	if err != nil || again.Points != whole.Points || !slices.Equal(frontierIDs(&again.Frontier), frontierIDs(&whole.Frontier)) {
		t.Fatalf("after resume: %v, %d points of %d", err, again.Points, whole.Points)
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"out/default": "out/default",
		"my run":      "'my run'",
		"it's":        `'it'\''s'`,
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
