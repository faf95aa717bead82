package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/ratesweep/ratesweep/internal/pqsafe"
	"github.com/ratesweep/ratesweep/internal/runfs"
)

// DamagedError says a file of a run cannot be read back: its footer, a
// page header or a page's checksum (zstd frames carry one) is wrong. The
// CLI exits 1; 'ratesweep run --resume' recomputes the part.
type DamagedError struct {
	Path string
	Err  error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("%s is damaged (%v): recompute it with ratesweep run --resume", e.Path, e.Err)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// damaged wraps err (or a recovered panic of the Parquet reader) as a
// *DamagedError of path; a missing file stays os.ErrNotExist.
func damaged(path string, err error) error {
	var de *DamagedError
	if err == nil || errors.Is(err, os.ErrNotExist) || errors.As(err, &de) || errors.Is(err, context.Canceled) {
		return err
	}
	return &DamagedError{Path: path, Err: err}
}

// recoverDamaged turns a panic of the Parquet reader on corrupt bytes
// (arrow-go panics on some: a slice of a corrupt length, a nil
// dictionary) into a *DamagedError in *err.
func recoverDamaged(path string, err *error) {
	if r := recover(); r != nil {
		*err = &DamagedError{Path: path, Err: fmt.Errorf("unreadable: %v", r)}
	}
}

// openParquet opens a Parquet file; a corrupt footer is a *DamagedError. A
// path that is not a regular file (a named pipe, a device) is an
// *InputError, found without blocking.
func openParquet(path string) (rdr *file.Reader, err error) {
	defer recoverDamaged(path, &err)
	f, err := openRegular(path)
	if err != nil {
		if _, ok := err.(*InputError); ok {
			return nil, err
		}
		return nil, damaged(path, err)
	}
	rdr, err = file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return nil, damaged(path, err)
	}
	if err := checkFooter(rdr); err != nil {
		rdr.Close()
		return nil, &DamagedError{Path: path, Err: err}
	}
	return rdr, nil
}

// openRegular opens a file of a run directory for reading only if it is a
// regular file (runfs.OpenRegular): anything else is an *InputError naming
// it; a missing file stays os.ErrNotExist.
func openRegular(path string) (*os.File, error) {
	f, err := runfs.OpenRegular(path)
	var nr *runfs.NotRegularError
	if errors.As(err, &nr) {
		return nil, &InputError{Msg: nr.Error()}
	}
	return f, err
}

// checkFooter checks what arrow-go would decode from a footer without
// bounds (its ARROW:schema) before anything decodes it.
func checkFooter(rdr *file.Reader) error {
	if s := rdr.MetaData().KeyValueMetadata().FindValue(pqsafe.SchemaKey); s != nil {
		return pqsafe.CheckArrowSchema(*s)
	}
	return nil
}

// VerifyParquet reads every page of a Parquet file and decodes every value,
// so a flipped byte in a data or dictionary page (caught by its zstd frame
// checksum, or by the decoder) or in the footer is a *DamagedError. It
// returns the file's rows.
func VerifyParquet(ctx context.Context, path string) (rows int64, err error) {
	names, want, err := FileColumns(path)
	if err != nil {
		return 0, err
	}
	err = ScanFile(ctx, path, names, func(rec arrow.RecordBatch) error {
		rows += rec.NumRows()
		return nil
	})
	if err == nil && rows != want {
		err = &DamagedError{Path: path, Err: fmt.Errorf("%d rows decoded, the footer says %d", rows, want)}
	}
	return rows, err
}

// FileColumns returns a Parquet file's column names and rows.
func FileColumns(path string) ([]string, int64, error) {
	rdr, err := openParquet(path)
	if err != nil {
		return nil, 0, err
	}
	defer rdr.Close()
	md := rdr.MetaData()
	names := make([]string, md.Schema.NumColumns())
	for i := range names {
		names[i] = md.Schema.Column(i).Name()
	}
	return names, rdr.NumRows(), nil
}

// filePerm is the mode of the files a run writes: 0666 less the umask, as
// os.Create would give (temporary files start at 0600).
var filePerm = 0o666 &^ umask() // read at init, before any goroutine creates files

// IDRange returns the smallest and largest point_id of a Parquet file from
// its row groups' statistics (ok false when a row group has none).
func IDRange(path string) (lo, hi int64, ok bool) {
	rdr, err := openParquet(path)
	if err != nil {
		return 0, 0, false
	}
	defer rdr.Close()
	md := rdr.MetaData()
	col := md.Schema.ColumnIndexByName("point_id")
	if col < 0 || md.NumRowGroups() == 0 {
		return 0, 0, false
	}
	lo, hi = math.MaxInt64, math.MinInt64
	for g := range md.NumRowGroups() {
		cc, err := md.RowGroup(g).ColumnChunk(col)
		if err != nil {
			return 0, 0, false
		}
		st, err := cc.Statistics()
		s, isInt := st.(*metadata.Int64Statistics)
		if err != nil || !isInt || !s.HasMinMax() {
			return 0, 0, false
		}
		lo, hi = min(lo, s.Min()), max(hi, s.Max())
	}
	return lo, hi, true
}
