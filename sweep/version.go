package sweep

import "github.com/ratesweep/ratesweep/internal/version"

// Version, Commit and Dirty are version.Version, version.Commit and
// version.Dirty: the version every Parquet file and manifest records.
var Version, Commit, Dirty = version.Version, version.Commit, version.Dirty
