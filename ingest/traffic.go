package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

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

// placeMax is the most requests whose whole-second times finish places
// straight into the kept column (one pass, at the peak 16 bytes a request);
// a larger log permutes the seconds in place instead (12 bytes a request at
// the peak, a slower pass).
const placeMax = 16 << 20

// insertBack is how far back among its key's requests finish moves a
// request whose time is earlier than theirs while it places them.
const insertBack = 32

// Requests is the number of requests.
func (t *Traffic) Requests() int64 { return int64(len(t.times)) }

// Times returns key i's request times, ns since StartUnix, sorted, before
// spreading (do not modify).
func (t *Traffic) Times(i int) []int64 { return t.times[t.offsets[i]:t.offsets[i+1]] }

// Labels returns key i's request labels, in the order of Times (do not
// modify); model.NoStage is legit.
func (t *Traffic) Labels(i int) []model.Stage { return t.labels[t.offsets[i]:t.offsets[i+1]] }
