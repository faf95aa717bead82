package sweep

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
)

// OpenOptions control OpenRun.
type OpenOptions struct {
	// AllowIncomplete accepts a run without manifest.json (killed, still
	// running, or sharded and not merged), rows missing from the grid and
	// NULL or NaN metrics: the reader shows what is there, with a warning.
	// Rows listed twice and parts of other runs are refused all the same.
	AllowIncomplete bool
}

// RunDir is a run directory checked by OpenRun: its part files lie inside
// it, and every part belongs to one spec and scenario.
type RunDir struct {
	Dir      string
	Complete bool      // manifest.json lists the parts
	Manifest *Manifest // nil when incomplete
	Points   []string  // points part files in point order
	Clients  []string  // clients part files (listed; a reader may lack some when incomplete)
	// SpecYAML is the ratesweep.spec of every part: the spec the run ran
	// ("" when no part has one).
	SpecYAML string
	// ScenarioSHA256 is the parts' (and the manifest's) scenario hash.
	ScenarioSHA256 string
	Rows           int64 // points rows, from the footers
	Warnings       []string
	// Missing names the parts manifest.json lists but the directory lacks
	// ("points/part-000003.parquet"), left out under AllowIncomplete.
	Missing []string

	allowIncomplete bool
	spec            *runSpec // the spec rows are checked against (Policy)
}

// OpenRun opens the run in dir for reading; every reader of a run
// (report, check, check --update, recommend, export --run; merge through
// VerifyRows) goes through it. It refuses, as an *InputError naming the
// file:
//   - a file that is not a regular file (a named pipe, a device), found
//     without blocking;
//   - a manifest.json that is not JSON, has a count below 0, lists a part
//     twice or names a part that is not a plain file name ("../x", "/x");
//   - a part that is a symlink resolving outside dir;
//   - parts of other runs: a ratesweep.spec or ratesweep.scenario_sha256
//     that differs between parts or from the manifest;
//   - a listed part whose rows, size or sha256 differ from its manifest
//     entry (rewritten after the run);
//   - unless AllowIncomplete, a run without manifest.json, and a complete
//     run whose parts hold other row counts than its manifest says.
//
// A footer that does not decode, or asks for more than its file holds, is
// a *DamagedError, and so is a part whose hash is stale and that no longer
// decodes. Rows are checked as they are read: see Keys, RunDir.Policy,
// RunDir.Metric and RunDir.Optional.
func OpenRun(dir string, opts OpenOptions) (*RunDir, error) {
	r := &RunDir{Dir: dir, allowIncomplete: opts.AllowIncomplete, spec: &runSpec{}}
	var err error
	// A manifest.json that is there must be one: a named pipe, a damaged
	// file or impossible counts are refused, not read as "incomplete".
	if err := checkManifest(dir); err != nil {
		return nil, err
	}
	// With AllowIncomplete, a part the manifest lists but the directory
	// lacks (deleted after the run finished) is left out and named in Missing.
	var missing []string
	if r.Points, missing, err = partFiles(dir, "points", opts.AllowIncomplete); err != nil {
		return nil, err
	}
	r.Missing = append(r.Missing, missing...)
	if r.Clients, missing, err = partFiles(dir, "clients", opts.AllowIncomplete); err != nil && RunComplete(dir) {
		return nil, err
	}
	r.Missing = append(r.Missing, missing...)
	for i, f := range r.Missing {
		r.Missing[i] = filepath.Join(filepath.Base(filepath.Dir(f)), filepath.Base(f))
	}
	if r.Manifest, err = loadManifest(filepath.Join(dir, "manifest.json")); err == nil && len(r.Manifest.Parts) > 0 {
		r.Complete = true
	} else {
		r.Manifest = nil
		if !opts.AllowIncomplete {
			return nil, inputErrorf("%s has no manifest.json: it is incomplete (killed, still running, or sharded and not merged), so its missing points would pass unseen; finish it (ratesweep run --resume, or ratesweep merge), or read it anyway with --allow-incomplete", dir)
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s has no manifest.json: it may be incomplete (read anyway, --allow-incomplete)", dir))
	}
	if r.Manifest != nil {
		r.ScenarioSHA256 = r.Manifest.ScenarioSHA256
	}
	first := ""
	for i, f := range append(append([]string{}, r.Points...), r.Clients...) {
		rdr, err := openParquet(f)
		if err != nil {
			return nil, err
		}
		kv := rdr.MetaData().KeyValueMetadata()
		rows := rdr.NumRows()
		rdr.Close()
		// A part rewritten by another tool may have lost its metadata: then
		// every part must have (SpecYAML is "").
		spec, hash := "", kv.FindValue(MetaScenarioSHA256)
		if v := kv.FindValue(MetaSpec); v != nil {
			spec = *v
		}
		switch {
		case first == "":
			first, r.SpecYAML = f, spec
		case spec != r.SpecYAML:
			return nil, inputErrorf("%s: its %s differs from %s's: the directory mixes runs", f, MetaSpec, first)
		}
		if hash != nil {
			switch {
			case r.ScenarioSHA256 == "":
				r.ScenarioSHA256 = *hash
			case *hash != r.ScenarioSHA256:
				return nil, inputErrorf("%s: its scenario (sha256 %.12s) is not the run's (sha256 %.12s): the directory mixes runs of different scenarios", f, *hash, r.ScenarioSHA256)
			}
		}
		if i < len(r.Points) {
			r.Rows += rows
			if r.Manifest != nil {
				k := i
				if len(r.Missing) > 0 { // parts left out: find this one's entry by name
					k = slices.IndexFunc(r.Manifest.Parts, func(p ManifestPart) bool { return p.Points.Name == filepath.Base(f) })
				}
				if k >= 0 && k < len(r.Manifest.Parts) && r.Manifest.Parts[k].Points.Rows != rows {
					return nil, inputErrorf("%s: %d rows, manifest.json says %d: the part was replaced; recompute it with ratesweep run --resume", f, rows, r.Manifest.Parts[k].Points.Rows)
				}
			}
		}
	}
	if r.Manifest != nil && r.Manifest.SpecSHA256 != "" && r.SpecYAML != "" && r.Manifest.SpecSHA256 != sha256Hex([]byte(r.SpecYAML)) {
		return nil, inputErrorf("%s: manifest.json's spec_sha256 %.12s is not its parts' spec (%.12s): the directory mixes runs", dir, r.Manifest.SpecSHA256, sha256Hex([]byte(r.SpecYAML)))
	}
	if r.Manifest != nil {
		if err := checkListed(dir, r.Manifest, append(append([]string{}, r.Points...), r.Clients...)); err != nil {
			return nil, err
		}
	}
	if len(r.Missing) > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %d part file(s) listed in manifest.json are missing (%s): read without them (--allow-incomplete)", dir, len(r.Missing), strings.Join(r.Missing, ", ")))
	}
	if r.Manifest != nil && r.Manifest.Rows > 0 && r.Rows != r.Manifest.Rows && len(r.Missing) == 0 {
		return nil, inputErrorf("%s: its parts hold %d points rows, manifest.json says %d", dir, r.Rows, r.Manifest.Rows)
	}
	return r, nil
}

// partName reports whether name, from a manifest, names a file of a table
// directory: a plain file name, never a path, of at most 255 letters,
// digits, '.', '_' and '-' (ratesweep writes part-NNNNNN.parquet and
// merged-NNNNNN.parquet).
func partName(name string) bool {
	if name == "" || len(name) > 255 || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".parquet") {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return name == filepath.Base(name)
}

// Confine refuses a path of the run directory dir that resolves (through
// symlinks) outside it.
func Confine(dir, path string) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return inputErrorf("%s: %v", dir, plainErr(err))
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return inputErrorf("%s: %v", path, plainErr(err))
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return inputErrorf("%s: a symlink to %s, outside the run directory: refused", path, real)
	}
	return nil
}

// Keys checks the (point_id, replicate) keys of a run's points rows as a
// reader streams them in file order: strictly increasing (no row listed
// twice, no part twice), within the grid. Incomplete runs may lack keys;
// complete runs' row counts are checked by OpenRun.
type Keys struct {
	r               *RunDir
	points          int64 // grid points (0: unknown)
	reps            int64 // replicates (0: unknown)
	lastID, lastRep int64
	lastFile        string
}

// Keys returns a checker of the run's points keys.
func (r *RunDir) Keys() *Keys {
	k := &Keys{r: r, lastID: -1, lastRep: math.MaxInt64}
	k.points, k.reps = gridOf(r.SpecYAML)
	return k
}

// Next checks the key of the next row read from file.
func (k *Keys) Next(file string, id, rep int64) error {
	switch {
	case id < 0 || (k.points > 0 && id >= k.points):
		return inputErrorf("%s: point_id %d is outside the spec's grid (0 to %d)", file, id, k.points-1)
	case rep < 0 || (k.reps > 0 && rep >= k.reps):
		return inputErrorf("%s: point_id %d: replicate %d is outside the spec's %d replicates", file, id, rep, k.reps)
	case id < k.lastID || (id == k.lastID && rep <= k.lastRep):
		where := "in " + k.lastFile
		if k.lastFile == file {
			where = "earlier in the file"
		}
		return inputErrorf("%s: point_id %d replicate %d comes again or out of order (after point_id %d replicate %d %s): the run lists rows twice; recompute it", file, id, rep, k.lastID, k.lastRep, where)
	}
	k.lastID, k.lastRep, k.lastFile = id, rep, file
	return nil
}

// Metric checks a metric value a reader relies on. NULL (ok false) or NaN
// is refused unless the run was opened with AllowIncomplete (ratesweep
// writes neither); ±Inf, a negative count or time and a percentage outside
// 0 to 100 are refused always.
func (r *RunDir) Metric(file string, id int64, name string, v float64, ok bool) error {
	if ok && !math.IsNaN(v) {
		return checkRange(file, id, name, v)
	}
	if r.allowIncomplete {
		return nil
	}
	what := "NULL"
	if ok {
		what = "NaN"
	}
	return inputErrorf("%s: point_id %d: %s is %s (ratesweep writes a number: the file was altered or not written by ratesweep); read it anyway with --allow-incomplete", file, id, name, what)
}
