package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// inspect - reads the log from standard input, compressed or not.
func TestInspectStdin(t *testing.T) {
	log := "203.0.113.7 - - [01/Jan/2026:00:00:00 +0000] \"GET / HTTP/1.1\" 200 5\n" +
		"198.51.100.4 - - [01/Jan/2026:00:00:01 +0000] \"GET / HTTP/1.1\" 200 5\n"
	var z bytes.Buffer
	w, _ := zstd.NewWriter(&z)
	w.Write([]byte(log))
	w.Close()
	for name, in := range map[string][]byte{"plain": []byte(log), "zstd": z.Bytes()} {
		var out, errb bytes.Buffer
		e := &env{ctx: context.Background(), stdout: &out, stderr: &errb, stdin: bytes.NewReader(in),
			getenv: func(string) string { return "" }}
		if code := run(e, []string{"inspect", "-", "-q"}); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errb.String())
		}
		if !strings.Contains(out.String(), "lines       2: 2 requests") || (name == "zstd") != strings.Contains(out.String(), ", zstd)") {
			t.Errorf("%s:\n%s", name, out.String())
		}
	}
}
