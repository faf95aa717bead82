package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A spilled log's partitions are the partitioned loads of the log (Load
// with Partition reads the log itself: the oracle), with rules of every
// scope, a keys list, a rate rule, costs and statuses, out-of-order and
// malformed lines, invalid UTF-8 in keys; and the spill files are compact.
func TestSpillEqualsPartitionedLoad(t *testing.T) {
	var b strings.Builder
	rng := rand.New(rand.NewPCG(5, 6))
	z := rand.NewZipf(rng, 1.3, 1, 499)
	for i := range 40000 {
		k := z.Uint64()
		s := i*3600/40000 - rng.IntN(3)
		s = max(s, 0)
		ua, path, status := "Mozilla/5.0", fmt.Sprintf("/p%d", rng.IntN(4)), 200
		if k%7 == 3 {
			ua = "Googlebot/2.1"
		}
		if rng.IntN(20) == 0 {
			status = 404
		}
		host := fmt.Sprintf("10.0.%d.%d", k/256, k%256)
		if k == 17 {
			host = "10.0.\xff.17"
		}
		if rng.IntN(500) == 0 {
			b.WriteString("garbage\n")
		}
		fmt.Fprintf(&b, "%s - - [01/Jan/2026:%02d:%02d:%02d +0000] \"GET %s HTTP/1.1\" %d %d \"-\" \"%s\"\n",
			host, s/3600, s/60%60, s%60, path, status, 100+rng.IntN(5000), ua)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "a.log")
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseTraffic([]byte("log: a.log\nformat: combined\nrules:\n" +
		"  - {name: listed, stage: code, keys: [10.0.0.3, 10.0.0.5]}\n" +
		"  - {name: bot, stage: none, user_agent: bot}\n" +
		"  - {name: miss, stage: design, scope: request, status: 404}\n" +
		"  - {name: busy, stage: code, rate: {requests: 40, window_s: 60}, path: /p1}\n" +
		"cost: {rules: [{path: /p2, cost: 10}], default: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	opt := cfg.Options
	opt.Statuses = true
	for _, n := range []int{1, 3, 8} {
		sp, err := SpillLog(context.Background(), log, opt, dir, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		var size int64
		for i := range n {
			want, err := Load(context.Background(), log, withPartition(opt, i, n))
			if err != nil {
				t.Fatal(err)
			}
			o := withPartition(opt, i, n)
			o.Spills = map[string]*Spill{log: sp}
			got, err := Load(context.Background(), log, o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%d partitions, partition %d: the spilled load differs from the partitioned load", n, i)
			}
			st, _ := os.Stat(filepath.Join(dir, SpillFile(0, i)))
			size += st.Size()
		}
		if per := float64(size) / float64(sp.total); per > 8 {
			t.Errorf("%d partitions: %.1f bytes per request spilled", n, per)
		}
		if err := sp.Remove(); err != nil {
			t.Fatal(err)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*.bin")); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	}
}

func withPartition(opt Options, i, n int) Options {
	opt.Partition = KeyPartition{i, n}
	return opt
}

// Sub-second times (ms and ns steps) spill and load back exactly.
func TestSpillSubSecond(t *testing.T) {
	var b strings.Builder
	b.WriteString("t,key\n")
	rng := rand.New(rand.NewPCG(7, 8))
	ns := int64(1767225600) * 1e9
	for range 20000 {
		switch rng.IntN(3) {
		case 0:
			ns += 1e9
		case 1:
			ns += int64(rng.IntN(5000)) * 1e6
		default:
			ns += int64(rng.IntN(5e9))
		}
		fmt.Fprintf(&b, "%d,k%d\n", ns, rng.IntN(300))
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "a.csv")
	os.WriteFile(log, []byte(b.String()), 0o644)
	cfg, err := parseTraffic([]byte("log: a.csv\nformat: csv\ncsv: {time_format: unix_ns, columns: {time: t, ip: key}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := SpillLog(context.Background(), log, cfg.Options, dir, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Remove()
	for i := range 4 {
		want, err := Load(context.Background(), log, withPartition(cfg.Options, i, 4))
		if err != nil {
			t.Fatal(err)
		}
		got, err := sp.Load(context.Background(), i)
		if err != nil {
			t.Fatal(err)
		}
		if !want.SubSecond || !reflect.DeepEqual(got, want) {
			t.Errorf("partition %d: the spilled load differs from the partitioned load (sub-second %v)", i, want.SubSecond)
		}
	}
}
