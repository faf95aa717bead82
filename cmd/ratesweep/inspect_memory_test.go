package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"testing"
)

// inspect bounds its memory like run: a log of many gzip members (400,000
// lines, compressed over 100:1) is sized by sampling them, and over
// --max-memory it exits 2 before reading, naming the driver.
func TestInspectMaxMemory(t *testing.T) {
	var b bytes.Buffer
	for m := range 40 {
		zw := gzip.NewWriter(&b)
		for i := range 10000 {
			fmt.Fprintf(zw, "10.0.%d.%d - - [01/Jul/1995:00:00:01 -0400] \"GET / HTTP/1.0\" 200 1\n", m, i%250)
		}
		zw.Close()
	}
	log := writeFile(t, t.TempDir(), "access.log.gz", b.String())
	code, _, stderr := runCLI(t, "inspect", log, "--max-memory", "100MB")
	if code != 2 || !strings.Contains(stderr, "inspect: reading "+log+" needs about") || !strings.Contains(stderr, "log keys") {
		t.Errorf("over budget: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "inspect", log, "--max-memory", "2GB", "-q")
	if code != 0 || !strings.Contains(stdout, "400,000 requests") {
		t.Errorf("within budget: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
