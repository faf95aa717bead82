package sweep

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/internal/runfs"
)

// ReportGlobs are the files 'ratesweep report' writes under RUN_DIR/report/
// (and removes before writing again).
var ReportGlobs = []string{"tradeoff.*", "tradeoff-all.*", "heatmap-*", "clients-*", "timeline-*", "report.md", "index.html", "frontier.csv", "explore.html"}

var (
	ownTop  = regexp.MustCompile(`^(spec\.yaml|keyrows\.json|manifest\.json|manifest\.shard-[0-9]{5,}-of-[0-9]{5,}\.json)$`)
	ownPart = regexp.MustCompile(`^(part|merged)-[0-9]{6,}\.parquet$`)
	// ownSpill are ingest.SpillFile's names.
	ownSpill = regexp.MustCompile(`^log-[0-9]{3,}-part-[0-9]{5,}\.bin$`)
)

// ownName reports whether name, in the run directory's sub ("" for the top,
// "points", "clients" or "report"), is a file ratesweep writes there: its
// own names, and the temporary ".NAME.*.tmp" files it writes them through.
func ownName(sub, name string) bool {
	if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
		base := name[1 : len(name)-len(".tmp")]
		for i := range base {
			if base[i] == '.' && ownName(sub, base[:i]) && !strings.HasPrefix(base[:i], ".") {
				return true
			}
		}
		return false
	}
	switch sub {
	case "":
		return ownTop.MatchString(name) || name == runfs.LockName
	case "points", "clients":
		return ownPart.MatchString(name)
	case SpillDir:
		return ownSpill.MatchString(name)
	case "report":
		for _, g := range ReportGlobs {
			if ok, _ := filepath.Match(g, name); ok {
				return true
			}
		}
	}
	return false
}

// runFiles lists what dir holds: the files a run, a merge or a report wrote
// there (relative paths), and everything else (foreign: other files, other
// directories, symbolic links anywhere).
func runFiles(dir string) (own, foreign []string, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		sub, name := filepath.Split(rel)
		sub = filepath.Clean(sub)
		if sub == "." {
			sub = ""
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			foreign = append(foreign, rel+" (a symbolic link)")
		case d.IsDir() && sub == "" && slices.Contains([]string{"points", "clients", "report"}, name):
			return nil
		case d.IsDir() && sub == "" && name == KeyShardsDir:
			return fs.SkipDir // the key shards' run directories: each its own run
		case d.IsDir() && sub == "" && name == SpillDir:
			return nil // a spilled run's partition files (spill.go)
		case d.IsDir():
			foreign = append(foreign, rel+string(filepath.Separator))
			return fs.SkipDir
		case d.Type().IsRegular() && ownName(sub, name):
			own = append(own, rel)
		default:
			foreign = append(foreign, rel)
		}
		return nil
	})
	return own, foreign, err
}

// provenRun reports whether dir's spec.yaml was written by ratesweep: a
// manifest names its hash, or it is the canonical form ratesweep writes.
// A spec.yaml alone proves nothing: any project may hold one.
func provenRun(dir string) bool {
	data, err := readRegular(filepath.Join(dir, "spec.yaml"), maxManifestBytes)
	if err != nil {
		return false
	}
	ms, _ := filepath.Glob(filepath.Join(dir, "manifest*.json"))
	for _, p := range ms {
		if m, err := loadManifest(p); err == nil && m.SpecSHA256 == sha256Hex(data) {
			return true
		}
	}
	spec, err := ParseSpec(data, func(string) (string, []byte, error) {
		return "", nil, errors.New("not inlined")
	})
	return err == nil && string(spec.YAML()) == string(data)
}

// clearRun removes the files a run, merge or report wrote in dir, and
// nothing else: a directory holding anything more (or, with proof, a
// spec.yaml that no manifest or canonical form shows to be ratesweep's) is
// refused untouched with an error naming what is not ratesweep's.
func clearRun(dir string, proof bool) error {
	own, err := checkClear(dir, proof)
	if err != nil {
		return err
	}
	for _, rel := range own {
		if rel == runfs.LockName {
			continue // held by this process
		}
		if err := os.Remove(filepath.Join(dir, rel)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	os.Remove(filepath.Join(dir, "report")) // only when empty
	os.Remove(filepath.Join(dir, SpillDir))
	return nil
}

// checkClear returns the files clearRun would remove, or its refusal.
func checkClear(dir string, proof bool) ([]string, error) {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	own, foreign, err := runFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot read the output directory: %w", err)
	}
	if len(foreign) > 0 {
		return nil, fmt.Errorf("%w: --force removes only what ratesweep wrote, and %s also holds %s; nothing was removed: move them away or choose another --out", ErrOutputExists, dir, listNames(foreign))
	}
	if proof && !provenRun(dir) {
		return nil, fmt.Errorf("%w: %s holds a spec.yaml that no manifest shows to be a ratesweep run's; nothing was removed: remove it yourself or choose another --out", ErrOutputExists, dir)
	}
	return own, nil
}

// listNames names at most five entries, quoted (names are the user's).
func listNames(names []string) string {
	const most = 5
	q := make([]string, 0, most)
	for i, n := range names {
		if i == most {
			q = append(q, fmt.Sprintf("and %d more", len(names)-most))
			break
		}
		q = append(q, fmt.Sprintf("%q", n))
	}
	return strings.Join(q, ", ")
}

// ForeignFiles lists what dir holds besides the files ratesweep's run,
// merge and report write there (relative paths; links anywhere count as
// foreign): what a command replacing the directory must not remove.
func ForeignFiles(dir string) ([]string, error) {
	_, foreign, err := runFiles(dir)
	return foreign, err
}

// ListNames quotes at most five names for a message.
func ListNames(names []string) string { return listNames(names) }
