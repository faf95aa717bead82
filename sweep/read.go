package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// PartFiles lists the Parquet files of a run directory's points or clients
// table ("points" or "clients") in point order. A complete run's files are
// the ones its manifest.json lists, never a directory glob: files a killed
// compaction or a stale shard left beside them are not part of the run. A
// run without manifest.json (incomplete, or sharded and not merged) lists
// its part-*.parquet files. Every file lies inside dir: a manifest entry
// that is a path ("../x") or a symlink resolving outside dir is refused.
// A listed file that is missing, or a directory without any file, is an
// *InputError.
func PartFiles(dir, table string) ([]string, error) {
	files, _, err := partFiles(dir, table, false)
	return files, err
}

// MissingParts lists the part files, relative to dir ("points/part-…"),
// that the manifest.json of a complete run lists but dir lacks (a part
// deleted after the run finished). It is empty for a run without a
// manifest, and for a whole run.
func MissingParts(dir string) []string {
	var out []string
	for _, table := range []string{"points", "clients"} {
		_, missing, _ := partFiles(dir, table, true)
		for _, f := range missing {
			out = append(out, filepath.Join(table, filepath.Base(f)))
		}
	}
	return out
}

// partFiles is PartFiles; with skipMissing, a part the manifest lists but
// the directory lacks is left out and returned in missing instead.
func partFiles(dir, table string, skipMissing bool) (files, missing []string, err error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, inputErrorf("%s: %v", dir, plainErr(err))
	}
	if !st.IsDir() {
		return nil, nil, inputErrorf("%s: not a run directory", dir)
	}
	mpath := filepath.Join(dir, "manifest.json")
	if m, err := loadManifest(mpath); err == nil && len(m.Parts) > 0 {
		if err := Confine(dir, mpath); err != nil {
			return nil, nil, err
		}
		files = make([]string, 0, len(m.Parts))
		for _, p := range m.Parts {
			name := p.Points.Name
			if table == "clients" {
				name = p.Clients.Name
			}
			if !partName(name) {
				return nil, nil, inputErrorf("%s: manifest.json lists %s under %s: not a file name of the run directory (refused)", dir, yamlx.Excerpt(name), table)
			}
			f := filepath.Join(dir, table, name)
			if !fileExists(f) && skipMissing {
				missing = append(missing, f)
				continue
			}
			if !fileExists(f) {
				return nil, nil, inputErrorf("%s: %s/%s, listed in manifest.json, is missing: recompute it with --resume", dir, table, yamlx.Excerpt(name))
			}
			files = append(files, f)
		}
	} else {
		if files, err = filepath.Glob(filepath.Join(dir, table, "part-*.parquet")); err != nil {
			return nil, nil, err
		}
		if len(files) == 0 {
			return nil, nil, inputErrorf("%s: no Parquet files under %s/ (is it a ratesweep run directory?)", dir, table)
		}
		sort.Strings(files)
	}
	for _, f := range files {
		if err := Confine(dir, f); err != nil {
			return nil, nil, err
		}
	}
	if len(files) == 0 && table == "points" {
		return nil, missing, inputErrorf("%s: every points part listed in manifest.json is missing", dir)
	}
	return files, missing, nil
}

// RunComplete reports whether the run in dir is complete: its manifest.json
// (written last by run, or by merge for a sharded run) exists.
func RunComplete(dir string) bool {
	return fileExists(filepath.Join(dir, "manifest.json"))
}

// FileMetadata returns a Parquet file's key-value metadata.
func FileMetadata(path string) (map[string]string, error) {
	rdr, err := openParquet(path)
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	out := map[string]string{}
	kv := rdr.MetaData().KeyValueMetadata()
	for i, k := range kv.Keys() {
		out[k] = kv.Values()[i]
	}
	return out, nil
}

// ScanFile reads the named columns of a Parquet file in record batches; the
// batch's columns are in the order asked. A missing column is an
// *InputError naming the file; a file that does not decode (corrupt footer,
// page or checksum) is a *DamagedError.
func ScanFile(ctx context.Context, path string, columns []string, fn func(rec arrow.RecordBatch) error) error {
	return ScanFileBatches(ctx, path, columns, batchRows, fn)
}

// ScanFileBatches is ScanFile with batches of at most rows rows: smaller
// batches hold less memory.
func ScanFileBatches(ctx context.Context, path string, columns []string, rows int, fn func(rec arrow.RecordBatch) error) error {
	return scanFile(ctx, path, columns, rows, nil, fn)
}

// ScanPointRange is ScanFile reading only the row groups whose point_id
// range [lo, hi] (from the file's statistics) keep accepts; nil keeps all,
// and so does a row group without statistics.
func ScanPointRange(ctx context.Context, path string, columns []string, keep func(lo, hi int64) bool, fn func(rec arrow.RecordBatch) error) error {
	return scanFile(ctx, path, columns, batchRows, keep, fn)
}

func scanFile(ctx context.Context, path string, columns []string, rows int, keep func(lo, hi int64) bool, fn func(rec arrow.RecordBatch) error) (err error) {
	inFn := false // a panic of fn is a bug, not damage: let it through
	defer func() {
		if inFn {
			return
		}
		if r := recover(); r != nil {
			err = &DamagedError{Path: path, Err: fmt.Errorf("unreadable: %v", r)}
		}
	}()
	rdr, err := openParquet(path)
	if err != nil {
		return err
	}
	defer rdr.Close()
	var groups []int
	if keep != nil {
		groups = []int{}
		md := rdr.MetaData()
		col := md.Schema.ColumnIndexByName("point_id")
		for i := range md.NumRowGroups() {
			if col < 0 || keepRowGroup(md.RowGroup(i), col, keep) {
				groups = append(groups, i)
			}
		}
		if len(groups) == 0 {
			return nil
		}
	}
	// The footer decoded: a schema that does not is damage, not bad input.
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: int64(rows)}, memory.DefaultAllocator)
	if err != nil {
		return damaged(path, err)
	}
	sc, err := fr.Schema()
	if err != nil {
		return damaged(path, err)
	}
	idx := make([]int, len(columns))
	var absent []int // parameter columns added after the file was written: null
	for i, c := range columns {
		found := sc.FieldIndices(c)
		if len(found) == 0 {
			if _, ok := addedColumnType(c); ok {
				idx[i] = -1
				absent = append(absent, i)
				continue
			}
			return inputErrorf("%s: no column %q (not a ratesweep file, or from an older version)", path, c)
		}
		idx[i] = found[0]
	}
	// The reader returns columns in file order; map them back to the order asked.
	order := slices.DeleteFunc(slices.Clone(idx), func(j int) bool { return j < 0 })
	slices.Sort(order)
	rr, err := fr.GetRecordReader(ctx, order, groups)
	if err != nil {
		return damaged(path, err)
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		cols := make([]arrow.Array, len(columns))
		fields := make([]arrow.Field, len(columns))
		for i, want := range idx {
			if want < 0 {
				continue
			}
			j := slices.Index(order, want)
			cols[i], fields[i] = rec.Column(j), rec.Schema().Field(j)
		}
		for _, i := range absent {
			typ, _ := addedColumnType(columns[i])
			cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, typ, int(rec.NumRows()))
			fields[i] = arrow.Field{Name: columns[i], Type: cols[i].DataType(), Nullable: true}
		}
		out := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
		for _, i := range absent {
			cols[i].Release()
		}
		inFn = true
		err := fn(out)
		inFn = false
		out.Release()
		if err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return damaged(path, err)
	}
	return nil
}

// keepRowGroup asks keep about the point_id range of row group rg (column col).
func keepRowGroup(rg *metadata.RowGroupMetaData, col int, keep func(lo, hi int64) bool) bool {
	cc, err := rg.ColumnChunk(col)
	if err != nil {
		return true
	}
	if set, err := cc.StatsSet(); err != nil || !set {
		return true
	}
	st, err := cc.Statistics()
	if err != nil {
		return true
	}
	s, ok := st.(*metadata.Int64Statistics)
	if !ok || !s.HasMinMax() {
		return true
	}
	return keep(s.Min(), s.Max())
}

// Column accessors that accept the types ratesweep writes and their common
// re-encodings (DuckDB or Polars rewrites).

// Int returns column c's value at row i as int64 and whether it is non-null.
func Int(c arrow.Array, i int) (int64, bool) {
	if c.IsNull(i) {
		return 0, false
	}
	switch a := c.(type) {
	case *array.Int64:
		return a.Value(i), true
	case *array.Int32:
		return int64(a.Value(i)), true
	case *array.Float64:
		return int64(a.Value(i)), true
	}
	return 0, false
}

// Float returns column c's value at row i as float64 and whether it is non-null.
func Float(c arrow.Array, i int) (float64, bool) {
	if c.IsNull(i) {
		return 0, false
	}
	switch a := c.(type) {
	case *array.Float64:
		return a.Value(i), true
	case *array.Int64:
		return float64(a.Value(i)), true
	case *array.Int32:
		return float64(a.Value(i)), true
	}
	return 0, false
}

// String returns column c's value at row i (dictionary or plain strings).
func String(c arrow.Array, i int) (string, bool) {
	if c.IsNull(i) {
		return "", false
	}
	switch a := c.(type) {
	case *array.Dictionary:
		d, ok := a.Dictionary().(*array.String)
		if !ok {
			return "", false
		}
		return d.Value(a.GetValueIndex(i)), true
	case *array.String:
		return a.Value(i), true
	}
	return "", false
}

// ParamAt returns parameter p's value at row i of its column c (names of
// enumerated parameters mapped back to their values) and whether it is set.
func ParamAt(p model.Param, c arrow.Array, i int) (float64, bool) {
	if p.Values == nil {
		return Float(c, i)
	}
	s, ok := String(c, i)
	if !ok {
		return 0, false
	}
	return p.ParamValue(s)
}

// PointRow is one row of points/*.parquet.
type PointRow struct {
	PointID   int64
	Replicate int32
	Algorithm string
	Params    map[string]float64 // the parameters that apply (non-null)
	CountIf   string             // the point's count_if, from the run's spec ("" none)
	// Label is the policy label of an all_of point (the points column
	// policy), whose components no parameter column holds; "" otherwise.
	Label string
	model.Metrics
}

// Key identifies the row's policy by its parameters, e.g.
// "sliding_window window_s=60 limit=600": model.PolicyLabel, the points
// column `policy` (computed here from the parameters, so runs written
// before the column existed get the same key).
func (r *PointRow) Key() string {
	if r.Label != "" {
		return r.Label
	}
	label := model.PolicyLabel(r.Algorithm, func(name string) (float64, bool) {
		v, ok := r.Params[name]
		return v, ok
	})
	if r.CountIf != "" {
		label += " count_if=" + r.CountIf
	}
	return label
}

// PointColumns are the columns ReadPoints reads: every points column but
// PolicyColumn.
func PointColumns() []string {
	out := []string{"point_id", "replicate", "algorithm"}
	for _, f := range pointsFields()[3:] {
		if f.Name == PolicyColumn {
			continue // derived from the parameters: PointRow.Key
		}
		out = append(out, f.Name)
	}
	return out
}

// ReadPoints reads every points row of a run directory, sorted by
// (point_id, replicate), accepting an incomplete run (see ReadRunPoints).
// It holds all rows in memory: use ScanFile for large runs.
func ReadPoints(ctx context.Context, dir string) ([]PointRow, error) {
	r, err := OpenRun(dir, OpenOptions{AllowIncomplete: true})
	if err != nil {
		return nil, err
	}
	return ReadRunPoints(ctx, r)
}

// ReadRunPoints reads every points row of an opened run, sorted by
// (point_id, replicate). A row listed twice is refused, and so is a NULL
// or NaN count or percentage unless the run was opened AllowIncomplete.
func ReadRunPoints(ctx context.Context, run *RunDir) ([]PointRow, error) {
	var rows []PointRow
	err := scanRunPoints(ctx, run, func(file []PointRow) error {
		rows = append(rows, file...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := stackLabels(ctx, run.Points, rows); err != nil {
		return nil, err
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].PointID != rows[j].PointID {
			return rows[i].PointID < rows[j].PointID
		}
		return rows[i].Replicate < rows[j].Replicate
	})
	return rows, nil
}

// scanRunPoints reads and checks the points rows of an opened run, a part
// file at a time, and passes each file's rows to fn (which may keep them).
func scanRunPoints(ctx context.Context, run *RunDir, fn func(rows []PointRow) error) error {
	cols := PointColumns()
	keys := run.Keys()
	countIf := run.CountIfOf()
	for _, f := range run.Points {
		var rows []PointRow
		start := 0
		err := ScanFile(ctx, f, cols, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				var r PointRow
				r.PointID, _ = Int(c[0], i)
				rep, _ := Int(c[1], i)
				if err := keys.Next(f, r.PointID, rep); err != nil {
					return err
				}
				r.Replicate = int32(rep)
				r.CountIf = countIf(r.PointID)
				r.Algorithm, _ = String(c[2], i)
				r.Params = map[string]float64{}
				k := 3
				for _, p := range model.Params {
					if v, ok := ParamAt(p, c[k], i); ok {
						r.Params[p.Name] = v
					}
					k++
				}
				if err := run.Policy(f, r.PointID, r.Algorithm, func(name string) (float64, bool) {
					v, ok := r.Params[name]
					return v, ok
				}); err != nil {
					return err
				}
				ranged := func(name string, v float64, ok bool) error { return run.Optional(f, r.PointID, name, v, ok) }
				m := &r.Metrics
				for _, im := range intMetrics {
					v, ok := Int(c[k], i)
					if err := run.Metric(f, r.PointID, im.name, float64(v), ok); err != nil {
						return err
					}
					*im.field(m) = v
					k++
				}
				for _, fm := range pctMetrics {
					v, ok := Float(c[k], i)
					if err := run.Metric(f, r.PointID, fm.name, v, ok); err != nil {
						return err
					}
					*fm.field(m) = v
					k++
				}
				for _, im := range stageMetrics {
					v, ok := Int(c[k], i)
					if err := ranged(im.name, float64(v), ok); err != nil {
						return err
					}
					*im.field(m) = v
					k++
				}
				for _, fm := range tailMetrics {
					v, ok := Float(c[k], i)
					if err := ranged(fm.name, v, ok); err != nil {
						return err
					}
					*fm.field(m) = v
					k++
				}
				for _, im := range accountMetrics {
					v, ok := Int(c[k], i)
					if err := ranged(im.name, float64(v), ok); err != nil {
						return err
					}
					*im.field(m) = v
					k++
				}
				for _, fm := range blockTimeMetrics {
					v, ok := Float(c[k], i) // null in runs written before the column
					if err := ranged(fm.name, v, ok); err != nil {
						return err
					}
					*fm.field(m) = v
					k++
				}
				for _, im := range blockCountMetrics {
					v, ok := Int(c[k], i)
					if err := ranged(im.name, float64(v), ok); err != nil {
						return err
					}
					*im.field(m) = v
					k++
				}
				for _, im := range stateMetrics {
					v, ok := Int(c[k], i)
					if err := ranged(im.name, float64(v), ok); err != nil {
						return err
					}
					*im.field(m) = v
					m.StateMeasured = m.StateMeasured || ok
					k++
				}
				rows = append(rows, r)
			}
			return nil
		})
		if err == nil {
			err = readReactions(ctx, f, rows[start:])
		}
		if err == nil {
			err = readCosts(ctx, f, rows[start:])
		}
		if err == nil {
			err = fn(rows)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ClientRow is one row of clients/*.parquet.
type ClientRow struct {
	PointID                int64
	Replicate              int32
	Client, Class, Stage   string
	Offered, Admitted, Cut int64
	// BlockedS is the time a penalty box kept the client's keys blocked, s
	// (0 in runs written before the column).
	BlockedS float64
}

// ReadClients reads every clients row of a run directory in file order
// (sorted by point_id, replicate, then scenario client order).
func ReadClients(ctx context.Context, dir string) ([]ClientRow, error) {
	var rows []ClientRow
	err := ScanClients(ctx, dir, func(r *ClientRow) error {
		rows = append(rows, *r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// sumColumn sums an integer column of one file.
func sumColumn(path, col string) (int64, error) {
	var sum int64
	err := ScanFile(context.Background(), path, []string{col}, func(rec arrow.RecordBatch) error {
		c := rec.Column(0)
		for i := range int(rec.NumRows()) {
			v, _ := Int(c, i)
			sum += v
		}
		return nil
	})
	return sum, err
}
