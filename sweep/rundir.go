package sweep

// Preparing a run's directory and writing its files: ownership, exclusive creation, atomic writes.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ratesweep/ratesweep/internal/runfs"
)

// prepareDir creates the run directory, refuses or clears an existing run,
// and (with Resume) marks verified parts done. Several shards may prepare
// the same (shared) directory at once: spec.yaml is created exclusively
// (the first writer wins, the others must hold the same spec), and a shard
// only ever removes its own files, plus the merged manifest.json and the
// manifests of another shard count, which its run makes stale.
func prepareDir(opts Options, specYAML string, reps int, states []partState) (_ *runfs.Lock, err error) {
	held, err := claimDir(opts, specYAML)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			held.Release()
		}
	}()
	recorded, err := clearStale(opts, states)
	if err != nil {
		return nil, err
	}
	if err := keepParts(opts, specYAML, reps, states, recorded); err != nil {
		return nil, err
	}
	return held, nil
}

// claimDir makes opts.OutDir this spec's run directory and locks it (shared
// by the shards of one run): it refuses a directory that is not a run, a
// run of another spec and a compacted run (unless --force replaces it).
func claimDir(opts Options, specYAML string) (_ *runfs.Lock, err error) {
	dir := opts.OutDir
	if dir == "" {
		return nil, inputErrorf("no output directory")
	}
	sharded := opts.Shard.Count > 1
	specPath := filepath.Join(dir, "spec.yaml")
	// Nothing is created in a directory that is not a run (checked again
	// under the lock).
	if _, err := os.Lstat(specPath); errors.Is(err, os.ErrNotExist) {
		if err := refuseForeign(dir); err != nil {
			return nil, err
		}
	} else if opts.Force && !sharded {
		if _, err := checkClear(dir, true); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the output directory: %w", err)
	}
	// The shards of one run share the directory; any other writer owns it.
	held, err := runfs.Acquire(dir, sharded)
	if err != nil {
		if errors.Is(err, runfs.ErrLocked) {
			return nil, &InputError{Msg: err.Error()}
		}
		return nil, err
	}
	defer func() {
		if err != nil {
			held.Release()
		}
	}()
	for _, name := range []string{"spec.yaml", "manifest.json", ManifestName(opts.Shard)} {
		if st, err := os.Lstat(filepath.Join(dir, name)); err == nil && !st.Mode().IsRegular() {
			return nil, inputErrorf("%s: %s is not a regular file (%s); ratesweep writes only its own files", dir, name, runfs.Kind(st.Mode()))
		}
	}
	old, err := readRegular(specPath, maxManifestBytes)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cannot read the output directory: %w", err)
	}
	exists := err == nil
	if exists && opts.Force && !sharded {
		if err := clearRun(dir, true); err != nil {
			return nil, err
		}
		exists = false
	}
	if !exists {
		if err := refuseForeign(dir); err != nil {
			return nil, err
		}
		created, err := createFileExclusive(specPath, []byte(specYAML))
		if err != nil {
			return nil, fmt.Errorf("cannot write to the output directory: %w", err)
		}
		if !created { // another shard was faster
			if old, err = readRegular(specPath, maxManifestBytes); err != nil {
				return nil, fmt.Errorf("cannot read the output directory: %w", err)
			}
			exists = true
		}
	}
	if exists && string(old) != specYAML {
		if sharded {
			return nil, inputErrorf("%s holds a run of a different spec (see %s); shards never replace another spec's run: remove the directory or choose another --out", dir, specPath)
		}
		return nil, inputErrorf("%s holds a run of a different spec (see %s); use --force to replace it or choose another --out", dir, specPath)
	}
	for _, sub := range []string{"points", "clients"} {
		if _, err := runfs.Dir(dir, sub); err != nil {
			return nil, inputErrorf("cannot use the output directory: %v", err)
		}
	}
	if m, err := loadManifest(filepath.Join(dir, "manifest.json")); err == nil && m.Compacted && !(opts.Force && !sharded) {
		return nil, fmt.Errorf("%w: %s was compacted by 'ratesweep merge --compact' and is complete; use --force (without --shard) to start again", ErrOutputExists, dir)
	}
	return held, nil
}

// clearStale refuses to overwrite results without --resume or --force,
// removes the manifests this run makes stale (the merged one when sharded,
// shard manifests of another shard count) and this shard's own, and
// returns, with --resume, the hashes this shard's manifest recorded by
// table/part name.
func clearStale(opts Options, states []partState) (recorded map[string]string, err error) {
	dir := opts.OutDir
	sharded := opts.Shard.Count > 1
	manifest := filepath.Join(dir, ManifestName(opts.Shard))
	// Manifests this run makes stale: the merged (or single-run) manifest
	// when sharded, and shard manifests of another shard count.
	var stale []string
	all, _ := filepath.Glob(filepath.Join(dir, "manifest*.json"))
	for _, m := range all {
		base := filepath.Base(m)
		if base == filepath.Base(manifest) {
			continue
		}
		var i, n int
		if _, err := fmt.Sscanf(base, "manifest.shard-%05d-of-%05d.json", &i, &n); err == nil {
			if n != opts.Shard.Count {
				stale = append(stale, m)
			}
		} else if base == "manifest.json" && sharded {
			stale = append(stale, m)
		}
	}
	mine := fileExists(manifest)
	for _, st := range states {
		if fileExists(filepath.Join(dir, "points", st.part.Name())) || fileExists(filepath.Join(dir, "clients", st.part.Name())) {
			mine = true
			break
		}
	}
	switch {
	case len(stale) > 0 && sharded && !opts.Resume && !opts.Force:
		return nil, fmt.Errorf("%w: %s holds %s of another shard split; use the same shard count, or --force to replace this shard's parts", ErrOutputExists, dir, filepath.Base(stale[0]))
	case mine && !opts.Resume && !opts.Force:
		return nil, fmt.Errorf("%w: %s holds results of this spec (shard %s); use --resume to complete it or --force to start again", ErrOutputExists, dir, opts.Shard)
	}
	// With --resume, a part whose file changed since this shard's manifest
	// was written (same rows, other bytes) is computed again.
	recorded = map[string]string{}
	if old, err := loadManifest(manifest); err == nil && opts.Resume {
		for _, p := range old.Parts {
			recorded["points/"+p.Points.Name] = p.Points.SHA256
			recorded["clients/"+p.Clients.Name] = p.Clients.SHA256
		}
	}
	for _, m := range stale {
		if err := os.Remove(m); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if err := os.Remove(manifest); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err // rewritten when the run completes
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, "."+filepath.Base(manifest)+".*.tmp"))
	for _, t := range tmps {
		os.Remove(t)
	}
	return recorded, nil
}

// keepParts removes this shard's leftovers (and with --force its parts)
// and, with --resume, marks done each part whose files verify and match
// what this shard's manifest recorded.
func keepParts(opts Options, specYAML string, reps int, states []partState, recorded map[string]string) error {
	dir := opts.OutDir
	changed := func(table string, fm fileMeta) bool {
		h, ok := recorded[table+"/"+fm.Name]
		return ok && h != fm.SHA256
	}
	for i := range states {
		st := &states[i]
		name := st.part.Name()
		for _, sub := range []string{"points", "clients"} {
			// Leftovers of an interrupted run of this shard (never another shard's).
			tmps, _ := filepath.Glob(filepath.Join(dir, sub, "."+name+".*.tmp"))
			for _, t := range tmps {
				os.Remove(t)
			}
			if opts.Force {
				if err := os.Remove(filepath.Join(dir, sub, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
		}
		if !opts.Resume {
			continue
		}
		pm, perr := verifyPart(filepath.Join(dir, "points", name), st.part.Points()*int64(reps), specYAML)
		cm, cerr := verifyPart(filepath.Join(dir, "clients", name), -1, specYAML)
		// A part that resolves outside the run (a symlink) is not kept.
		for _, v := range []struct {
			table string
			err   *error
		}{{"points", &perr}, {"clients", &cerr}} {
			if *v.err == nil {
				*v.err = Confine(dir, filepath.Join(dir, v.table, name))
			}
		}
		if prows := st.part.Points() * int64(reps); cerr == nil && ((cm.Rows == 0 && opts.keyShard.Count == 0) || cm.Rows%prows != 0) { // a key shard may hold no key
			cerr = fmt.Errorf("clients/%s: %d rows, not a multiple of %d points rows", name, cm.Rows, prows)
		}
		// Without this shard's manifest there is no hash to trust: decode
		// every page (zstd checksums) of what is kept.
		for _, v := range []struct {
			table string
			fm    fileMeta
			err   *error
		}{{"points", pm, &perr}, {"clients", cm, &cerr}} {
			if *v.err == nil && recorded[v.table+"/"+v.fm.Name] == "" {
				_, *v.err = VerifyParquet(context.Background(), filepath.Join(dir, v.table, name))
			}
		}
		if perr == nil && cerr == nil && !changed("points", pm) && !changed("clients", cm) {
			st.falseCut, perr = sumColumn(filepath.Join(dir, "points", name), "false_cut")
			if perr == nil {
				st.points, st.cl, st.done, st.resumed = pm, cm, true, true
			}
		}
	}
	return nil
}

// refuseForeign refuses a directory that holds anything but what ratesweep
// writes (see runFiles), naming it: ratesweep never writes beside a user's
// files. What another shard may create while starting at the same moment
// (the part directories, parts, a temporary spec.yaml, the lock) is its own.
func refuseForeign(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_, other, err := runFiles(dir)
	if err != nil {
		return fmt.Errorf("cannot read the output directory: %w", err)
	}
	if len(other) > 0 {
		return fmt.Errorf("%w: %s holds other files (%s); choose an empty or new --out", ErrOutputExists, dir, listNames(other))
	}
	return nil
}

// createFileExclusive writes path atomically unless it exists: it reports
// false, and writes nothing, when another process created path first. The
// hard link makes the create-if-absent atomic (also on NFS).
func createFileExclusive(path string, data []byte) (bool, error) {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		return false, err
	}
	return true, syncDir(filepath.Dir(path))
}

// verifyPart checks a finished part file: its footer reads, it has the
// expected rows (when rows >= 0) and it belongs to this spec.
func verifyPart(path string, rows int64, specYAML string) (fileMeta, error) {
	var fm fileMeta
	rdr, err := openParquet(path)
	if err != nil {
		return fm, err
	}
	defer rdr.Close()
	if rows >= 0 && rdr.NumRows() != rows {
		return fm, fmt.Errorf("%s: %d rows, want %d", path, rdr.NumRows(), rows)
	}
	if v := rdr.MetaData().KeyValueMetadata().FindValue(MetaSpec); v == nil || *v != specYAML {
		return fm, fmt.Errorf("%s: written by another spec", path)
	}
	f, err := openRegular(path)
	if err != nil {
		return fm, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fm, err
	}
	return fileMeta{Name: filepath.Base(path), Rows: rdr.NumRows(), Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// writeFileAtomic writes data to path through a synced temporary file with
// a unique name, so concurrent writers never share a temporary file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// writeTemp writes data to a new synced file ".NAME.*.tmp" next to path.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), filePerm)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// syncDir makes renames and links in dir durable (best effort: some file
// systems refuse fsync on directories).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	d.Sync()
	return d.Close()
}
