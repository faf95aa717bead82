package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A rotated set given by a glob is read oldest first as one log: each file
// decompressed on its own, a file without a final newline joined cleanly,
// no request malformed for going back in time.
func TestRotatedSetAsOne(t *testing.T) {
	dir := t.TempDir()
	day := func(h int, ips ...string) string {
		var b strings.Builder
		for i, ip := range ips {
			fmt.Fprintf(&b, "%s - - [01/Jan/2026:%02d:00:%02d +0000] \"GET / HTTP/1.1\" 200 1\n", ip, h, i)
		}
		return b.String()
	}
	os.WriteFile(filepath.Join(dir, "access.log.2.gz"), compressWith(t, CompressGzip, day(0, "a", "b")), 0o644)
	os.WriteFile(filepath.Join(dir, "access.log.1"), []byte(strings.TrimSuffix(day(1, "a", "c"), "\n")), 0o644)
	os.WriteFile(filepath.Join(dir, "access.log"), compressWith(t, CompressZstd, day(2, "a")), 0o644)
	old := time.Now().Add(-time.Hour) // mtimes that disagree with the numbers: the numbers win
	os.Chtimes(filepath.Join(dir, "access.log.1"), old, old)
	files, err := ExpandSet(filepath.Join(dir, "access.log*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if strings.Join(names, " ") != "access.log.2.gz access.log.1 access.log" {
		t.Errorf("order %v", names)
	}
	spec := writeFile(t, dir, "spec.yaml", "traffic:\n  log: {files: 'access.log*', as: one}\n")
	cfg, err := LoadConfig(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Logs) != 1 || len(cfg.Options.Set) != 3 {
		t.Fatalf("logs %v set %v", cfg.Logs, cfg.Options.Set)
	}
	tr, err := Load(context.Background(), cfg.Log, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Requests() != 5 || tr.Stats.Malformed != 0 || tr.Stats.OutOfOrder != 0 || tr.DurationS != 7201 || tr.Keys[0].Name != "a" || tr.Keys[0].Requests != 3 {
		t.Errorf("requests %d stats %+v duration %d keys %+v", tr.Requests(), tr.Stats, tr.DurationS, tr.Keys)
	}
	// The canonical YAML names the files and reads back the same.
	back, err := LoadConfig(writeFile(t, dir, "canon.yaml", string(cfg.YAML())))
	if err != nil || string(back.YAML()) != string(cfg.YAML()) || !strings.Contains(string(cfg.YAML()), "as: one}") {
		t.Errorf("round trip %v:\n%s", err, cfg.YAML())
	}
	// A list in the wrong order: the times that go back are malformed.
	cfg2, err := LoadConfig(writeFile(t, dir, "list.yaml", "traffic:\n  log: {files: [access.log, access.log.2.gz], as: one}\n  max_backwards_s: 60\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err = Load(context.Background(), cfg2.Log, cfg2.Options)
	if err != nil || tr.Stats.Malformed != 2 {
		t.Errorf("%v %+v", err, tr.Stats)
	}
	for body, want := range map[string]string{
		"traffic:\n  log: {files: 'nothing*', as: one}\n":             "no file matches",
		"traffic:\n  log: {files: [access.log], as: replicas}\n":      "traffic.log.as: must be one",
		"traffic:\n  log: {files: [access.log, gone.log], as: one}\n": "gone.log",
	} {
		c, err := LoadConfig(writeFile(t, dir, "bad.yaml", body))
		if err == nil {
			_, err = Load(context.Background(), c.Log, c.Options)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}
