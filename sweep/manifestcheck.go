package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"golang.org/x/sync/errgroup"
)

// checkManifest refuses a run directory's manifest.json that exists but
// is not a manifest ratesweep could have written: not a regular file, not
// JSON, counts below 0, or a part file listed twice. A missing one is
// fine (an incomplete run: OpenRun's to judge).
func checkManifest(dir string) error {
	path := filepath.Join(dir, "manifest.json")
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	m, err := loadManifest(path)
	if err != nil {
		if _, ok := err.(*InputError); ok {
			return err
		}
		return inputErrorf("%s: %s", path, plainErr(err))
	}
	switch {
	case m.Rows < 0:
		return inputErrorf("%s: rows is %d, below 0: not a manifest ratesweep writes", path, m.Rows)
	case m.Points < 0:
		return inputErrorf("%s: points is %d, below 0: not a manifest ratesweep writes", path, m.Points)
	case m.Replicates < 0:
		return inputErrorf("%s: replicates is %d, below 0: not a manifest ratesweep writes", path, m.Replicates)
	}
	seen := map[string]int{}
	for k, p := range m.Parts {
		for _, f := range []struct {
			table string
			meta  fileMeta
		}{{"points", p.Points}, {"clients", p.Clients}} {
			where := fmt.Sprintf("%s: parts[%d].%s", path, k, f.table)
			switch {
			case f.meta.Rows < 0:
				return inputErrorf("%s.rows is %d, below 0: not a manifest ratesweep writes", where, f.meta.Rows)
			case f.meta.Bytes < 0:
				return inputErrorf("%s.bytes is %d, below 0: not a manifest ratesweep writes", where, f.meta.Bytes)
			}
			if !partName(f.meta.Name) {
				return inputErrorf("%s: manifest.json lists %s under %s: not a file name of the run directory (refused)", dir, yamlx.Excerpt(f.meta.Name), f.table)
			}
			key := f.table + "/" + f.meta.Name
			if j, twice := seen[key]; twice {
				return inputErrorf("%s: lists %s twice (parts[%d] and parts[%d]): a run holds each part once; recompute it with ratesweep run --resume", path, yamlx.Excerpt(key), j, k)
			}
			seen[key] = k
		}
	}
	return nil
}

// checkListed checks the part files of a complete run (files, each inside
// dir/points or dir/clients) against their manifest entries: the rows its
// footer holds, its size and its sha256, so a part rewritten after the run
// (a stale hash) is refused. Files the manifest lacks are not checked.
func checkListed(dir string, m *Manifest, files []string) error {
	entries := map[string]fileMeta{}
	for _, p := range m.Parts {
		entries["points/"+p.Points.Name] = p.Points
		entries["clients/"+p.Clients.Name] = p.Clients
	}
	var g errgroup.Group
	g.SetLimit(max(1, min(4, runtime.GOMAXPROCS(0))))
	for _, f := range files {
		fm, ok := entries[filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f)]
		if !ok {
			continue
		}
		g.Go(func() error { return checkListedFile(dir, f, fm) })
	}
	return g.Wait()
}

// checkListedFile checks one part file against its manifest entry fm.
func checkListedFile(dir, path string, fm fileMeta) error {
	rel := filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path))
	f, err := openRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return inputErrorf("%s: %s", path, plainErr(err))
	}
	if fm.Bytes > 0 && st.Size() != fm.Bytes {
		if err := undecodable(path); err != nil {
			return err
		}
		return inputErrorf("%s: %d bytes, manifest.json says %d for %s: the part was replaced after the run; recompute it with ratesweep run --resume", path, st.Size(), fm.Bytes, rel)
	}
	if rows, err := footerRows(path); err == nil && rows != fm.Rows {
		return inputErrorf("%s: %d rows, manifest.json says %d: the part was replaced; recompute it with ratesweep run --resume", path, rows, fm.Rows)
	}
	if fm.SHA256 == "" {
		return nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return inputErrorf("%s: %s", path, plainErr(err))
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != fm.SHA256 {
		if err := undecodable(path); err != nil {
			return err
		}
		return inputErrorf("%s: sha256 %.12s, manifest.json says %.12s for %s: the part was changed after the run; recompute it with ratesweep run --resume", path, sum, fm.SHA256, rel)
	}
	return nil
}

// undecodable tells a damaged part from a rewritten one once its size or
// hash disagrees with the manifest: the *DamagedError of a part that does
// not decode (a flipped byte: exit 1, recompute it), nil for one that does.
func undecodable(path string) error {
	_, err := VerifyParquet(context.Background(), path)
	var de *DamagedError
	if errors.As(err, &de) {
		return err
	}
	return nil
}

// footerRows returns the rows a Parquet file's footer says it holds.
func footerRows(path string) (int64, error) {
	rdr, err := openParquet(path)
	if err != nil {
		return 0, err
	}
	defer rdr.Close()
	return rdr.NumRows(), nil
}
