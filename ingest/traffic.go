package ingest

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/ratesweep/ratesweep/internal/hugemem"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// secondNs is one second in nanoseconds.
const secondNs = int64(1_000_000_000)

// maxUnixNs is the last second whose nanoseconds fit in an int64 (2262).
const maxUnixS = (1<<63 - 1) / secondNs

// Options say how a log becomes Traffic. The zero value keys by ip with no
// rules.
type Options struct {
	Reader    ReaderOptions
	Key       []Field // the rate-limit key: fields joined by a space; default [ip]
	PathDepth int     // path segments kept by path_prefix; default 1
	Rules     []Rule
	// Set are the files of a log read as one (log: {files: [...], as: one}),
	// oldest first: Load of Set[0] reads them all.
	Set []string
	// Cost says what each request costs (traffic cost:), or nil: one unit.
	Cost *CostConfig
	// Statuses keeps each request's response status (for count_if).
	Statuses bool
	// MaxBackS is how far a line's time may go back behind the latest time
	// before it, seconds (logs written at response time by several workers
	// are a little out of order; such requests are sorted). A line further
	// back is malformed. 0 = DefaultMaxBackS; -1 = no bound.
	MaxBackS int64
	// Partition keeps only the keys of one key shard (partition.go); the
	// others' requests count in the accounting and the time span only.
	Partition KeyPartition
	// Spills are logs already split into key partitions on disk, by path
	// (SpillLog): Load of such a log with a Partition of the spill's count
	// reads only that partition's file.
	Spills map[string]*Spill
	// ProfileWindowS, when > 0, has the build count requests per second
	// as it reads, for Profile with this window (seconds): Profile then
	// needs no sort of every request's time.
	ProfileWindowS int
	// Budget bounds the memory of the compiled log as it is read (budget.go).
	Budget Budget

	spill *spillWriter // set by SpillLog
	wide  bool         // keep times in ns from the start (tests compare the layouts)
	large bool         // place whole-second times as for a large log (tests)
}

// DefaultMaxBackS is the default tolerance for times going backwards, s.
const DefaultMaxBackS = 300

// Key is one rate-limit key of a log and its aggregates.
type Key struct {
	Name     string // the key's fields joined by a space (valid UTF-8)
	Requests int64
	ByStage  [4]int64    // requests per label, indexed by model.Stage (NoStage = legit)
	Class    model.Class // the label of most of its requests (abusive on a tie)
	Stage    model.Stage // with Class
	Rule     string      // the rule that labelled most of its abusive requests, if any
	Overlay  string      // the overlay client whose own key it is (WithOverlay), or ""
}

// Mixed reports whether the key's requests carry more than one label.
func (k *Key) Mixed() bool {
	n := 0
	for _, c := range k.ByStage {
		if c > 0 {
			n++
		}
	}
	return n > 1
}

// Traffic is a log compiled for simulation: every request's key, time and
// label, grouped by key with times sorted. Keys are ordered by requests
// (descending), then name. It is immutable once built and safe to share.
type Traffic struct {
	Source    string // the log file
	Format    Format
	StartUnix int64 // Unix seconds (UTC) of the first request's second: time 0
	DurationS int   // seconds from time 0 to the end of the last request's second
	SubSecond bool  // the log had sub-second times; Realise does not spread them
	Keys      []Key
	Stats     Stats
	// OverlayRequests is how many requests an overlay added (WithOverlay).
	OverlayRequests int64

	offsets []int64       // key i's requests are [offsets[i], offsets[i+1])
	times   []int64       // ns since StartUnix; whole seconds unless SubSecond
	labels  []model.Stage // per request, NoStage = legit
	resp    []uint32      // per request: cost and status (cost.go), or nil
	seconds *secondStats  // whole-log per-second figures counted while reading, or nil
}

// Stats describe the reading of a log.
type Stats struct {
	Lines     int64 // lines read, header and blank lines included
	Requests  int64
	Malformed int64
	Reasons   map[string]int64 // malformed lines by reason (values in the message elided)
	Filtered  int64            // lines that are not requests by design: headers, # directives
	Blank     int64            // empty lines
	Continued int64            // lines that continue a CSV record (a quoted field with newlines)
	Samples   []LineError      // the first malformed lines
	// FieldsChanges counts W3C #Fields: headers that differ from the first
	// (the new columns apply to the lines after each).
	FieldsChanges int
	// MissingFields counts, per configured JSON field path, the requests
	// without it.
	MissingFields map[string]int64
	InvalidUTF8   int64 // accepted lines that are not valid UTF-8
	NULPrefixed   int64 // lines that started with NUL bytes (dropped before parsing)
	Forwarded     int64 // requests whose line logs an X-Forwarded-For address
	OutOfOrder    int64 // requests earlier than one before them (sorted anyway)
	MaxBackS      int64 // the largest step back in time, s
	FirstBack     int64 // line of the first out-of-order request
	Gzipped       bool
	// Compression is the log's compression (gzip, zstd, bzip2, xz; none
	// when plain).
	Compression Compression
	// LimitReqStatus counts the requests by the nginx $limit_req_status
	// their lines log (Record.LimitReqStatus); nil when no line logs one.
	LimitReqStatus map[string]int64
}

// Open opens a log file for NewReader, with errors that name it.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &yamlx.Error{File: path, Msg: plainErr(err)}
	}
	if st.IsDir() {
		return nil, &yamlx.Error{File: path, Msg: "is a directory, expected a log file"}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &yamlx.Error{File: path, Msg: plainErr(err)}
	}
	return f, nil
}

func plainErr(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// Stdin is the log name that reads standard input.
const Stdin = "-"

// Load reads and compiles the log at path ("-": standard input). Errors
// are *yamlx.Error naming the file (and line where there is one).
func Load(ctx context.Context, path string, opt Options) (*Traffic, error) {
	if sp := opt.Spills[path]; sp != nil && opt.spill == nil && opt.Partition.Count == sp.parts {
		return sp.Load(ctx, opt.Partition.Index)
	}
	if path == Stdin {
		return LoadStdin(ctx, os.Stdin, opt)
	}
	if len(opt.Set) > 1 && path == opt.Set[0] {
		return LoadSet(ctx, opt.Set, opt)
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines int64
	if st, err := f.Stat(); err == nil && st.Size() > countLinesAbove && opt.spill == nil {
		// A large log: size the columns once, at their final size (no
		// growth copies: MemoryPerRequest), from an estimate of its lines
		// (estimateLines), or where there is none (a Parquet file, a gzip
		// file of several members) from its lines counted first. A key
		// shard counts them: its columns are sized for an average shard,
		// and from an estimate's margin a shard lighter than that held
		// its whole capacity resident (a month-long log: 2.1 GB against
		// 1.4 GB counted, for a tenth less CPU).
		if !opt.Partition.All() {
			lines = 0
		} else {
			lines = estimateLines(f, st.Size())
		}
		if lines == 0 {
			if lines, err = countLines(f); err != nil {
				return nil, yamlx.InFile(err, path)
			}
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, &yamlx.Error{File: path, Msg: err.Error()}
		}
	}
	t, err := buildN(ctx, f, opt, lines)
	if err != nil {
		var be *BudgetError
		if errors.As(err, &be) {
			be.File = path
			if st, serr := f.Stat(); serr == nil && st.Mode().IsRegular() && be.Bytes > 0 { // a text log, read in order
				be.Size = st.Size()
				be.Consumed, _ = f.Seek(0, io.SeekCurrent)
			}
			return nil, be
		}
		return nil, yamlx.InFile(err, path)
	}
	t.Source = path
	return t, nil
}

// LoadStdin reads and compiles a log streamed on r, the standard input
// (plain or compressed; its Source is "-").
func LoadStdin(ctx context.Context, r io.Reader, opt Options) (*Traffic, error) {
	t, err := Build(ctx, r, opt)
	if err != nil {
		var be *BudgetError
		if errors.As(err, &be) {
			be.File, be.Stdin = "(stdin)", true
			return nil, be
		}
		return nil, yamlx.InFile(err, "(stdin)")
	}
	t.Source = Stdin
	return t, nil
}

// builder accumulates requests while a log is read.
type builder struct {
	opt   Options
	index keyIndex
	// the key interned last: its shortKey and 1 + its index (0: none)
	lastShort shortKey
	lastKey   int32
	names     []string
	keyBits   []uint32 // per key: bit i set when rule i's Keys lists it
	keyPrec   []uint8  // per key: 1 + first key-scope rule that marked it, 0 none
	// A request's time: in secs while every time is a whole second
	// within 2³² s of secBase (half the memory, and finish places them
	// by key in one pass), else in times.
	secs     []uint32 // seconds since secBase
	secBase  int64    // Unix seconds
	times    []int64  // Unix ns, once wide (before: empty, the kept column's room)
	wide     bool
	keys     []int32
	reqPrec  []uint8 // per request: 1 + first request-scope rule (0 = label column), 255 none
	reqStage []model.Stage
	rateBits []uint16 // per request: bit j set when rate rule j's other conditions hold
	rateRule []int    // rule index of rate rule j
	resp     []uint32 // per request: cost and status (cost.go), when asked for
	match    []*matcher
	scratch  []byte
	raw      []string // per key: its bytes as logged
	subSec   bool
	maxT     int64
	stats    Stats
	// Requests of other key shards (Options.Partition) and their times.
	others             int64
	otherMin, otherMax int64
	// spill, when set, takes every accepted request instead (spill.go).
	spill *spillWriter
	// sec counts requests per second for Profile (Options.ProfileWindowS).
	sec *secondStream
}

const noPrec = 255

// MaxRules bounds the rules of one log (rule precedence is stored in a byte).
const MaxRules = 200

// MaxRateRules bounds rules with a rate condition.
const MaxRateRules = 16

// Build reads a log from r and compiles it. Malformed lines are counted in
// Stats (an error with ReaderOptions.Strict); a log without a valid request
// is an error.
func Build(ctx context.Context, r io.Reader, opt Options) (*Traffic, error) {
	return buildN(ctx, r, opt, 0)
}

// countLinesAbove is the log file size above which Load counts lines first.
const countLinesAbove = 4 << 20

// countLines counts the newlines of a log (decompressed if gzip), or a
// Parquet file's rows (from its footer).
func countLines(f *os.File) (int64, error) {
	var magic [4]byte
	if n, _ := io.ReadFull(f, magic[:]); n == 4 && string(magic[:]) == "PAR1" {
		return parquetRows(f), nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	r, c, closeZ, err := decompress(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		return 0, err
	}
	defer closeZ()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n + 1, nil
		}
		if err != nil {
			if c == CompressNone {
				return 0, err
			}
			return 0, fmt.Errorf("%s: %v", c, err)
		}
	}
}

// estimateLines estimates the lines of a plain log of size bytes from
// the lines in 16 samples of 64 KB spread over it, with a margin of a
// tenth (a compressed log: estimateCompressedLines), or returns 0 when f
// is Parquet or the samples are too few. Capacity beyond the lines is
// never touched, so it costs address space, not memory; a log whose later
// lines are much shorter than its samples grows its columns once.
func estimateLines(f *os.File, size int64) int64 {
	const samples, chunk = 16, 64 << 10
	var head [6]byte
	if n, _ := f.ReadAt(head[:], 0); n < len(head) || string(head[:4]) == "PAR1" {
		return 0
	}
	if c := sniffCompression(head[:]); c != CompressNone {
		return estimateCompressedLines(f, size, c)
	}
	buf := make([]byte, chunk)
	var bytesRead, newlines int64
	for i := range int64(samples) {
		n, err := f.ReadAt(buf, (size-chunk)*i/(samples-1))
		if err != nil && err != io.EOF {
			return 0
		}
		bytesRead += int64(n)
		newlines += int64(bytes.Count(buf[:n], []byte{'\n'}))
	}
	if newlines < 100 {
		return 0
	}
	return size*newlines/bytesRead*11/10 + 4096
}

// estimateCompressedLines estimates the lines of a compressed log of size
// bytes from its first 8 MB decompressed: their lines, and the
// uncompressed size their compression ratio predicts, with a margin of a
// fifth. A gzip log's trailer gives its uncompressed size modulo 2³²
// (ISIZE): the multiple of 2³² nearest the prediction makes it exact, with
// a margin of a tenth, unless it is far from the prediction (several
// members: its lines are counted instead, 0). A log shorter than the sample
// has its lines counted exactly.
func estimateCompressedLines(f *os.File, size int64, c Compression) int64 {
	const sample = 8 << 20
	in := &countingReader{r: io.NewSectionReader(f, 0, size)}
	zr, _, closeZ, err := decompress(bufio.NewReaderSize(in, 4096))
	if err != nil {
		return 0
	}
	defer closeZ()
	buf := make([]byte, 64<<10)
	var n, newlines int64
	for n < sample {
		k, err := zr.Read(buf[:min(int64(len(buf)), sample-n)])
		n += int64(k)
		newlines += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return newlines + 1
		}
		if err != nil {
			return 0
		}
	}
	if newlines < 100 {
		return 0
	}
	expected := float64(size) * float64(n) / float64(in.n)
	if c != CompressGzip {
		return int64(expected)*newlines/n*6/5 + 4096
	}
	var tail [4]byte
	if k, _ := f.ReadAt(tail[:], size-4); k < 4 {
		return 0
	}
	isize := int64(binary.LittleEndian.Uint32(tail[:]))
	const wrap = 1 << 32
	total := isize + int64(math.Round((expected-float64(isize))/wrap))*wrap
	if total < n || float64(total) < expected*0.7 || float64(total) > expected*1.4 {
		return 0 // the trailer is not this stream's size
	}
	return total*newlines/n*11/10 + 4096
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// buildN is Build with the expected number of lines (0: unknown), the
// capacity of the request columns.
func buildN(ctx context.Context, r io.Reader, opt Options, lines int64) (*Traffic, error) {
	if len(opt.Key) == 0 {
		opt.Key = []Field{FieldIP}
	}
	if opt.PathDepth <= 0 {
		opt.PathDepth = 1
	}
	if opt.MaxBackS == 0 {
		opt.MaxBackS = DefaultMaxBackS
	}
	if len(opt.Rules) > MaxRules {
		return nil, fmt.Errorf("at most %d rules, got %d", MaxRules, len(opt.Rules))
	}
	if p := opt.Partition; !p.All() && lines > 0 {
		lines = lines/int64(p.Count) + lines/int64(4*p.Count) + 4096 // its share, and room for unevenness (append grows beyond)
	}
	if bu := &opt.Budget; bu.Limit > 0 && lines > 0 {
		lines = min(lines, bu.Requests(0)+budgetEvery) // no room the budget stops short of (address space under ulimit -v)
	}
	b, err := newBuilder(opt, lines)
	if err != nil {
		return nil, err
	}
	defer b.release()
	b.spill = opt.spill
	opt.Reader.key = opt.Key
	rd, err := newSource(r, opt.Reader)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var refused int64 // records read but refused (time, label, key)
	check := opt.Budget.Limit > 0
	next := int64(budgetEvery) // accepted requests at the next budget check
	for rd.Scan() {
		if err := b.add(rd.Record()); err != nil {
			refused++
			if !rd.reject(err.Error()) {
				break
			}
		}
		if b.accepted()&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if check && b.accepted() >= next {
			next = b.accepted() + budgetEvery
			if err := b.checkBudget(rd); err != nil {
				return nil, err
			}
		}
	}
	rd.stats(&b.stats)
	if err := rd.Err(); err != nil {
		var le *LineError
		if errorsAs(err, &le) {
			return nil, &yamlx.Error{Line: int(le.Line), Msg: le.Msg + ": " + le.Excerpt + " (--strict)"}
		}
		return nil, err
	}
	if err := checkPaths(&b.stats, int64(b.n())+b.others+refused, rd.Format(), opt.Key); err != nil {
		return nil, err
	}
	if b.spill != nil && b.spill.total > 0 {
		if err := b.spill.finish(b, rd.Format()); err != nil {
			return nil, err
		}
		return &Traffic{}, nil // Spill.Load compiles each partition
	}
	if b.n() == 0 && b.others > 0 { // a key shard without keys
		t := b.emptyTraffic()
		t.Format = rd.Format()
		return t, nil
	}
	if b.n() == 0 {
		msg := "no requests in the log"
		if b.stats.Malformed > 0 {
			s := b.stats.Samples[0]
			msg = fmt.Sprintf("no valid requests: %d malformed lines (first at line %d: %s: %s)", b.stats.Malformed, s.Line, s.Msg, s.Excerpt)
		}
		return nil, &yamlx.Error{Msg: msg}
	}
	t := b.finish()
	t.Format = rd.Format()
	return t, nil
}

// newBuilder returns a builder for opt (defaults set) whose columns have
// room for lines requests.
func newBuilder(opt Options, lines int64) (*builder, error) {
	b := &builder{opt: opt, maxT: -1 << 63, otherMin: 1<<63 - 1, otherMax: -1 << 63, wide: opt.wide}
	if lines > 0 && lines < 1<<31 {
		// Times alone: the times column the Traffic keeps is made now,
		// while the heap is small (made at the end, its size would start
		// a collection in the middle of the work); it is address space
		// until written. With other columns, or for a large log, it is
		// made at the end, once the key ids are gone.
		if b.wide || !opt.otherColumns() && lines <= placeMax {
			b.times = hugemem.Make[int64](0, int(lines))
		}
		if !b.wide {
			b.secs = hugemem.Alloc[uint32](0, int(lines))
		}
		b.keys = hugemem.Alloc[int32](0, int(lines))
	}
	for i := range opt.Rules {
		if err := opt.Rules[i].Validate(); err != nil {
			return nil, err
		}
		if opt.Rules[i].Rate != nil {
			b.rateRule = append(b.rateRule, i)
		}
		b.match = append(b.match, newMatcher(&opt.Rules[i]))
	}
	if len(b.rateRule) > MaxRateRules {
		return nil, fmt.Errorf("at most %d rules with a rate condition, got %d", MaxRateRules, len(b.rateRule))
	}
	if opt.ProfileWindowS > 0 && opt.MaxBackS >= 0 && opt.MaxBackS <= 1<<16 && opt.spill == nil {
		b.sec = newSecondStream(opt.MaxBackS, int64(opt.ProfileWindowS))
	}
	return b, nil
}

// accepted is the number of requests accepted so far (kept or spilled).
func (b *builder) accepted() int64 {
	if b.spill != nil {
		return b.spill.total
	}
	return int64(b.n())
}

// n is the number of requests in the columns.
func (b *builder) n() int { return len(b.keys) }

// widen moves the times from secs to times (Unix ns), for a time secs
// cannot hold.
func (b *builder) widen() {
	if cap(b.times) < len(b.secs) {
		b.times = hugemem.Make[int64](0, max(cap(b.secs), cap(b.keys)))
	}
	b.times = b.times[:len(b.secs)]
	for i, s := range b.secs {
		b.times[i] = (b.secBase + int64(s)) * secondNs
	}
	hugemem.Free(b.secs)
	b.secs, b.wide = nil, true
}

// grow doubles the room of the columns held outside the Go heap (keys and
// secs: hugemem.Alloc), so that append never moves them into it.
func (b *builder) grow() {
	c := max(2*cap(b.keys), 4096)
	keys := hugemem.Alloc[int32](len(b.keys), c)
	copy(keys, b.keys)
	hugemem.Free(b.keys)
	b.keys = keys
	if !b.wide {
		secs := hugemem.Alloc[uint32](len(b.secs), c)
		copy(secs, b.secs)
		hugemem.Free(b.secs)
		b.secs = secs
	}
}

// release frees the columns held outside the Go heap; the builder holds
// no request after it.
func (b *builder) release() {
	hugemem.Free(b.keys)
	hugemem.Free(b.secs)
	b.keys, b.secs = nil, nil
}

// fieldColumn is the record field (column or path name) a key field reads.
var fieldColumn = map[Field]string{FieldIP: "ip", FieldUser: "user", FieldMethod: "method", FieldPath: "path", FieldPathPrefix: "path",
	FieldStatus: "status", FieldUserAgent: "user_agent", FieldReferer: "referer"}

// checkPaths fails when a JSON field path matched no request: any
// configured path of a generic jsonl log, or a key field of a preset (a
// preset's other fields may be absent from a deployment's logs).
func checkPaths(s *Stats, requests int64, f Format, key []Field) error {
	if requests == 0 {
		return nil
	}
	for name, n := range s.MissingFields {
		if n < requests {
			continue
		}
		field, _, _ := strings.Cut(name, " ")
		used := f == FormatJSONL
		for _, k := range key {
			used = used || fieldColumn[k] == field
		}
		if used {
			return fmt.Errorf("the %s field path %s is in none of the %d requests (check the path against a line of the log)", field, strings.TrimSuffix(strings.TrimPrefix(name, field+" ("), ")"), requests)
		}
	}
	return nil
}

// add records one request.
func (b *builder) add(rec *Record) error {
	if rec.Time < 0 || rec.Time > maxUnixS-1 {
		return fmt.Errorf("time %d is outside 1970..2262", rec.Time)
	}
	rp, st := uint8(noPrec), model.NoStage
	if rec.Label != nil {
		s, ok := labelColumnStage(rec.Label)
		if !ok {
			return fmt.Errorf("label %q is not legit, design, code or none", excerptString(rec.Label))
		}
		if s != model.NoStage {
			rp, st = 0, s
		}
	}
	if err := b.checkKey(rec); err != nil {
		return err
	}
	resp, err := b.opt.respOf(rec)
	if err != nil {
		return err
	}
	ns := rec.Time*secondNs + rec.TimeNs
	if tol := b.opt.MaxBackS; tol >= 0 && b.maxT-ns > tol*secondNs && (b.n() > 0 || b.others > 0) && !rec.Started {
		return fmt.Errorf("time goes back %d s behind an earlier line, more than max_backwards_s %d", (b.maxT-ns)/secondNs, tol)
	}
	// Past here the request is accepted: nothing may fail.
	if rec.Forwarded != nil {
		b.stats.Forwarded++
	}
	if rec.Trailer != nil {
		if s := rec.LimitReqStatus(); s != "" {
			if b.stats.LimitReqStatus == nil {
				b.stats.LimitReqStatus = map[string]int64{}
			}
			b.stats.LimitReqStatus[s]++
		}
	}
	if rec.TimeNs != 0 {
		b.subSec = true
	}
	if ns < b.maxT {
		if b.stats.OutOfOrder == 0 {
			b.stats.FirstBack = rec.Line
		}
		b.stats.OutOfOrder++
		b.stats.MaxBackS = max(b.stats.MaxBackS, (b.maxT-ns+secondNs-1)/secondNs)
	} else {
		b.maxT = ns
	}
	if b.spill != nil {
		return b.spill.add(b, rec, ns, rp, st, resp)
	}
	if b.partitioned(rec, ns) {
		return nil
	}
	k := b.key(rec)
	rateBits, kp := b.matchRules(rec, b.keyBits[k], b.names[k], &rp, &st)
	b.keyRule(k, kp)
	b.appendRequest(k, ns, rp, st, rateBits, resp)
	return nil
}

// matchRules applies the rules to rec, whose key (named name) rules
// 0..31 list as keyBits says: the first request-scope rule that matches
// sets rp and st unless they are set; it returns the rate rules whose other
// conditions hold (bit j: rate rule j) and 1 + the first key-scope rule
// that matches (0: none).
func (b *builder) matchRules(rec *Record, keyBits uint32, name string, rp *uint8, st *model.Stage) (rateBits uint16, kp uint8) {
	rules := b.opt.Rules
	for i := range rules {
		r := &rules[i]
		if r.Keys != nil {
			listed := false
			if i < 32 {
				listed = keyBits&(1<<i) != 0
			} else {
				listed = r.Keys[name]
			}
			if !listed {
				continue
			}
		}
		if !b.match[i].matchRecord(rec) {
			continue
		}
		switch {
		case r.Rate != nil:
			for j, ri := range b.rateRule {
				if ri == i {
					rateBits |= 1 << j
				}
			}
		case r.Scope == ScopeRequest:
			if *rp == noPrec {
				*rp, *st = uint8(i+1), r.Stage
			}
		default:
			if p := uint8(i + 1); kp == 0 || p < kp {
				kp = p
			}
		}
	}
	return rateBits, kp
}

// keyRule records that a request of key k matched key-scope rule kp-1
// (kp 0: none): the key takes the first such rule.
func (b *builder) keyRule(k int32, kp uint8) {
	if kp != 0 && (b.keyPrec[k] == 0 || kp < b.keyPrec[k]) {
		b.keyPrec[k] = kp
	}
}

// appendRequest appends an accepted request of key k to the columns.
func (b *builder) appendRequest(k int32, ns int64, rp uint8, st model.Stage, rateBits uint16, resp uint32) {
	if len(b.keys) == cap(b.keys) {
		b.grow()
	}
	if !b.wide {
		sec := ns / secondNs
		if len(b.keys) == 0 {
			b.secBase = max(sec-1<<31, 0) // room to go back as far as forward
		}
		if d := sec - b.secBase; sec*secondNs == ns && uint64(d) < 1<<32 {
			b.secs = append(b.secs, uint32(d))
		} else {
			b.widen()
		}
	}
	if b.wide {
		b.times = append(b.times, ns)
	}
	b.keys = append(b.keys, k)
	if b.sec != nil {
		b.sec.add(ns / secondNs)
	}
	if b.opt.weighs() {
		if b.resp == nil {
			b.resp = make([]uint32, len(b.keys)-1, cap(b.keys))
		}
		b.resp = append(b.resp, resp)
	}
	if rp != noPrec || b.reqPrec != nil {
		if b.reqPrec == nil {
			b.reqPrec = make([]uint8, len(b.keys)-1, cap(b.keys))
			b.reqStage = make([]model.Stage, len(b.keys)-1, cap(b.keys))
			for i := range b.reqPrec {
				b.reqPrec[i] = noPrec
			}
		}
		b.reqPrec = append(b.reqPrec, rp)
		b.reqStage = append(b.reqStage, st)
	}
	if rateBits != 0 || b.rateBits != nil {
		if b.rateBits == nil {
			b.rateBits = make([]uint16, len(b.keys)-1, cap(b.keys))
		}
		b.rateBits = append(b.rateBits, rateBits)
	}
}

func excerptString(b []byte) string {
	if len(b) > 40 {
		b = b[:40]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// checkKey refuses a request whose key field is missing, empty or "-" (a
// shared key "-" would make one busy client of every such line) or holds a
// NUL byte.
func (b *builder) checkKey(rec *Record) error {
	for _, f := range b.opt.Key {
		if f == FieldStatus {
			if rec.Status == 0 {
				return errors.New("no status to key by (logged as -)")
			}
			continue
		}
		v := fieldBytes(rec, f)
		if len(v) == 0 || len(v) == 1 && v[0] == '-' {
			return fmt.Errorf("no %s to key by (missing, empty or -)", f)
		}
		if hasNUL(v) {
			return fmt.Errorf("the %s to key by holds a NUL byte", f)
		}
	}
	return nil
}

// hasNUL reports whether v holds a 0 byte; a key of 8 to 16 bytes (an
// IPv4 address) is read in two words.
func hasNUL(v []byte) bool {
	if n := len(v); n >= 8 && n <= 16 {
		const ones, highs = 0x0101010101010101, 0x8080808080808080
		a, b := binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[n-8:])
		return ((a-ones)&^a|(b-ones)&^b)&highs != 0
	}
	return bytes.IndexByte(v, 0) >= 0
}

// key interns the record's key and returns its index.
func (b *builder) key(rec *Record) int32 {
	if len(b.opt.Key) == 1 {
		// One field: its bytes as they are (a copy only where
		// appendField changes them).
		switch f := b.opt.Key[0]; f {
		case FieldPathPrefix, FieldStatus:
		default:
			if v := fieldBytes(rec, f); len(v) > 0 {
				return b.intern(v)
			}
		}
	}
	buf := b.keyBytes(b.scratch[:0], rec)
	b.scratch = buf
	return b.intern(buf)
}

// intern returns the index of the key with bytes buf, interning it first.
func (b *builder) intern(buf []byte) int32 {
	sk := shortKeyOf(buf)
	// A client's requests come in runs (a page and its assets): the
	// previous line's key first.
	if b.lastKey != 0 && sk == b.lastShort && (sk.n <= 16 || b.raw[b.lastKey-1] == string(buf)) {
		return b.lastKey - 1
	}
	k, ok := b.index.find(sk, buf, b.raw)
	if !ok {
		k = b.newKey(string(buf))
		b.index.insert(sk, k)
	}
	b.lastShort, b.lastKey = sk, k+1
	return k
}

// internSeed seeds the key index's hashes (any seed: it only places keys;
// a random one keeps a hostile log from piling its keys in one place).
var internSeed = maphash.MakeSeed()

// shortKey is a key's bytes as the key index compares them: a key of at
// most 16 bytes (an IPv4 address) wholly, in a and b with its length n, so
// that finding it needs no other memory; a longer key by a hash of its
// bytes in a (n > 16), compared then with its bytes.
type shortKey struct {
	a, b uint64
	n    uint32
}

// shortKeyOf returns buf's shortKey.
func shortKeyOf(buf []byte) shortKey {
	n := len(buf)
	switch {
	case n > 16:
		return shortKey{a: maphash.Bytes(internSeed, buf), n: uint32(min(n, 1<<31))}
	case n >= 8: // the first and the last 8 bytes, overlapping
		return shortKey{binary.LittleEndian.Uint64(buf), binary.LittleEndian.Uint64(buf[n-8:]), uint32(n)}
	case n >= 4:
		return shortKey{uint64(binary.LittleEndian.Uint32(buf)) | uint64(binary.LittleEndian.Uint32(buf[n-4:]))<<32, 0, uint32(n)}
	case n > 0:
		return shortKey{uint64(buf[0]) | uint64(buf[n/2])<<8 | uint64(buf[n-1])<<16, 0, uint32(n)}
	}
	return shortKey{}
}

// slot is the key index's slot of a shortKey.
func (sk shortKey) slot(mask uint64) uint64 {
	if sk.n > 16 {
		return sk.a & mask
	}
	hi, lo := bits.Mul64(sk.a^seedA, sk.b^seedB^uint64(sk.n))
	return (hi ^ lo) & mask
}

// seedA and seedB key the short keys' hash (from internSeed).
var seedA, seedB = maphash.String(internSeed, "a"), maphash.String(internSeed, "b")

// keyIndex finds a key's index by its bytes: an open-addressing hash table
// (linear probing, at most half full) of key indices, 4 bytes a slot, with
// each key's shortKey beside it in key order, so that the table and the
// busy keys stay in the cache. A short key is found by its shortKey alone;
// a long one by its hash, then its bytes in the builder's raw names.
type keyIndex struct {
	slots []int32    // 1 + key index; 0: empty. len a power of two
	short []shortKey // by key index
}

// find returns the index of the key sk of bytes buf.
func (x *keyIndex) find(sk shortKey, buf []byte, raw []string) (int32, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(x.slots) - 1)
	for i := sk.slot(mask); ; i = (i + 1) & mask {
		k := x.slots[i] - 1
		if k < 0 {
			return 0, false
		}
		if x.short[k] == sk && (sk.n <= 16 || raw[k] == string(buf)) {
			return k, true
		}
	}
}

// insert adds key index k (the next: len(x.short)) of shortKey sk, not
// yet in the table.
func (x *keyIndex) insert(sk shortKey, k int32) {
	x.short = append(x.short, sk)
	if 2*len(x.short) > len(x.slots) {
		x.slots = make([]int32, max(1024, 2*len(x.slots)))
		for j := range x.short {
			x.place(int32(j))
		}
		return
	}
	x.place(k)
}

// place puts key index k in the table.
func (x *keyIndex) place(k int32) {
	mask := uint64(len(x.slots) - 1)
	i := x.short[k].slot(mask)
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = k + 1
}

// newKey adds a key name to the key table and returns its index.
func (b *builder) newKey(name string) int32 {
	k := int32(len(b.names))
	b.raw = append(b.raw, name)
	name = keyName(name)
	b.names = append(b.names, name)
	b.keyBits = append(b.keyBits, b.listedBits(name))
	b.keyPrec = append(b.keyPrec, 0)
	return k
}

// keyName is a key's name: its bytes, invalid UTF-8 replaced.
func keyName(raw string) string {
	if !utf8.ValidString(raw) {
		return strings.ToValidUTF8(raw, "\uFFFD")
	}
	return raw
}

// keyLists reports whether a rule lists keys.
func (b *builder) keyLists() bool {
	for i := range b.opt.Rules {
		if b.opt.Rules[i].Keys != nil {
			return true
		}
	}
	return false
}

// listedBits are the rules 0..31 whose keys list names the key name.
func (b *builder) listedBits(name string) uint32 {
	var bits uint32
	for i := range b.opt.Rules {
		if r := &b.opt.Rules[i]; r.Keys != nil && i < 32 && r.Keys[name] {
			bits |= 1 << i
		}
	}
	return bits
}

func appendField(buf []byte, rec *Record, f Field, depth int) []byte {
	switch f {
	case FieldPathPrefix:
		return append(buf, pathPrefix(rec.Path, depth)...)
	case FieldStatus:
		if rec.Status == 0 {
			return append(buf, '-')
		}
		return append(buf, byte('0'+rec.Status/100), byte('0'+rec.Status/10%10), byte('0'+rec.Status%10))
	}
	v := fieldBytes(rec, f)
	if len(v) == 0 {
		return append(buf, '-')
	}
	return append(buf, v...)
}

// fieldBytes is the record's text of a key field (path_prefix: the whole
// path; status has no text field: nil).
func fieldBytes(rec *Record, f Field) []byte {
	switch f {
	case FieldIP:
		return rec.Host
	case FieldLogname:
		return rec.Logname
	case FieldUser:
		return rec.User
	case FieldMethod:
		return rec.Method
	case FieldPath, FieldPathPrefix:
		return rec.Path
	case FieldUserAgent:
		return rec.UserAgent
	case FieldReferer:
		return rec.Referer
	}
	return nil
}

// pathPrefix is the first depth segments of a request target without its
// query: "/a/b/c?x" at depth 1 is "/a", at depth 2 "/a/b".
func pathPrefix(p []byte, depth int) []byte {
	if i := bytes.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	if len(p) == 0 {
		return []byte("/")
	}
	n := 0
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			n++
			if n == depth {
				return p[:i]
			}
		}
	}
	return p
}

// timesRoom returns the kept times column with n elements, made now unless
// it was when the build started.
func (b *builder) timesRoom(n int) []int64 {
	if cap(b.times) < n {
		b.times = hugemem.Make[int64](n, n)
	}
	b.times = b.times[:n]
	return b.times
}

// placeMax is the most requests whose whole-second times finish places
// straight into the kept column (one pass, at the peak 16 bytes a request);
// a larger log permutes the seconds in place instead (12 bytes a request at
// the peak, a slower pass).
const placeMax = 16 << 20

// insertBack is how far back among its key's requests finish moves a
// request whose time is earlier than theirs while it places them.
const insertBack = 32

// finish sorts the requests by key and time, applies rate rules and labels.
func (b *builder) finish() *Traffic {
	nk := len(b.names)
	t := &Traffic{SubSecond: b.subSec, Stats: b.stats}
	n := b.n()
	t.Stats.Requests = int64(n) + b.others
	if b.sec != nil && !b.subSec {
		t.seconds = b.sec.finish()
	}
	var minT, maxT int64
	if b.wide {
		minT, maxT = slices.Min(b.times), slices.Max(b.times)
	} else {
		minT, maxT = (b.secBase+int64(slices.Min(b.secs)))*secondNs, (b.secBase+int64(slices.Max(b.secs)))*secondNs
	}
	minT, maxT = min(minT, b.otherMin), max(maxT, b.otherMax)
	start := minT - (minT % secondNs)
	t.StartUnix = start / secondNs
	t.DurationS = int((maxT-start)/secondNs) + 1

	// Key order: requests descending, then name.
	count := make([]int64, nk)
	for _, k := range b.keys {
		count[k]++
	}
	order := make([]int32, nk)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int {
		if c := cmp.Compare(count[y], count[x]); c != 0 {
			return c
		}
		return strings.Compare(b.names[x], b.names[y])
	})
	// Counting sort by key rank (stable), then by time within each key.
	// Whole-second times alone, up to placeMax requests, go to their
	// places in one pass, into the kept column (at the peak 16 bytes a
	// request: 4 of seconds, 4 of key ids, 8 of times). With other
	// columns, or more requests, the key ids become each request's
	// destination and the columns, seconds included, follow the
	// permutation's cycles in place, then the seconds become times in
	// order (12 bytes and the other columns' at the peak). Times in ns
	// (wide) follow the cycles with the other columns.
	t.offsets = make([]int64, nk+1)
	for r, k := range order {
		t.offsets[r+1] = t.offsets[r] + count[k]
	}
	next := make([]int64, nk) // by key: where its next request goes
	for r, k := range order {
		next[k] = t.offsets[r]
	}
	dest := b.keys
	if b.wide {
		for i, k := range dest {
			dest[i] = int32(next[k])
			next[k]++
		}
	} else {
		off := b.secBase*secondNs - start // ns since start of secs' 0
		secs := b.secs[:n]
		alone := b.reqPrec == nil && b.rateBits == nil && b.resp == nil
		if alone && n <= placeMax && !b.opt.large {
			times := b.timesRoom(n)
			// Times alone: a time earlier than its key's last goes back
			// among the key's few latest (a log is written nearly in
			// order), so most keys come out sorted; further back it
			// stays, and the sort below finds the key unsorted.
			first := slices.Clone(next)
			for i, k := range dest[:n] {
				d := next[k]
				next[k]++
				v := int64(secs[i])*secondNs + off
				for lo := max(first[k], d-insertBack); d > lo && times[d-1] > v; d-- {
					times[d] = times[d-1]
				}
				times[d] = v
			}
		} else {
			// Other columns, or a large log: the seconds follow the
			// permutation (with the other columns), then become times.
			for i, k := range dest[:n] {
				dest[i] = int32(next[k])
				next[k]++
			}
			columns{secs: secs, prec: b.reqPrec, stage: b.reqStage, rate: b.rateBits, resp: b.resp}.permute(dest)
			hugemem.Free(b.keys)
			b.keys = nil
			times := b.timesRoom(n) // made now, most often: the key ids are gone
			if !alone {
				for i, s := range secs {
					times[i] = int64(s)*secondNs + off
				}
			} else {
				for r := range nk {
					first, end := t.offsets[r], t.offsets[r+1]
					for d := first; d < end; d++ {
						v := int64(secs[d])*secondNs + off
						j := d
						for lo := max(first, j-insertBack); j > lo && times[j-1] > v; j-- {
							times[j] = times[j-1]
						}
						times[j] = v
					}
				}
			}
		}
		hugemem.Free(b.secs)
		b.secs = nil
		start = 0 // subtracted already
	}
	cols := columns{times: b.times, prec: b.reqPrec, stage: b.reqStage, rate: b.rateBits, resp: b.resp}
	if b.wide {
		cols.permute(dest)
	}
	hugemem.Free(b.keys)
	b.keys = nil
	for r := range nk {
		seg := cols.slice(int(t.offsets[r]), int(t.offsets[r+1]))
		switch {
		case slices.IsSorted(seg.times):
		case seg.prec == nil && seg.rate == nil && seg.resp == nil:
			slices.Sort(seg.times) // times alone: equal ones are alike
		default:
			sort.Stable(seg) // ties keep their lines' order (and labels)
		}
	}
	if start != 0 {
		for i := range b.times {
			b.times[i] -= start
		}
	}
	t.times = b.times[:n:n]
	b.times = nil
	t.resp, b.resp = b.resp, nil

	// Rate rules mark keys whose matching requests reach the rate.
	for j, ri := range b.rateRule {
		rule := &b.opt.Rules[ri]
		win := rule.Rate.WindowS * secondNs
		var ts []int64
		for r, k := range order {
			if p := b.keyPrec[k]; p != 0 && p <= uint8(ri+1) {
				continue
			}
			ts = ts[:0]
			for i := t.offsets[r]; i < t.offsets[r+1]; i++ {
				if b.rateBits[i]&(1<<j) != 0 {
					ts = append(ts, t.times[i])
				}
			}
			if reachesRate(ts, rule.Rate.Requests, win) {
				b.keyPrec[k] = uint8(ri + 1)
			}
		}
	}

	// Labels: the first rule that marks the request or its key.
	t.labels = hugemem.Make[model.Stage](n, n)
	t.Keys = make([]Key, nk)
	ruleCount := map[uint8]int64{}
	for r, k := range order {
		key := &t.Keys[r]
		key.Name, key.Requests = b.names[k], count[k]
		kp := b.keyPrec[k]
		if kp == 0 && b.reqPrec == nil {
			// No rule marked the key or its requests: every request is
			// legitimate (labels are zero, model.NoStage).
			key.ByStage[model.NoStage] = count[k]
			key.Class, key.Stage = majority(key.ByStage)
			continue
		}
		clear(ruleCount)
		for i := t.offsets[r]; i < t.offsets[r+1]; i++ {
			p, st := uint8(noPrec), model.NoStage
			if kp != 0 {
				p, st = kp, b.opt.Rules[kp-1].Stage
			}
			if b.reqPrec != nil {
				if rp := b.reqPrec[i]; rp < p {
					p, st = rp, b.reqStage[i]
				}
			}
			t.labels[i] = st
			key.ByStage[st]++
			if st != model.NoStage && p != 0 {
				ruleCount[p]++
			}
		}
		key.Class, key.Stage = majority(key.ByStage)
		var best uint8
		for p, c := range ruleCount {
			if best == 0 || c > ruleCount[best] || (c == ruleCount[best] && p < best) {
				best = p
			}
		}
		if best != 0 {
			key.Rule = b.opt.Rules[best-1].Name
		} else if key.Class == model.Abusive {
			key.Rule = "label column"
		}
	}
	return t
}

// reachesRate reports whether some window of win ns holds at least n of the
// sorted times ts.
func reachesRate(ts []int64, n int64, win int64) bool {
	if int64(len(ts)) < n {
		return false
	}
	for i := int(n - 1); i < len(ts); i++ {
		if ts[i]-ts[i-int(n-1)] < win {
			return true
		}
	}
	return false
}

// majority is the label of most requests; abusive wins a tie with legit, and
// among stages the earlier one (design, code, none) wins a tie.
func majority(by [4]int64) (model.Class, model.Stage) {
	best := model.StageDesign
	for _, s := range model.Stages {
		if by[s] > by[best] {
			best = s
		}
	}
	var abusive int64
	for _, s := range model.Stages {
		abusive += by[s]
	}
	if abusive == 0 || by[model.NoStage] > by[best] {
		return model.Legit, model.NoStage
	}
	return model.Abusive, best
}

// Requests is the number of requests.
func (t *Traffic) Requests() int64 { return int64(len(t.times)) }

// Times returns key i's request times, ns since StartUnix, sorted, before
// spreading (do not modify).
func (t *Traffic) Times(i int) []int64 { return t.times[t.offsets[i]:t.offsets[i+1]] }

// Labels returns key i's request labels, in the order of Times (do not
// modify); model.NoStage is legit.
func (t *Traffic) Labels(i int) []model.Stage { return t.labels[t.offsets[i]:t.offsets[i+1]] }

// columns are the per-request columns of a build, in the same order: times
// (nil when placed already) and, when rules need them, request-rule
// precedence and stage and rate-rule bits (nil when absent).
type columns struct {
	times []int64
	secs  []uint32 // whole-second times (builder.secs), in their place
	prec  []uint8
	stage []model.Stage
	rate  []uint16
	resp  []uint32 // cost and status (cost.go), when asked for
}

func (c columns) slice(i, j int) columns {
	var out columns
	if c.times != nil {
		out.times = c.times[i:j]
	}
	if c.secs != nil {
		out.secs = c.secs[i:j]
	}
	if c.prec != nil {
		out.prec, out.stage = c.prec[i:j], c.stage[i:j]
	}
	if c.rate != nil {
		out.rate = c.rate[i:j]
	}
	if c.resp != nil {
		out.resp = c.resp[i:j]
	}
	return out
}

// Len, Less and Swap sort the columns by time (sort.Stable keeps ties in
// their order).
func (c columns) Len() int           { return len(c.times) }
func (c columns) Less(i, j int) bool { return c.times[i] < c.times[j] }
func (c columns) Swap(i, j int) {
	if c.times != nil {
		c.times[i], c.times[j] = c.times[j], c.times[i]
	}
	if c.secs != nil {
		c.secs[i], c.secs[j] = c.secs[j], c.secs[i]
	}
	if c.prec != nil {
		c.prec[i], c.prec[j] = c.prec[j], c.prec[i]
		c.stage[i], c.stage[j] = c.stage[j], c.stage[i]
	}
	if c.rate != nil {
		c.rate[i], c.rate[j] = c.rate[j], c.rate[i]
	}
	if c.resp != nil {
		c.resp[i], c.resp[j] = c.resp[j], c.resp[i]
	}
}

// permute moves element i of every column to position dest[i], in place;
// dest is consumed. A large permutation goes in two steps that keep memory
// access local: an in-place partition into regions of consecutive
// destinations (American flag sort: one write head per region, each moving
// forward through its region), then each region's own permutation within
// it, a region small enough for the cache. Followed cycle by cycle across the
// whole array, every step was a cache miss (1.6 s for 10M requests).
func (c columns) permute(dest []int32) {
	const regionBits = 15 // 32,768 requests per region: 400 KB of columns
	n := len(dest)
	if n <= 2<<regionBits {
		c.permuteCycles(dest, 0)
		return
	}
	shift := uint(regionBits)
	for n>>shift > 4096 { // at most 4096 heads: 512 KB of cache lines
		shift++
	}
	size := 1 << shift
	heads := make([]int, (n+size-1)/size)
	for r := range heads {
		heads[r] = r * size
	}
	for r := range heads {
		end := min((r+1)*size, n)
		for i := heads[r]; i < end; i = heads[r] {
			to := int(dest[i]) >> shift
			if to == r {
				heads[r]++
				continue
			}
			// the element at i belongs to region to: swap it to that
			// region's head, and look at what comes back
			j := heads[to]
			heads[to]++
			dest[i], dest[j] = dest[j], dest[i]
			c.Swap(i, j)
		}
	}
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		c.slice(lo, hi).permuteCycles(dest[lo:hi], int32(lo))
	}
}

// permuteCycles moves element i of every column to position dest[i] − base,
// in place, cycle by cycle; dest is consumed (every entry becomes -1).
func (c columns) permuteCycles(dest []int32, base int32) {
	for i := range dest {
		if dest[i] < 0 {
			continue
		}
		// Carry element i along its cycle until the cycle closes at i.
		var t int64
		if c.times != nil {
			t = c.times[i]
		}
		var sec uint32
		if c.secs != nil {
			sec = c.secs[i]
		}
		var p uint8
		var st model.Stage
		var rb uint16
		var rs uint32
		if c.prec != nil {
			p, st = c.prec[i], c.stage[i]
		}
		if c.rate != nil {
			rb = c.rate[i]
		}
		if c.resp != nil {
			rs = c.resp[i]
		}
		pos := dest[i] - base
		dest[i] = -1
		for int(pos) != i {
			if c.times != nil {
				c.times[pos], t = t, c.times[pos]
			}
			if c.secs != nil {
				c.secs[pos], sec = sec, c.secs[pos]
			}
			if c.prec != nil {
				c.prec[pos], p = p, c.prec[pos]
				c.stage[pos], st = st, c.stage[pos]
			}
			if c.rate != nil {
				c.rate[pos], rb = rb, c.rate[pos]
			}
			if c.resp != nil {
				c.resp[pos], rs = rs, c.resp[pos]
			}
			next := dest[pos] - base
			dest[pos] = -1
			pos = next
		}
		if c.times != nil {
			c.times[i] = t
		}
		if c.secs != nil {
			c.secs[i] = sec
		}
		if c.prec != nil {
			c.prec[i], c.stage[i] = p, st
		}
		if c.rate != nil {
			c.rate[i] = rb
		}
		if c.resp != nil {
			c.resp[i] = rs
		}
	}
}
