package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ratesweep/ratesweep/internal/runfs"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/sweep"
)

// UpdateBaseline makes the run in runDir the baseline in baseDir: it copies
// the run's spec.yaml, manifest.json and the Parquet files it lists (not
// its report) into a fresh temporary directory beside baseDir and then
// swaps it in with a rename, so an interrupted update leaves the old
// baseline whole. Every file is created anew inside that directory: a
// listed name that leaves the run directory (../, absolute, or through a
// link) is refused, and no file outside the new baseline is ever opened for
// writing. It refuses a run without a manifest (incomplete), baseDir ==
// runDir, a baseDir that holds anything but a ratesweep run, and a run or
// baseline another ratesweep process is writing. The run is opened and
// every points row read as every other reader reads a run (sweep.OpenRun,
// sweep.VerifyRows): what they refuse never becomes a baseline. It returns
// the files and bytes copied.
func UpdateBaseline(ctx context.Context, runDir, baseDir string) (files int, bytes int64, err error) {
	if _, err := sweep.PartFiles(runDir, "points"); err != nil {
		return 0, 0, err
	}
	if !sweep.RunComplete(runDir) {
		return 0, 0, &sweep.InputError{Msg: fmt.Sprintf("%s has no manifest.json: finish (or --resume, or merge) the run before making it the baseline", runDir)}
	}
	run, err := sweep.OpenRun(runDir, sweep.OpenOptions{})
	if err != nil {
		return 0, 0, err
	}
	if err := sweep.VerifyRows(ctx, run); err != nil {
		return 0, 0, err
	}
	if same, _ := sameDir(runDir, baseDir); same {
		return 0, 0, &sweep.InputError{Msg: fmt.Sprintf("the run %s is the baseline %s", runDir, baseDir)}
	}
	if err := refuseNonRun(baseDir); err != nil {
		return 0, 0, err
	}
	// No writer may change the run while it is copied, nor the baseline
	// while it is replaced.
	unlock, err := lockBoth(runDir, baseDir)
	if err != nil {
		return 0, 0, err
	}
	defer unlock()
	// The run is what its manifest lists, not what else lies beside it.
	names := []string{"spec.yaml", "manifest.json"}
	for _, table := range []string{"points", "clients"} {
		files, err := sweep.PartFiles(runDir, table)
		if err != nil {
			return 0, 0, err
		}
		for _, f := range files {
			rel, err := filepath.Rel(runDir, f)
			if err != nil || !filepath.IsLocal(rel) || filepath.Dir(rel) != table {
				return 0, 0, &sweep.InputError{Msg: fmt.Sprintf("%s: manifest.json lists %s, not a file of %s/: refusing to copy it", runDir, yamlx.Excerpt(filepath.Base(f)), table)}
			}
			names = append(names, rel)
		}
	}
	base := filepath.Clean(baseDir)
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return 0, 0, fmt.Errorf("updating the baseline: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(base), "."+filepath.Base(base)+".update-*")
	if err != nil {
		return 0, 0, fmt.Errorf("updating the baseline: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; a leftover on failure
	for _, sub := range []string{"points", "clients"} {
		if err := os.Mkdir(filepath.Join(tmp, sub), 0o755); err != nil {
			return 0, 0, fmt.Errorf("updating the baseline: %w", err)
		}
	}
	for _, rel := range names {
		n, err := copyFile(runDir, rel, filepath.Join(tmp, rel))
		if err != nil {
			return 0, 0, fmt.Errorf("updating the baseline: %w", err)
		}
		files++
		bytes += n
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return 0, 0, fmt.Errorf("updating the baseline: %w", err)
	}
	old := tmp + ".old"
	if _, err := os.Lstat(base); err == nil {
		if err := os.Rename(base, old); err != nil {
			return 0, 0, fmt.Errorf("updating the baseline: %w", err)
		}
	}
	if err := os.Rename(tmp, base); err != nil {
		os.Rename(old, base)
		return 0, 0, fmt.Errorf("updating the baseline: %w", err)
	}
	return files, bytes, os.RemoveAll(old)
}

// lockBoth holds the run's lock shared and the baseline's exclusively.
func lockBoth(runDir, baseDir string) (func(), error) {
	held := []*runfs.Lock{}
	release := func() {
		for _, l := range held {
			l.Release()
		}
	}
	for _, d := range []struct {
		dir    string
		shared bool
	}{{runDir, true}, {baseDir, false}} {
		if st, err := os.Stat(d.dir); err != nil || !st.IsDir() {
			continue // a new baseline
		}
		l, err := runfs.Acquire(d.dir, d.shared)
		if err != nil {
			release()
			if errors.Is(err, runfs.ErrLocked) {
				return nil, &sweep.InputError{Msg: err.Error()}
			}
			return nil, err
		}
		held = append(held, l)
	}
	return release, nil
}

// refuseNonRun refuses to replace a directory that exists, is not empty and
// does not look like a ratesweep run (spec.yaml or points/), or that holds
// files besides the run's: replacing it would remove them.
func refuseNonRun(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return &sweep.InputError{Msg: fmt.Sprintf("baseline %s is not a directory", dir)}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "spec.yaml")); err != nil {
		if _, err := os.Stat(filepath.Join(dir, "points")); err != nil {
			return &sweep.InputError{Msg: fmt.Sprintf("refusing to replace %s: it is not a ratesweep run directory (no spec.yaml or points/)", dir)}
		}
	}
	foreign, err := sweep.ForeignFiles(dir)
	if err != nil {
		return err
	}
	if len(foreign) > 0 {
		return &sweep.InputError{Msg: fmt.Sprintf("refusing to replace %s: besides a ratesweep run it holds %s; move them away first", dir, sweep.ListNames(foreign))}
	}
	return nil
}

func sameDir(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}

// copyFile copies runDir/rel, a regular file reached without links, into
// dst, a file it creates (never one that exists).
func copyFile(runDir, rel, dst string) (int64, error) {
	src := runDir
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		src = filepath.Join(src, part)
		st, err := os.Lstat(src)
		if err != nil {
			return 0, err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return 0, &sweep.InputError{Msg: fmt.Sprintf("%s is a symbolic link: a baseline is made of the run's own files", src)}
		}
	}
	in, err := runfs.OpenRegular(src)
	var nr *runfs.NotRegularError
	if errors.As(err, &nr) {
		return 0, &sweep.InputError{Msg: nr.Error()}
	}
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}
