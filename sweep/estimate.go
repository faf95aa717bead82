package sweep

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// Parquet bytes per row for the output estimate (measured on
// configs/bench-large.yaml).
const (
	bytesPerPointRow  = 6.0
	bytesPerClientRow = 2.5
)

// Memory per item of a run, bytes, fitted to peak RSS (GNU time) with 2
// workers: configs/bench-large.yaml 154 MiB (estimate 164), bench/10m.yaml
// 200–260 MiB (estimate 333), the week of 5,000 clients 69–84 MiB (78).
const (
	memBase          = 64 << 20 // the Go runtime, Arrow and the binary
	memPerWorker     = 8 << 20  // a worker's Parquet writers and encoders
	memPerPointRow   = 900      // a part's metrics, policy and column buffers per points row
	memPerClientRow  = 160      // a part's client results and column buffers per clients row
	memPerLogRequest = 16       // the compiled log at its build's peak (ingest: 4 bytes a request of seconds and 4 of key ids built, 8 of times kept, together for an instant; 9 kept)
	memPerLogKey     = 160      // a log key's name, map entry and totals
	// memPerClient is a scenario client's cost beyond its series and rows:
	// the spec's parsed YAML, names and per-client state of the workload
	// (fitted: 20,000 and 40,000 one-segment clients peak at 128 and 204 MiB
	// with 2 workers, 3.9 KiB a client, of which 1.3 were counted before).
	memPerClient = 2600
	// streamAbove is the size of a scenario's per-second series above which
	// the runner builds them per client instead of keeping them all.
	streamAbove = 256 << 20
	// logLineBytes is the shortest plausible log line, for the request count
	// of a text log estimated from its size before reading it, unless the
	// log's first lines are shorter.
	logLineBytes = 40
	// gzipRatio bounds a compressed log's size ratio when its trailer does not
	// give the uncompressed size.
	gzipRatio = 12
)

// MemoryItem is one part of a run's memory estimate.
type MemoryItem struct {
	What  string // what it is and the input that drives it
	Bytes int64
}

// Estimate is what a run of a spec's shard costs, known before it starts.
type Estimate struct {
	Points, Rows int64 // the shard's grid points and points rows (× replicates)
	ClientRows   int64 // the shard's clients rows
	OutputBytes  int64 // Parquet bytes the shard writes (estimate)
	MemoryBytes  int64 // peak memory, bytes (estimate): the sum of Memory
	Memory       []MemoryItem
	Streamed     bool // the scenario's per-second series are built per client

	// A log replay's memory besides the log (bytes) and a request's bytes
	// in it (the compiled log, and its times spread per worker), for the
	// budget the log's read checks (logBudget).
	logBase, logPerRequest int64
}

// Driver is the largest item of the memory estimate.
func (e *Estimate) Driver() MemoryItem {
	if len(e.Memory) == 0 {
		return MemoryItem{}
	}
	return e.Memory[0]
}

// EstimateRun computes the cost of running shard of spec with workers
// goroutines under a memory budget of maxMemory bytes (0: none), which
// decides whether a long scenario is streamed.
func EstimateRun(spec *Spec, shard Shard, workers int, maxMemory int64) Estimate {
	return estimateRun(spec, shard, 1, workers, maxMemory)
}

// estimateRun is EstimateRun of one of keyShards key shards (the log's
// items are per shard).
func estimateRun(spec *Spec, shard Shard, keyShards, workers int, maxMemory int64) Estimate {
	if shard.Count == 0 {
		shard = Shard{0, 1}
	}
	grid := NewGrid(spec)
	parts := ShardParts(grid, shard)
	var e Estimate
	partPoints := int64(0) // the largest part's points
	for _, p := range parts {
		e.Points += p.Points()
		partPoints = max(partPoints, p.Points())
	}
	reps := int64(spec.Replicates)
	clients := clientRowsPerPoint(spec)
	e.Rows = e.Points * reps
	e.ClientRows = e.Rows * clients
	e.OutputBytes = int64(float64(e.Rows)*bytesPerPointRow + float64(e.ClientRows)*bytesPerClientRow)

	w := int64(max(1, min(workers, len(parts))))
	add := func(bytes int64, format string, args ...any) {
		if bytes > 0 {
			e.Memory = append(e.Memory, MemoryItem{What: fmt.Sprintf(format, args...), Bytes: bytes})
		}
	}
	add(memBase+w*memPerWorker, "the runtime and Parquet writers of %s", workersText(w))
	add(sat(float64(w)*float64(partPoints*reps)*float64(memPerPointRow+clients*memPerClientRow)),
		"part buffers: %s × %d points × %d replicates (× %d clients rows)", workersText(w), partPoints, reps, clients)
	if spec.Traffic != nil {
		for _, m := range e.Memory {
			e.logBase = satAdd(e.logBase, m.Bytes)
		}
		e.logPerRequest = memPerLogRequest
		if spec.Traffic.Spread != ingest.SpreadNone {
			e.logPerRequest += w * 8
		}
		estimateLog(&e, spec.Traffic, w, keyShards, add)
	} else {
		estimateScenario(&e, spec, w, maxMemory, add)
	}
	slices.SortStableFunc(e.Memory, func(a, b MemoryItem) int { return cmp.Compare(b.Bytes, a.Bytes) })
	for _, m := range e.Memory {
		e.MemoryBytes = satAdd(e.MemoryBytes, m.Bytes)
	}
	return e
}

// clientRowsPerPoint is one clients row per scenario client, or for a log at
// most top_keys keys plus four "other keys" rows.
func clientRowsPerPoint(spec *Spec) int64 {
	if spec.Traffic != nil {
		return int64(spec.Traffic.TopKeys + 4)
	}
	return int64(len(spec.Scenario.Clients))
}

// ShouldStream reports whether a run builds the scenario's per-second series
// per client (model.NewStreamedWorkload) rather than keeping them all.
func ShouldStream(sc *model.Scenario, maxMemory int64) bool {
	b := model.SeriesBytes(sc)
	return b > streamAbove || (maxMemory > 0 && b > maxMemory/8)
}

func estimateScenario(e *Estimate, spec *Spec, w, maxMemory int64, add func(int64, string, ...any)) {
	sc := spec.Scenario
	c, d := int64(len(sc.Clients)), int64(sc.DurationS)
	fluid := sc.Arrivals.Process == model.Fluid
	// Requests of the workload, and the client sending most.
	var reqs, top float64
	topName := ""
	for i := range sc.Clients {
		var n float64
		for _, g := range sc.Clients[i].Segments {
			r := g.Rate
			if fluid {
				r = float64(int32(r))
			}
			n += float64(g.T1-g.T0) * r
		}
		reqs += n
		if n > top {
			top, topName = n, sc.Clients[i].Name
		}
	}
	drive := fmt.Sprintf("%.0f requests of scenario %q (%q sends %.0f)", reqs, sc.Name, topName, top)
	add(c*memPerClient, "scenario clients: %d clients of scenario %q (the parsed spec, names, per-client state)", c, sc.Name)
	e.Streamed = ShouldStream(sc, maxMemory)
	if e.Streamed {
		add(w*2*d*4, "per-second buffers: %s × %d s (the scenario is streamed client by client)", workersText(w), d)
	} else {
		add(c*d*4, "per-second series: %d clients × %d s of scenario %q", c, d, sc.Name)
		add(w*2*c*d*4, "closed-form tables: %s × %d clients × %d s", workersText(w), c, d)
		add(w*d*4, "per-second buffers: %s × %d s", workersText(w), d)
	}
	if !fluid {
		add(w*sat(reqs*8), "request times (%s arrivals): %s × %s", sc.Arrivals.Process, workersText(w), drive)
		add(w*maxBatch*c*16, "batched outcomes (many limits in one pass): %s × %d points × %d clients", workersText(w), maxBatch, c)
	}
	if sc.Keyed() || specDistributed(spec) {
		per := int64(unsafe.Sizeof(keyedReqSize{})) + 8
		add(w*sat(reqs*float64(per)), "merged request stream (keys, nodes or shared state): %s × %s", workersText(w), drive)
	}
}

// keyedReqSize mirrors model's keyedReq (a time and three ids).
type keyedReqSize struct {
	t                   int64
	client, addr, accnt int32
}

// specDistributed reports whether any entry has a policy with a key other
// than the client, several nodes or shared state (the keyed simulation).
func specDistributed(spec *Spec) bool {
	for _, en := range spec.Entries {
		for _, ax := range en.Axes {
			for _, v := range ax.Values {
				p := en.newPolicy()
				p.Set(ax.Param, v)
				if p.Distributed() {
					return true
				}
			}
		}
	}
	return false
}

func estimateLog(e *Estimate, cfg *ingest.Config, w int64, keyShards int, add func(int64, string, ...any)) {
	reqs, how := logRequests(cfg.Log)
	keys := min(reqs, 1e7)
	if sp := cfg.Options.Spills[cfg.Log]; sp != nil && sp.Parts() == keyShards {
		// A pass of a spilled run: its partition's requests and keys
		// were counted as they were written.
		r, k := sp.Largest(ingest.Budget{PerRequest: memPerLogRequest, PerKey: memPerLogKey})
		reqs, keys = float64(r), float64(k)
		how = fmt.Sprintf("%d requests of %d keys in the largest of %d key partitions of %s", r, k, keyShards, cfg.Log)
	} else if keyShards > 1 {
		reqs, how = keyShareOf(reqs, how, keyShards)
		keys = min(reqs, 1e7)
	}
	add(sat(reqs*memPerLogRequest), "compiled log: %s", how)
	if cfg.Spread != ingest.SpreadNone {
		// Workers read the log's own times unless they are spread (a log
		// with sub-second times is not, but that is known only once read).
		add(w*sat(reqs*8), "request times spread in their second: %s × %s", workersText(w), how)
	}
	add(sat(keys*memPerLogKey), "log keys (at most one per request): %s", how)
}

// EstimateLog is the memory of reading the log of cfg whole, as inspect
// does: the runtime, the compiled log and its key table, bounded from the
// log's size before it is read.
func EstimateLog(cfg *ingest.Config) Estimate {
	var e Estimate
	add := func(bytes int64, format string, args ...any) {
		if bytes > 0 {
			e.Memory = append(e.Memory, MemoryItem{What: fmt.Sprintf(format, args...), Bytes: bytes})
		}
	}
	add(memBase, "the runtime")
	estimateLog(&e, cfg, 1, 1, add)
	slices.SortStableFunc(e.Memory, func(a, b MemoryItem) int { return cmp.Compare(b.Bytes, a.Bytes) })
	for _, m := range e.Memory {
		e.MemoryBytes = satAdd(e.MemoryBytes, m.Bytes)
	}
	return e
}

// logRequests bounds a log's requests before reading it: a Parquet file's
// rows, or its (uncompressed) size over the shortest plausible line, or
// over the mean line of its start when that is shorter (sampleLineBytes).
func logRequests(path string) (float64, string) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return 0, "unknown size"
	}
	if r, err := file.OpenParquetFile(path, false); err == nil {
		n := r.NumRows()
		r.Close()
		return float64(n), fmt.Sprintf("%d rows of %s", n, path)
	}
	size := st.Size()
	gz, isGz := gzipSize(path, size)
	if !isGz {
		gz, isGz = compressedSize(path, size)
	}
	// Lines shorter than the shortest plausible (a CSV of times and
	// addresses) are measured on the log's first lines.
	line, sampled := float64(logLineBytes), ""
	if mean, whole, ok := sampleLineBytes(path); ok {
		if !whole {
			mean /= lineSampleMargin
		}
		if mean < line {
			line, sampled = mean, ", sampled"
		}
	}
	if isGz {
		return float64(gz) / line, fmt.Sprintf("up to %.0f requests of %s (%s uncompressed, %.0f bytes a line or more%s)", float64(gz)/line, path, yamlx.FormatBytes(gz), line, sampled)
	}
	return float64(size) / line, fmt.Sprintf("up to %.0f requests of %s (%s, %.0f bytes a line or more%s)", float64(size)/line, path, yamlx.FormatBytes(size), line, sampled)
}

// gzipSize bounds a gzip file's uncompressed size. The trailer's ISIZE
// is only the last member's size (mod 2³²): a file of many members (cat
// a.gz b.gz, pigz, log rotation) says little there. So the file is also
// sampled: its first members are inflated up to gzipSampleIn compressed
// or gzipSampleOut uncompressed bytes, and the ratio seen, with a margin,
// is taken for the whole file. The largest of the three bounds (ISIZE,
// sampled ratio, gzipRatio × size) is the estimate.
func gzipSize(path string, size int64) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return gzipSizeSampled(f, size, gzipSampleIn, gzipSampleOut)
}

// gzipSizeSampled is gzipSize of the open file f of size bytes, sampling at
// most maxIn compressed and maxOut uncompressed bytes.
func gzipSizeSampled(f *os.File, size, maxIn, maxOut int64) (int64, bool) {
	var head [2]byte
	if _, err := f.ReadAt(head[:], 0); err != nil || head != [2]byte{0x1f, 0x8b} {
		return 0, false
	}
	out := int64(gzipRatio) * size
	var tail [4]byte
	if size >= 18 {
		if _, err := f.ReadAt(tail[:], size-4); err == nil {
			isize := int64(tail[0]) | int64(tail[1])<<8 | int64(tail[2])<<16 | int64(tail[3])<<24
			if isize >= size && size < 1<<30 {
				out = isize
			}
		}
	}
	if in, inflated, whole := sampleGzip(f, maxIn, maxOut); whole {
		return inflated, true // read to its end: exact
	} else if in > 0 {
		out = max(out, int64(float64(inflated)/float64(in)*float64(size)*gzipSampleMargin))
	}
	return out, true
}

// The gzip sample: at most gzipSampleIn compressed and gzipSampleOut
// uncompressed bytes, its ratio raised by gzipSampleMargin for the rest.
const (
	gzipSampleIn     = 4 << 20
	gzipSampleOut    = 64 << 20
	gzipSampleMargin = 1.25
)

// compressedSize bounds the uncompressed size of a zstd, bzip2 or xz log
// (false for any other file): its start is decompressed, up to
// gzipSampleIn compressed or gzipSampleOut uncompressed bytes, and the
// ratio seen, raised by gzipSampleMargin, is taken for the whole file, or
// gzipRatio × its size when that is larger. A file decompressed to its end
// gives its exact size.
func compressedSize(path string, size int64) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	cr := &countReader{r: bufio.NewReader(f)}
	zr, c, closeZ, err := ingest.Decompress(bufio.NewReaderSize(cr, 16))
	if err != nil || c == ingest.CompressNone || c == ingest.CompressGzip {
		return 0, false
	}
	defer closeZ()
	out := int64(gzipRatio) * size
	buf := make([]byte, 64<<10)
	var n int64
	for cr.n < gzipSampleIn && n < gzipSampleOut {
		k, err := zr.Read(buf)
		n += int64(k)
		if errors.Is(err, io.EOF) {
			return n, true
		}
		if err != nil {
			return out, true // damaged: the run itself says where
		}
	}
	if cr.n > 0 {
		out = max(out, int64(float64(n)/float64(cr.n)*float64(size)*gzipSampleMargin))
	}
	return out, true
}

// sampleGzip inflates the start of a gzip stream (every member in turn)
// and returns the compressed bytes consumed, the bytes they inflated to,
// and whether that was the whole stream.
func sampleGzip(f io.Reader, maxIn, maxOut int64) (in, out int64, whole bool) {
	cr := &countReader{r: bufio.NewReader(f)}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return 0, 0, false
	}
	buf := make([]byte, 16<<10)
	for cr.n < maxIn && out < maxOut {
		n, err := zr.Read(buf)
		out += int64(n)
		if errors.Is(err, io.EOF) {
			return cr.n, out, true
		}
		if err != nil {
			return 0, 0, false
		}
	}
	return cr.n, out, false
}

// countReader counts the bytes read through it; it is an io.ByteReader, so
// the inflater reads no more than it consumes.
type countReader struct {
	r *bufio.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// CheckLimits refuses a run whose estimate exceeds maxRows points rows,
// maxOutput Parquet bytes or maxMemory bytes (0: no limit), with the figure
// and what drives it.
func (e *Estimate) CheckLimits(spec *Spec, maxRows, maxOutput, maxMemory int64, noOutput bool) error {
	if rows := spec.Rows(); maxRows > 0 && rows > maxRows {
		return inputErrorf("the grid has %d points × %d replicates = %d points rows, more than --max-points %d; raise --max-points to run it",
			spec.Points(), spec.Replicates, rows, maxRows)
	}
	if maxOutput > 0 && !noOutput && e.OutputBytes > maxOutput {
		return inputErrorf("the run would write about %s of Parquet (%d points rows, %d clients rows), more than --max-output %s; raise --max-output or shrink the grid or replicates",
			yamlx.FormatBytes(e.OutputBytes), e.Rows, e.ClientRows, yamlx.FormatBytes(maxOutput))
	}
	if maxMemory > 0 && e.MemoryBytes > maxMemory {
		d := e.Driver()
		return inputErrorf("the run needs about %s of memory, more than --max-memory %s; most of it (%s) is %s",
			yamlx.FormatBytes(e.MemoryBytes), yamlx.FormatBytes(maxMemory), yamlx.FormatBytes(d.Bytes), d.What)
	}
	return nil
}

// FormatMemory lists the memory estimate, one item a line, largest first.
func (e *Estimate) FormatMemory(indent string) string {
	var b strings.Builder
	for _, m := range e.Memory {
		fmt.Fprintf(&b, "%s%10s  %s\n", indent, yamlx.FormatBytes(m.Bytes), m.What)
	}
	return b.String()
}

func workersText(w int64) string {
	if w == 1 {
		return "1 worker"
	}
	return fmt.Sprintf("%d workers", w)
}

func sat(f float64) int64 {
	if f >= 1<<62 {
		return 1 << 62
	}
	return int64(f)
}

func satAdd(a, b int64) int64 {
	if a > 1<<62-b {
		return 1 << 62
	}
	return a + b
}
