package check

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ratesweep/ratesweep/sweep"
)

// UpdateBaseline makes the run in runDir the baseline in baseDir: it copies
// the run's spec.yaml, manifest.json and the Parquet files it lists (not
// its report) into a fresh directory beside baseDir and then swaps it in, so
// an interrupted update leaves the old baseline whole. It refuses a run
// without a manifest (incomplete), baseDir == runDir, and a baseDir that
// holds anything but a ratesweep run. It returns the files and bytes copied.
func UpdateBaseline(runDir, baseDir string) (files int, bytes int64, err error) {
	if _, err := sweep.PartFiles(runDir, "points"); err != nil {
		return 0, 0, err
	}
	if !sweep.RunComplete(runDir) {
		return 0, 0, &sweep.InputError{Msg: fmt.Sprintf("%s has no manifest.json: finish (or --resume, or merge) the run before making it the baseline", runDir)}
	}
	if same, _ := sameDir(runDir, baseDir); same {
		return 0, 0, &sweep.InputError{Msg: fmt.Sprintf("the run %s is the baseline %s", runDir, baseDir)}
	}
	if err := refuseNonRun(baseDir); err != nil {
		return 0, 0, err
	}
	// The run is what its manifest lists, not what else lies beside it.
	names := []string{"spec.yaml", "manifest.json"}
	for _, table := range []string{"points", "clients"} {
		files, err := sweep.PartFiles(runDir, table)
		if err != nil {
			return 0, 0, err
		}
		for _, f := range files {
			rel, _ := filepath.Rel(runDir, f)
			names = append(names, rel)
		}
	}
	base := filepath.Clean(baseDir)
	tmp, old := base+".update-tmp", base+".update-old"
	if err := os.RemoveAll(tmp); err != nil {
		return 0, 0, err
	}
	for _, rel := range names {
		n, err := copyFile(filepath.Join(runDir, rel), filepath.Join(tmp, rel))
		if err != nil {
			os.RemoveAll(tmp)
			return 0, 0, fmt.Errorf("updating the baseline: %w", err)
		}
		files++
		bytes += n
	}
	if err := os.RemoveAll(old); err != nil {
		return 0, 0, err
	}
	if _, err := os.Stat(base); err == nil {
		if err := os.Rename(base, old); err != nil {
			os.RemoveAll(tmp)
			return 0, 0, fmt.Errorf("updating the baseline: %w", err)
		}
	}
	if err := os.Rename(tmp, base); err != nil {
		os.Rename(old, base)
		return 0, 0, fmt.Errorf("updating the baseline: %w", err)
	}
	return files, bytes, os.RemoveAll(old)
}

// refuseNonRun refuses to replace a directory that exists, is not empty and
// does not look like a ratesweep run (spec.yaml or points/).
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
	for _, probe := range []string{"spec.yaml", "points"} {
		if _, err := os.Stat(filepath.Join(dir, probe)); err == nil {
			return nil
		}
	}
	return &sweep.InputError{Msg: fmt.Sprintf("refusing to replace %s: it is not a ratesweep run directory (no spec.yaml or points/)", dir)}
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

func copyFile(src, dst string) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}
