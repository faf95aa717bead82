package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree writes files (relative path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sameTree fails unless every file in files still holds its content.
func sameTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want it untouched", rel, got, err)
		}
	}
}

// A project directory: --force is refused, names the files that
// are not ratesweep's, and removes nothing (not even the spec.yaml, which
// proves nothing).
func TestForceKeepsProjectFiles(t *testing.T) {
	s := detSpec(t)
	for _, specYAML := range []string{
		"name: q3\nscenario: lesson.yaml\nsweep: []\n", // the user's own spec
		string(s.YAML()), // a copy of a run's spec
	} {
		dir := t.TempDir()
		files := map[string]string{
			"spec.yaml":            specYAML,
			"report/q3.md":         "# Q3\n",
			"points/mydata.csv":    "a,b\n1,2\n",
			"manifest-backup.json": "{}",
			"notes.txt":            "mine",
		}
		writeTree(t, dir, files)
		_, err := Run(context.Background(), s, Options{OutDir: dir, Force: true})
		if !errors.Is(err, ErrOutputExists) {
			t.Fatalf("--force on a project directory: %v", err)
		}
		for _, name := range []string{"q3.md", "mydata.csv", "manifest-backup.json", "notes.txt"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("message does not name %s: %v", name, err)
			}
		}
		sameTree(t, dir, files)
		if _, err := os.Stat(filepath.Join(dir, "clients")); err == nil {
			t.Error("clients/ created in a refused directory")
		}
	}
}

// A lone spec.yaml that ratesweep did not write is no run to replace.
func TestForceLoneSpec(t *testing.T) {
	s := detSpec(t)
	dir := t.TempDir()
	files := map[string]string{"spec.yaml": "# my spec\nname: x\n"}
	writeTree(t, dir, files)
	if _, err := Run(context.Background(), s, Options{OutDir: dir, Force: true}); !errors.Is(err, ErrOutputExists) {
		t.Fatalf("--force on a lone spec.yaml: %v", err)
	}
	sameTree(t, dir, files)
}

// --force replaces a run, its report and a killed run's temporary files,
// but a single foreign file (or a link) makes it refuse with everything kept.
func TestForceReplacesOnlyARun(t *testing.T) {
	s := detSpec(t)
	other := detSpec(t)
	other.Seed++
	dir := t.TempDir()
	mustRun(t, s, Options{OutDir: dir})
	writeTree(t, dir, map[string]string{
		"report/index.html":                    "<html>",
		"report/tradeoff.png":                  "png",
		"points/.part-000001.parquet.1234.tmp": "partial",
	})
	notes := map[string]string{"notes.txt": "mine"}
	writeTree(t, dir, notes)
	before := listTree(t, dir)
	_, err := Run(context.Background(), other, Options{OutDir: dir, Force: true})
	if !errors.Is(err, ErrOutputExists) || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("--force with notes.txt: %v", err)
	}
	if after := listTree(t, dir); after != before {
		t.Errorf("a refused --force changed the directory:\n%s\nwant\n%s", after, before)
	}
	elsewhere := t.TempDir()
	writeTree(t, elsewhere, map[string]string{"part-000000.parquet": "not mine"})
	os.Remove(filepath.Join(dir, "notes.txt"))
	os.Symlink(elsewhere, filepath.Join(dir, "report", "old"))
	if _, err := Run(context.Background(), other, Options{OutDir: dir, Force: true}); !errors.Is(err, ErrOutputExists) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("--force with a link: %v", err)
	}
	sameTree(t, elsewhere, map[string]string{"part-000000.parquet": "not mine"})
	os.Remove(filepath.Join(dir, "report", "old"))
	mustRun(t, other, Options{OutDir: dir, Force: true})
	if _, err := os.Stat(filepath.Join(dir, "report")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old report was kept: %v", err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "points", ".*.tmp")); len(tmps) > 0 {
		t.Errorf("temporary files kept: %v", tmps)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".ratesweep.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left behind: %v", err)
	}
}

// A points/ that is a link out of the run directory is never written through.
func TestRunRefusesLinkedTable(t *testing.T) {
	s := detSpec(t)
	dir, elsewhere := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "spec.yaml"), s.YAML(), 0o644)
	if err := os.Symlink(elsewhere, filepath.Join(dir, "points")); err != nil {
		t.Skip(err)
	}
	var ie *InputError
	if _, err := Run(context.Background(), s, Options{OutDir: dir}); !errors.As(err, &ie) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("run into a linked points/: %v", err)
	}
	if names, _ := os.ReadDir(elsewhere); len(names) > 0 {
		t.Errorf("wrote through the link: %v", names)
	}
}

func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dir, p)
			b.WriteString(rel + " " + info.Mode().String() + " " + info.ModTime().String())
			if info.Mode().IsRegular() {
				data, _ := os.ReadFile(p)
				b.WriteString(" " + sha256Hex(data))
			}
			b.WriteString("\n")
		}
		return nil
	})
	return b.String()
}

// A directory with a user's file under points/ (and no spec.yaml) is not a
// run to write into: refused, nothing created.
func TestRunRefusesForeignTable(t *testing.T) {
	s := detSpec(t)
	dir := t.TempDir()
	files := map[string]string{"points/mydata.csv": "a,b\n"}
	writeTree(t, dir, files)
	before := listTree(t, dir)
	_, err := Run(context.Background(), s, Options{OutDir: dir})
	if !errors.Is(err, ErrOutputExists) || !strings.Contains(err.Error(), "mydata.csv") {
		t.Fatalf("run beside points/mydata.csv: %v", err)
	}
	if after := listTree(t, dir); after != before {
		t.Errorf("the directory changed:\n%s\nwant\n%s", after, before)
	}
}
