package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// THIRD_PARTY_NOTICES holds a licence text of every module the binary
// links, freetype's two licence choices included.
func TestNotices(t *testing.T) {
	t.Chdir(filepath.Join("..", "..")) // the module's root, as make dist runs it
	path := filepath.Join(t.TempDir(), "THIRD_PARTY_NOTICES")
	if err := writeNotices(path, "linux", "amd64"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"== github.com/apache/arrow-go/v18@", "== gonum.org/v1/plot@", "== github.com/spf13/pflag@",
		"== github.com/golang/freetype@", "licenses/ftl.txt", "licenses/gpl.txt", "The FreeType Project LICENSE", "GNU GENERAL PUBLIC LICENSE"} {
		if !strings.Contains(s, want) {
			t.Errorf("THIRD_PARTY_NOTICES lacks %q", want)
		}
	}
	if strings.Contains(s, "== github.com/ratesweep/ratesweep") {
		t.Error("THIRD_PARTY_NOTICES lists ratesweep itself")
	}
}
