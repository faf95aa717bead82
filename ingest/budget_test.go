package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// manyMembers is a log of members compressed streams (gzip members or
// zstd frames) of perMember lines each, concatenated: the first of varied
// keys, the others of keys keys repeated, which compress far better.
func manyMembers(t testing.TB, zstdFrames bool, members, perMember, keys int) []byte {
	t.Helper()
	var out bytes.Buffer
	for m := range members {
		var b bytes.Buffer
		for i := range perMember {
			ip := fmt.Sprintf("10.0.0.%d", i%keys)
			if m == 0 {
				ip = fmt.Sprintf("10.1.%d.%d", i/250%2, i%250)
			}
			fmt.Fprintf(&b, "%s - - [01/Jul/1995:00:00:%02d -0400] \"GET / HTTP/1.0\" 200 1\n", ip, m%60)
		}
		if zstdFrames {
			zw, _ := zstd.NewWriter(&out)
			zw.Write(b.Bytes())
			zw.Close()
		} else {
			zw := gzip.NewWriter(&out)
			zw.Write(b.Bytes())
			zw.Close()
		}
	}
	return out.Bytes()
}

// The budget is checked on what is read, every gzip member and zstd frame
// counted as it is decompressed: a log of 40 members of 5,000 lines stops
// at the budget (with the lines, bytes and requests it had read), whatever
// its first member said; under a budget it fits, it loads whole; on
// standard input alike.
func TestBudgetCountsEveryMember(t *testing.T) {
	dir := t.TempDir()
	budget := Budget{Limit: 1<<20 + 50_000*16, Base: 1 << 20, PerRequest: 16, PerKey: 160, Flag: "--max-memory"}
	for _, z := range []struct {
		name string
		zstd bool
		c    Compression
	}{{"gzip", false, CompressGzip}, {"zstd", true, CompressZstd}} {
		data := manyMembers(t, z.zstd, 40, 5000, 8)
		path := filepath.Join(dir, "access.log."+z.name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(context.Background(), path, Options{Budget: budget})
		var be *BudgetError
		if !errors.As(err, &be) {
			t.Fatalf("%s: %v, want a *BudgetError", z.name, err)
		}
		if be.File != path || be.Compression != z.c || be.Lines < 30_000 || be.Lines > 60_000 || be.Bytes < be.Lines*50 ||
			be.Requests < 30_000 || be.Need <= budget.Limit || be.Size != int64(len(data)) || be.Consumed <= 0 {
			t.Errorf("%s: %+v", z.name, be)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, path+": ") || !strings.Contains(msg, "more than --max-memory") || !strings.Contains(msg, "raise --max-memory") {
			t.Errorf("%s: %s", z.name, msg)
		}
		if p := be.Projected(); p < be.Requests {
			t.Errorf("%s: projected %d requests, fewer than the %d read", z.name, p, be.Requests)
		}
		big := budget
		big.Limit = 1 << 30
		tr, err := Load(context.Background(), path, Options{Budget: big})
		if err != nil || tr.Requests() != 200_000 {
			t.Errorf("%s within budget: %v", z.name, err)
		}
		_, err = LoadStdin(context.Background(), bytes.NewReader(data), Options{Budget: budget})
		if !errors.As(err, &be) || be.File != "(stdin)" || !be.Stdin || be.Size != 0 || be.Projected() != 0 {
			t.Errorf("%s on standard input: %v", z.name, err)
		}
	}
}

// A spilled log's partitions are checked before they are loaded: their
// requests and keys were counted as they were written.
func TestBudgetSpillPartitions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log.gz")
	if err := os.WriteFile(path, manyMembers(t, false, 10, 5000, 8), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := SpillLog(context.Background(), path, Options{}, dir, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	r, k := sp.Largest(Budget{PerRequest: 16, PerKey: 160})
	if r < 25_000 || k < 4 {
		t.Errorf("largest partition: %d requests of %d keys", r, k)
	}
	tight := Budget{Limit: 1<<20 + r*8, Base: 1 << 20, PerRequest: 16, PerKey: 160, Flag: "--max-memory"}
	var be *BudgetError
	if _, err := sp.WithBudget(tight).Load(context.Background(), 0); !errors.As(err, &be) || !strings.Contains(err.Error(), "key partition 0 of 2") {
		t.Errorf("partition over budget: %v", err)
	}
	if _, err := sp.Load(context.Background(), 0); err != nil {
		t.Errorf("without a budget: %v", err)
	}
}
