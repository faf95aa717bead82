package sweep

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// ScanClients streams every clients row of a run directory in file order
// (as ReadClients, sorted by point_id, replicate, then scenario client
// order), one record batch at a time: memory does not grow with the run.
// The row and its strings are valid only during fn; fn keeps a copy
// (strings.Clone) of what it holds on to.
func ScanClients(ctx context.Context, dir string, fn func(r *ClientRow) error) error {
	files, err := PartFiles(dir, "clients")
	if err != nil {
		return err
	}
	cols := []string{"point_id", "replicate", "client", "class", "stage", "offered", "admitted", "cut", BlockedColumn}
	var r ClientRow
	for _, f := range files {
		err := ScanFile(ctx, f, cols, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				r.PointID, _ = Int(c[0], i)
				rep, _ := Int(c[1], i)
				r.Replicate = int32(rep)
				r.Client, _ = String(c[2], i)
				r.Class, _ = String(c[3], i)
				r.Stage, _ = String(c[4], i)
				r.Offered, _ = Int(c[5], i)
				r.Admitted, _ = Int(c[6], i)
				r.Cut, _ = Int(c[7], i)
				r.BlockedS, _ = Float(c[8], i)
				if err := fn(&r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
