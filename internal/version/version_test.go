package version

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	const c = "3f82339abcdef0123456789abcdef0123456789a"
	vcs := func(rev, mod string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: mod}}
	}
	for _, tc := range []struct {
		name                string
		main, stamp, stampM string
		settings            []debug.BuildSetting
		want, wantCommit    string
		wantDirty           bool
	}{
		{"no information", "(devel)", "", "", nil, "0.1.0", "", false},
		{"make build, clean", "(devel)", c, "", nil, "0.1.0+3f82339abcde", c, false},
		{"make build, modified", "(devel)", c, "true", nil, "0.1.0+3f82339abcde.dirty", c, true},
		{"go build with VCS stamping", "(devel)", "", "", vcs(c, "false"), "0.1.0+3f82339abcde", c, false},
		{"go build, modified tree", "(devel)", "", "", vcs(c, "true"), "0.1.0+3f82339abcde.dirty", c, true},
		{"stamp wins over build info", "(devel)", c, "", vcs("ffff", "true"), "0.1.0+3f82339abcde", c, false},
		{"go install at a tag", "v0.2.0", "", "", nil, "0.2.0", "", false},
		{"go install at a pseudo-version", "v0.0.0-20261201005505-3f82339abcde", "", "", nil, "0.0.0-20261201005505-3f82339abcde", "", false},
		{"pseudo-version with VCS info", "v0.0.0-20261201005505-3f82339abcde", "", "", vcs(c, "false"), "0.0.0-20261201005505-3f82339abcde", c, false},
	} {
		v, commit, dirty := versionOf(tc.main, tc.stamp, tc.stampM, tc.settings)
		if v != tc.want || commit != tc.wantCommit || dirty != tc.wantDirty {
			t.Errorf("%s: got %q %q %v, want %q %q %v", tc.name, v, commit, dirty, tc.want, tc.wantCommit, tc.wantDirty)
		}
	}
}
