package sweep

import "path/filepath"

// ClientsFile is the path of the clients file of r that holds grid point
// id of a grid of points points: the file of the manifest's part whose
// range holds id (a run compacted by 'merge --compact' keeps several parts
// in one merged-NNNNNN.parquet), else, without a manifest, the part file
// the grid's layout puts it in. The file may be missing from the directory.
func (r *RunDir) ClientsFile(id, points int64) string {
	if r.Manifest != nil {
		for _, p := range r.Manifest.Parts {
			if p.From <= id && id < p.To {
				return filepath.Join(r.Dir, "clients", p.Clients.Name)
			}
		}
	}
	return filepath.Join(r.Dir, "clients", Part{Index: int(id / PartPoints(points))}.Name())
}
