package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ratesweep/ratesweep/sweep"
)

func cmdMerge(e *env, args []string) error {
	fs := newFlags(e, "merge", "RUN_DIR", "Check that every shard of a sharded run finished and write the combined manifest.json\n(key shards, run --shard-by key: add them up into the parts of one run over the whole log or scenario).\nExit 1 lists the missing shards (by index) and the missing or corrupt parts.")
	shards := fs.Int("shards", 0, "expected shard count (default: from the shard manifests or the parts' metadata)")
	hash := fs.Bool("sha256", false, "also check every file's size and sha256 against its manifest (reads every byte)")
	compact := fs.Bool("compact", false, "rewrite the parts into fewer files (merged-NNNNNN.parquet, sorted by point_id, same columns and metadata)")
	compactRows := fs.Int64("compact-rows", sweep.DefaultCompactRows, "with --compact: most points rows per file")
	quiet := fs.BoolP("quiet", "q", false, "print nothing but errors")
	rest, err := parseFlags(fs, args, 1)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usagef("merge: expected RUN_DIR")
	}
	if *shards < 0 || *shards > sweep.MaxShards {
		return usagef("merge: --shards must be 1 to %d, got %d", sweep.MaxShards, *shards)
	}
	if *compactRows < 1 {
		return usagef("merge: --compact-rows must be >= 1, got %d", *compactRows)
	}
	dir := rest[0]
	rep, err := sweep.Merge(e.ctx, dir, sweep.MergeOptions{
		Shards: *shards, VerifySHA256: *hash, Compact: *compact, CompactRows: *compactRows,
	})
	if errors.Is(err, sweep.ErrIncomplete) {
		fmt.Fprintf(e.stderr, "ratesweep: merge %s: %d shard(s)", dir, rep.Shards)
		if len(rep.MissingShards) > 0 {
			fmt.Fprintf(e.stderr, "; missing or unfinished shards (0-based index): %s", joinInts(rep.MissingShards))
		}
		fmt.Fprintln(e.stderr)
		for i, p := range rep.Problems {
			if i == maxProblems && len(rep.Problems) > maxProblems+1 {
				fmt.Fprintf(e.stderr, "  … and %d more\n", len(rep.Problems)-i)
				break
			}
			fmt.Fprintf(e.stderr, "  %s\n", p)
		}
		if len(rep.MissingShards) == 0 {
			return &exitError{exitFailure, fmt.Errorf("%s is incomplete: recompute the parts named above with ratesweep run --resume (with their --shard), then merge again", dir)}
		}
		return &exitError{exitFailure, fmt.Errorf("%s is incomplete; rerun the shards named above with --resume (e.g. sbatch --array=%s), then merge again", dir, joinInts(rep.MissingShards))}
	}
	if errors.Is(err, context.Canceled) {
		code, sig := 130, "interrupted"
		if e.signal != nil && e.signal() == "terminated" {
			code, sig = 143, "terminated"
		}
		return &exitError{code, fmt.Errorf("%s: %s is as it was (manifest.json lists whole files); run merge again to finish", sig, dir)}
	}
	if err != nil {
		var ie *sweep.InputError
		if errors.As(err, &ie) {
			return &badInput{err}
		}
		return err
	}
	if *quiet {
		return nil
	}
	m := rep.Manifest
	switch {
	case rep.AlreadyMerged:
		fmt.Fprintf(e.stdout, "%s was compacted already: %d points, %d rows in %d file(s) per table; Σ false cut = %d\n", dir, m.Points, m.Rows, rep.Compacted, m.FalseCutSum)
	case rep.Shards == 1 && !*compact:
		fmt.Fprintf(e.stdout, "%s is a complete single-process run: %d points, %d rows, %d parts; Σ false cut = %d\n", dir, m.Points, m.Rows, len(m.Parts), m.FalseCutSum)
	default:
		fmt.Fprintf(e.stdout, "merged %d shard(s): %d points, %d rows; Σ false cut = %d\n", rep.Shards, m.Points, m.Rows, m.FalseCutSum)
		if rep.Compacted > 0 {
			fmt.Fprintf(e.stdout, "compacted into %d file(s) per table\n", rep.Compacted)
		}
		fmt.Fprintf(e.stdout, "wrote %s\n", filepath.Join(dir, "manifest.json"))
	}
	return nil
}

// maxProblems is the most problems merge lists, one a line.
const maxProblems = 50

// maxRanges is the most ranges joinInts writes.
const maxRanges = 20

// joinInts writes sorted indexes as ranges, "0,3-7,9" (the form of sbatch
// --array), at most maxRanges of them and then how many indexes remain.
func joinInts(v []int) string {
	var s []string
	for i := 0; i < len(v); {
		j := i
		for j+1 < len(v) && v[j+1] == v[j]+1 {
			j++
		}
		if len(s) == maxRanges {
			s = append(s, fmt.Sprintf("… (%d more)", len(v)-i))
			break
		}
		if j > i {
			s = append(s, fmt.Sprintf("%d-%d", v[i], v[j]))
		} else {
			s = append(s, fmt.Sprint(v[i]))
		}
		i = j + 1
	}
	return strings.Join(s, ",")
}
