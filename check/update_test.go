package check

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// copyTree copies the committed lesson baseline (a complete run) to dst.
func copyTree(t *testing.T, dst string) {
	t.Helper()
	src := "../configs/baselines/lesson"
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeHash is every entry below dir with its type and content hash.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + d.Type().String())
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			h := sha256.Sum256(data)
			b.WriteString(" " + hex.EncodeToString(h[:]))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

func forgeManifest(t *testing.T, run string, edit func(m *sweep.Manifest)) {
	t.Helper()
	path := filepath.Join(run, "manifest.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m sweep.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	data, _ = json.Marshal(&m)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A manifest naming a part through ../ never makes --update write (or
// truncate) a file outside the new baseline: not the victim when it is the
// baseline (copy source == destination), nor when it is a third directory.
func TestUpdateBaselineForgedManifest(t *testing.T) {
	root := t.TempDir()
	run, victim := filepath.Join(root, "run"), filepath.Join(root, "victim")
	copyTree(t, run)
	copyTree(t, victim)
	forgeManifest(t, run, func(m *sweep.Manifest) {
		m.Parts[0].Points.Name = "../../victim/points/part-000000.parquet"
	})
	before := treeHash(t, victim)
	for _, base := range []string{victim, filepath.Join(root, "base")} {
		_, _, err := UpdateBaseline(context.Background(), run, base)
		var ie *sweep.InputError
		if !errors.As(err, &ie) {
			t.Errorf("baseline %s: %v, want an input error", base, err)
		}
		if got := treeHash(t, victim); got != before {
			t.Fatalf("baseline %s: the victim changed:\n%s\nwant\n%s", base, got, before)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 2 {
		t.Errorf("left behind in the parent: %v", entries)
	}
}

// A part that is a symbolic link (to a file outside the run) is not copied.
func TestUpdateBaselineLinkedPart(t *testing.T) {
	root := t.TempDir()
	run, victim := filepath.Join(root, "run"), filepath.Join(root, "victim")
	copyTree(t, run)
	copyTree(t, victim)
	part := filepath.Join(run, "points", "part-000001.parquet")
	os.Remove(part)
	if err := os.Symlink(filepath.Join(victim, "points", "part-000001.parquet"), part); err != nil {
		t.Skip(err)
	}
	before := treeHash(t, victim)
	// Refused when the run is opened (a link out of it) or when its parts
	// are copied (a symbolic link), whichever sees it first.
	if _, _, err := UpdateBaseline(context.Background(), run, victim); err == nil || !(strings.Contains(err.Error(), "symbolic link") || strings.Contains(err.Error(), "a symlink to")) {
		t.Errorf("linked part: %v", err)
	}
	if treeHash(t, victim) != before {
		t.Error("the victim changed")
	}
}

// A baseline directory holding files besides a run is not replaced (that
// would remove them); a clean update leaves nothing beside the baseline.
func TestUpdateBaselineKeepsForeign(t *testing.T) {
	root := t.TempDir()
	run, base := filepath.Join(root, "run"), filepath.Join(root, "base")
	copyTree(t, run)
	copyTree(t, base)
	os.WriteFile(filepath.Join(base, "NOTES.md"), []byte("mine"), 0o644)
	if _, _, err := UpdateBaseline(context.Background(), run, base); err == nil || !strings.Contains(err.Error(), "NOTES.md") {
		t.Errorf("foreign file in the baseline: %v", err)
	}
	os.Remove(filepath.Join(base, "NOTES.md"))
	files, _, err := UpdateBaseline(context.Background(), run, base)
	if err != nil || files != 6 {
		t.Fatalf("update: %d files, %v", files, err)
	}
	if treeHash(t, base) != treeHash(t, run) {
		t.Error("the baseline is not the run")
	}
	if entries, _ := os.ReadDir(root); len(entries) != 2 {
		t.Errorf("left behind in the parent: %v", entries)
	}
}
