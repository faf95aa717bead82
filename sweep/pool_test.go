package sweep

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/ratesweep/ratesweep/configs"
)

// The pool hands out zeroed, aligned buffers of its classes, takes back
// only its own, reuses them, and ignores a second free of one buffer.
func TestBufferPool(t *testing.T) {
	p := newBufferPool()
	if b := p.Allocate(1000); len(b) != 1000 || p.maps != 0 {
		t.Fatalf("a small request: len %d, %d mapped; want 1000 from the Go heap", len(b), p.maps)
	}
	b := p.Allocate(100_000)
	if len(b) != 100_000 || cap(b) != 128<<10 || uintptr(unsafe.Pointer(&b[0]))%64 != 0 || p.maps != 1 {
		t.Fatalf("len %d cap %d addr %p maps %d; want 100000, 131072, 64-byte aligned, 1", len(b), cap(b), &b[0], p.maps)
	}
	for i := range b {
		b[i] = 7
	}
	// Growing within the class keeps the contents and zeroes the rest.
	g := p.Reallocate(120_000, b)
	if &g[0] != &b[0] || g[99_999] != 7 || g[100_000] != 0 || g[119_999] != 0 {
		t.Fatal("Reallocate within the class moved the buffer or left old bytes")
	}
	for i := range g {
		g[i] = 9
	}
	// Growing past it moves to the next class and frees the old buffer.
	h := p.Reallocate(200_000, g)
	if cap(h) != 256<<10 || h[119_999] != 9 || h[120_000] != 0 || p.frees != 1 {
		t.Fatalf("Reallocate to the next class: cap %d, frees %d", cap(h), p.frees)
	}
	// A freed buffer comes back zeroed, over the length asked.
	again := p.Allocate(110_000)
	if &again[0] != &g[0] || p.reuses != 1 || !bytes.Equal(again, make([]byte, 110_000)) {
		t.Fatalf("the freed buffer was not reused zeroed (reuses %d)", p.reuses)
	}
	p.Free(again)
	p.Free(again)
	if p.doubleFrees != 1 || len(p.free[p.class(110_000)]) != 1 {
		t.Fatalf("double free: counted %d, %d free; want 1, 1", p.doubleFrees, len(p.free[p.class(110_000)]))
	}
	p.Free(make([]byte, 128<<10)) // not the pool's
	if p.frees != 2 {
		t.Fatalf("a foreign buffer was taken: frees %d", p.frees)
	}
	for _, c := range []struct{ size, class int }{{1 << 15, -1}, {1<<15 + 1, 4}, {1 << 16, 4}, {1<<16 + 1, 5}, {1 << 28, 16}, {1<<28 + 1, -1}} {
		if got := p.class(c.size); got != c.class {
			t.Errorf("class(%d) = %d, want %d", c.size, got, c.class)
		}
	}
}

// Files written with the pool are byte for byte those written from the Go
// heap, with every freed buffer poisoned: arrow-go uses no buffer after it
// frees it (the pool would hand it to another column).
func TestWriterPoolFilesEqualGoHeap(t *testing.T) {
	specs := map[string]string{
		"grid": `name: pool-grid
scenario: lesson.yaml
sweep:
  - algorithm: fixed_window
    window_s: {from: 1, to: 20, step: 1}
    limit: {from: 1, to: 1500, step: 1}
  - algorithm: token_bucket
    rate: {from: 1, to: 10, step: 1}
    capacity: {from: 1, to: 1500, step: 1}
`,
		"events": `name: pool-events
seed: 3
replicates: 2
scenario:
  name: poisson
  duration_s: 600
  arrivals: poisson
  clients:
    - {name: portal, class: legit, segments: [[0, 600, 3]]}
    - {name: scraper, class: abusive, stage: none, segments: [[100, 400, 40]]}
sweep:
  - algorithm: gcra
    rate: {from: 1, to: 20, step: 1}
    capacity: {from: 1, to: 300, step: 1}
  - algorithm: nginx
    rate: [5, 10]
    burst: {from: 0, to: 400, step: 1}
`,
	}
	write := func(t *testing.T, name, spec string, mem *bufferPool) map[string][]byte {
		lesson := func(p string) (string, []byte, error) { return p, configs.Lesson, nil }
		s, err := ParseSpec([]byte(spec), lesson)
		if err != nil {
			t.Fatal(err)
		}
		props := writerProps
		if mem == nil {
			writerProps = func() *parquet.WriterProperties { return newWriterProps(goAllocator) }
		} else {
			writerProps = func() *parquet.WriterProperties { return newWriterProps(mem) }
		}
		defer func() { writerProps = props }()
		dir := filepath.Join(t.TempDir(), name)
		mustRun(t, s, Options{OutDir: dir, Workers: 2})
		files := map[string][]byte{}
		for _, sub := range []string{"points", "clients"} {
			paths, _ := filepath.Glob(filepath.Join(dir, sub, "*.parquet"))
			for _, p := range paths {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				files[sub+"/"+filepath.Base(p)] = data
			}
		}
		return files
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			want := write(t, name, spec, nil)
			pool := newBufferPool()
			pool.poison = true
			pool.minShift = poolLeastShift // these parts' buffers are small
			got := write(t, name, spec, pool)
			if len(got) != len(want) || len(want) == 0 {
				t.Fatalf("%d files, want %d", len(got), len(want))
			}
			for f, data := range want {
				if !bytes.Equal(got[f], data) {
					t.Errorf("%s differs from the file written from the Go heap", f)
				}
			}
			if pool.reuses == 0 || pool.doubleFrees != 0 {
				t.Errorf("pool: %d mapped, %d freed, %d reused, %d freed twice; want reuse and no double free",
					pool.maps, pool.frees, pool.reuses, pool.doubleFrees)
			}
			t.Logf("pool: %d mapped, %d freed, %d reused", pool.maps, pool.frees, pool.reuses)
		})
	}
}
