// Package version is ratesweep's version: the release, and the commit and
// state of the tree it was built from. Every Parquet file and manifest a
// run writes records it.
package version

import (
	"runtime/debug"
	"strings"
)

// release is the version of a build from a clone; a build by `go install
// module@version` reports the module's tag or pseudo-version instead.
const release = "0.1.0"

// commit and modified are set by the Makefile's build from a clone
// (-ldflags -X ...internal/version.commit=$(git rev-parse HEAD) -X ...internal/version.modified=true),
// because GOFLAGS turns Go's own VCS stamping off. Without them the build
// info's vcs.revision and vcs.modified are used when Go stamped them.
var commit, modified string

// Version is ratesweep's version, written into every Parquet file and
// manifest: the release, then "+" and the commit's first 12 hex digits, then
// ".dirty" when the tree had uncommitted changes ("0.1.0+3f82339abcde.dirty").
// Commit is the full commit hash the binary was built from, or ""; Dirty
// reports uncommitted changes in its tree.
var Version, Commit, Dirty = buildVersion()

func buildVersion() (string, string, bool) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return versionOf("", commit, modified, nil)
	}
	return versionOf(info.Main.Version, commit, modified, info.Settings)
}

// versionOf derives the version from the main module's version, the
// Makefile's stamps and the build info's settings (stamps win).
func versionOf(mainVersion, stampCommit, stampModified string, settings []debug.BuildSetting) (version, commit string, dirty bool) {
	version, commit, dirty = release, stampCommit, stampModified == "true"
	if mainVersion != "" && mainVersion != "(devel)" {
		version = strings.TrimPrefix(mainVersion, "v") // a tag or pseudo-version names the commit
	}
	for _, s := range settings {
		switch {
		case s.Key == "vcs.revision" && stampCommit == "":
			commit = s.Value
		case s.Key == "vcs.modified" && stampCommit == "": // the stamps come as a pair
			dirty = s.Value == "true"
		}
	}
	short := commit[:min(12, len(commit))]
	if commit == "" || strings.Contains(version, "+") || strings.Contains(version, short) {
		return version, commit, dirty
	}
	version += "+" + short
	if dirty {
		version += ".dirty"
	}
	return version, commit, dirty
}
