package main

import (
	"os"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

func TestVersionFlag(t *testing.T) {
	code, out, _ := runCLI(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "ratesweep "+sweep.Version+"\ncommit ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	if _, err := os.Stat("testdata"); err != nil {
		t.Fatal(err)
	}
}
