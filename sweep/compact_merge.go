package sweep

// Compacting merged parts: groups of small files written as one, then the
// parts removed.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sync/errgroup"
)

// compactGroups groups consecutive parts (sorted by index) into files of at
// most maxRows points rows (a part is never split).
func compactGroups(parts []ManifestPart, reps int, maxRows int64) [][]ManifestPart {
	var out [][]ManifestPart
	var rows int64
	for _, p := range parts {
		r := (p.To - p.From) * int64(reps)
		if len(out) == 0 || rows+r > maxRows {
			out = append(out, nil)
			rows = 0
		}
		out[len(out)-1] = append(out[len(out)-1], p)
		rows += r
	}
	return out
}

// compact rewrites the verified parts of m into merged-NNNNNN.parquet files,
// atomically as a whole: manifest.json lists the parts (written first when
// the run is sharded) until every merged file is complete, then one rename
// switches it to the merged files, and only then are the parts removed.
// Every reader trusts manifest.json's list (PartFiles), so a kill at any
// moment leaves one complete run; merge run again finishes or redoes it.
func compact(ctx context.Context, dir string, spec *Spec, m *Manifest, opts MergeOptions, rep *MergeReport) error {
	manifest := filepath.Join(dir, "manifest.json")
	if !fileExists(manifest) {
		if err := writeManifest(manifest, m); err != nil {
			return err
		}
	}
	if err := removeCompactLeftovers(dir); err != nil {
		return err
	}
	groups := compactGroups(m.Parts, spec.Replicates, opts.CompactRows)
	out := *m
	out.Parts = make([]ManifestPart, len(groups))
	out.Compacted = true
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Workers)
	for k, grp := range groups {
		name := fmt.Sprintf("%s%06d.parquet", CompactPrefix, k)
		out.Parts[k] = ManifestPart{Index: k, From: grp[0].From, To: grp[len(grp)-1].To}
		for _, table := range []string{"points", "clients"} {
			g.Go(func() error {
				var inputs []string
				for _, p := range grp {
					in := p.Points.Name
					if table == "clients" {
						in = p.Clients.Name
					}
					inputs = append(inputs, filepath.Join(dir, table, in))
				}
				fm, err := concatParquet(gctx, filepath.Join(dir, table), name, inputs)
				if err != nil {
					return fmt.Errorf("compacting %s/%s: %w", table, name, err)
				}
				if table == "points" {
					out.Parts[k].Points = fm
				} else {
					out.Parts[k].Clients = fm
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := writeManifest(manifest, &out); err != nil {
		return err
	}
	rep.Manifest = &out
	rep.Compacted = len(groups)
	return removeParts(dir)
}

// finishCompacted verifies a compacted run and removes what an interrupted
// compaction left behind (parts, shard manifests).
func finishCompacted(ctx context.Context, dir string, spec *Spec, specYAML string, m *Manifest, opts MergeOptions, rep *MergeReport) error {
	rep.Shards = max(m.MergedShards, 1)
	rep.Manifest = m
	rep.AlreadyMerged = true
	rep.Compacted = len(m.Parts)
	var covered int64
	for _, p := range m.Parts {
		if p.From != covered {
			rep.Problems = append(rep.Problems, fmt.Sprintf("manifest.json: file %s starts at point %d, want %d", p.Points.Name, p.From, covered))
		}
		covered = p.To
		rows := (p.To - p.From) * int64(spec.Replicates)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := verifyFile(dir, "points", p.Points.Name, p.Points, rows, specYAML, opts.VerifySHA256); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("points/%s: %v", p.Points.Name, err))
		}
		// Clients rows: the same multiple of points rows in every file.
		perRow := m.Parts[0].Clients.Rows / max((m.Parts[0].To-m.Parts[0].From)*int64(spec.Replicates), 1)
		if err := verifyFile(dir, "clients", p.Clients.Name, p.Clients, rows*perRow, specYAML, opts.VerifySHA256); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("clients/%s: %v", p.Clients.Name, err))
		}
	}
	if covered != spec.Points() {
		rep.Problems = append(rep.Problems, fmt.Sprintf("manifest.json: files cover points [0, %d), the grid has %d", covered, spec.Points()))
	}
	if len(rep.Problems) > 0 {
		return ErrIncomplete
	}
	return removeParts(dir)
}

// removeCompactLeftovers removes what an interrupted compaction wrote
// before manifest.json listed it: merged-* files and their temporary files.
func removeCompactLeftovers(dir string) error {
	for _, table := range []string{"points", "clients"} {
		for _, pat := range []string{CompactPrefix + "*.parquet", "." + CompactPrefix + "*.tmp"} {
			old, _ := filepath.Glob(filepath.Join(dir, table, pat))
			for _, f := range old {
				if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
		}
	}
	return nil
}

// removeParts removes the part files and shard manifests a compaction
// replaced, and temporary files a killed compaction left.
func removeParts(dir string) error {
	var files []string
	for _, table := range []string{"points", "clients"} {
		for _, pat := range []string{"part-*.parquet", "." + CompactPrefix + "*.tmp"} {
			f, _ := filepath.Glob(filepath.Join(dir, table, pat))
			files = append(files, f...)
		}
	}
	ms, _ := filepath.Glob(filepath.Join(dir, "manifest.shard-*-of-*.json"))
	for _, f := range append(files, ms...) {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
