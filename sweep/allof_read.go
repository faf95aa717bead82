package sweep

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/model"
)

// stackLabels gives the all_of rows of a run their label (the points
// column policy: their components are in no parameter column) and their
// stacked parameters (rejected_counts, all_of[i].name) in Params.
func stackLabels(ctx context.Context, files []string, rows []PointRow) error {
	at := map[int64][]int{} // point id → rows of all_of points
	for i := range rows {
		if rows[i].Algorithm == model.AllOf.String() {
			at[rows[i].PointID] = append(at[rows[i].PointID], i)
		}
	}
	if len(at) == 0 {
		return nil
	}
	for _, f := range files {
		err := ScanFile(ctx, f, []string{"point_id", PolicyColumn}, func(rec arrow.RecordBatch) error {
			c := rec.Columns()
			for i := range int(rec.NumRows()) {
				id, _ := Int(c[0], i)
				idx, ok := at[id]
				if !ok {
					continue
				}
				label, _ := String(c[1], i)
				p, err := model.ParseLabel(label)
				if err != nil {
					return &DamagedError{Path: f, Err: fmt.Errorf("point %d: %w", id, err)}
				}
				for _, j := range idx {
					rows[j].Label = label
					for _, name := range p.StackedParams() {
						rows[j].Params[name] = p.Get(name)
					}
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
