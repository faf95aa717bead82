package sweep

import (
	"runtime/debug"
	"strings"
)

// release is the version of a build from a clone; a build by `go install
// module@version` reports the module's tag or pseudo-version instead.
const release = "0.1.0"

// commit and modified are set by the Makefile's build from a clone
// (-ldflags -X ...sweep.commit=$(git rev-parse HEAD) -X ...sweep.modified=true),
// because GOFLAGS turns Go's own VCS stamping off. Without them the build
// info's vcs.revision and vcs.modified are used when Go stamped them.
var commit, modified string

// Version is ratesweep's version, written into every Parquet file and
// manifest: the release, then "+" and the commit's first 12 hex digits, then
// ".dirty" when the tree had uncommitted changes ("0.1.0+3f82339abcde.dirty").
var Version = buildVersion()

// Commit is the full commit hash the binary was built from, or "".
var Commit string

// Dirty reports whether the build's tree had uncommitted changes.
var Dirty bool

func buildVersion() string {
	v := release
	Commit, Dirty = commit, modified == "true"
	if info, ok := debug.ReadBuildInfo(); ok {
		if mv := info.Main.Version; mv != "" && mv != "(devel)" {
			v = strings.TrimPrefix(mv, "v") // a tag or pseudo-version names the commit
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && Commit == "":
				Commit = s.Value
			case s.Key == "vcs.modified" && modified == "":
				Dirty = s.Value == "true"
			}
		}
	}
	if Commit == "" || strings.Contains(v, "+") || strings.Contains(v, Commit[:min(12, len(Commit))]) {
		return v
	}
	v += "+" + Commit[:min(12, len(Commit))]
	if Dirty {
		v += ".dirty"
	}
	return v
}
