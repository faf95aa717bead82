package ingest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"
)

// KeyHash is FNV-1a 64 (the standard library's hash/fnv is the oracle).
func TestKeyHashIsFNV1a64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		b := make([]byte, rng.IntN(40))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		h := fnv.New64a()
		h.Write(b)
		if got, want := KeyHash(b), h.Sum64(); got != want {
			t.Fatalf("case %d %q: %x, want %x", i, b, got, want)
		}
	}
	if KeyHash(nil) != 14695981039346656037 {
		t.Error("the empty key is not the offset basis")
	}
}

// The key partitions of a log hold every key once, each where its hash
// says, with the whole log's requests, accounting and time span.
func TestPartitionsSplitKeys(t *testing.T) {
	var b strings.Builder
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		fmt.Fprintf(&b, "10.0.%d.%d - - [01/Jan/2026:00:%02d:%02d +0000] \"GET / HTTP/1.1\" 200 1\n", rng.IntN(4), rng.IntN(50), i/60%60, i%60)
	}
	b.WriteString("garbage line\n")
	whole, err := Build(context.Background(), strings.NewReader(b.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	seen := map[string]int64{}
	for i := range n {
		p, err := Build(context.Background(), strings.NewReader(b.String()), Options{Partition: KeyPartition{i, n}})
		if err != nil {
			t.Fatal(err)
		}
		if p.StartUnix != whole.StartUnix || p.DurationS != whole.DurationS || p.Stats.Requests != whole.Stats.Requests ||
			p.Stats.Lines != whole.Stats.Lines || p.Stats.Malformed != whole.Stats.Malformed {
			t.Errorf("partition %d: span %d+%d s, %d requests, %d lines, %d malformed; whole %d+%d, %d, %d, %d", i,
				p.StartUnix, p.DurationS, p.Stats.Requests, p.Stats.Lines, p.Stats.Malformed,
				whole.StartUnix, whole.DurationS, whole.Stats.Requests, whole.Stats.Lines, whole.Stats.Malformed)
		}
		for _, k := range p.Keys {
			if KeyHash([]byte(k.Name))%n != uint64(i) {
				t.Errorf("key %s in partition %d", k.Name, i)
			}
			seen[k.Name] += k.Requests
		}
	}
	if len(seen) != len(whole.Keys) {
		t.Errorf("%d keys in the partitions, %d in the log", len(seen), len(whole.Keys))
	}
	for _, k := range whole.Keys {
		if seen[k.Name] != k.Requests {
			t.Errorf("key %s: %d requests in the partitions, %d in the log", k.Name, seen[k.Name], k.Requests)
		}
	}
}
