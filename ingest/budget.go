package ingest

import (
	"fmt"

	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// Budget bounds the memory a log's compilation may take, checked as the
// log is read: whatever its size on disk said, the requests and keys held
// are counted as lines are decompressed (every gzip member, every zstd, xz
// or bzip2 frame), and once they would take more than Limit the read stops
// with a *BudgetError. The zero value checks nothing.
type Budget struct {
	Limit      int64 // bytes the process may take; 0 = no limit
	Base       int64 // bytes taken besides the log (the runtime, workers, part buffers)
	PerRequest int64 // bytes a kept request takes at the compilation's peak
	PerKey     int64 // bytes a key takes (its name, index entry and totals)
	// Flag names what raises Limit, for the error ("--max-memory").
	Flag string
}

// budgetEvery is how many requests pass between two budget checks.
const budgetEvery = 4096

// Need is the memory of requests requests and keys keys under b, bytes
// (saturating).
func (b *Budget) Need(requests, keys int64) int64 {
	n := float64(b.Base) + float64(requests)*float64(b.PerRequest) + float64(keys)*float64(b.PerKey)
	if n >= 1<<62 {
		return 1 << 62
	}
	return int64(n)
}

// Requests is the most requests of keys keys that fit the budget (0 when
// none do).
func (b *Budget) Requests(keys int64) int64 {
	room := b.Limit - b.Need(0, keys)
	if room <= 0 || b.PerRequest <= 0 {
		return 0
	}
	return room / b.PerRequest
}

// BudgetError is a log that needs more memory than its Budget, found while
// reading it: what had been read when it stopped.
type BudgetError struct {
	File        string // the log ("(stdin)" for standard input)
	Budget      Budget
	Lines       int64 // lines read
	Bytes       int64 // bytes read, decompressed
	Requests    int64 // requests kept (spilled: written to partition files)
	Keys        int64 // keys held
	Need        int64 // bytes those requests and keys take (Budget.need)
	Consumed    int64 // bytes of the file read (compressed); 0 when unknown
	Size        int64 // the file's size, bytes; 0 when unknown (standard input, a set of files, Parquet)
	Compression Compression
	Stdin       bool // the log is standard input: it cannot be read again
}

func (e *BudgetError) Error() string {
	flag := e.Budget.Flag
	if flag == "" {
		flag = "the memory budget"
	}
	read := ""
	if e.Lines > 0 {
		comp := ""
		if e.Compression != CompressNone {
			comp = " decompressed from " + e.Compression.String()
		}
		read = fmt.Sprintf(" (stopped after %d lines, %s read%s)", e.Lines, yamlx.FormatBytes(e.Bytes), comp)
	}
	return fmt.Sprintf("%s: %d requests of %d keys need about %s of memory, more than %s %s%s; raise %s, or give the log in smaller pieces",
		e.File, e.Requests, e.Keys, yamlx.FormatBytes(e.Need), flag, yamlx.FormatBytes(e.Budget.Limit), read, flag)
}

// Projected is the requests the whole log holds at the rate seen so far
// (the requests kept over the share of the file read, with a quarter more
// for a later part that packs more lines); 0 when the share is unknown.
func (e *BudgetError) Projected() int64 {
	if e.Consumed <= 0 || e.Size <= 0 {
		return 0
	}
	p := float64(e.Requests) * float64(e.Size) / float64(min(e.Consumed, e.Size)) * 1.25
	if p >= 1<<62 {
		return 1 << 62
	}
	return int64(p)
}

// checkBudget returns a *BudgetError when the requests and keys b holds
// (or, spilling, the keys its partition files' dictionaries hold) pass
// its budget.
func (b *builder) checkBudget(rd source) error {
	bu := &b.opt.Budget
	reqs, keys := int64(b.n()), int64(len(b.names))
	if b.spill != nil {
		reqs, keys = 0, b.spill.keys()
	}
	need := bu.Need(reqs, keys)
	if need <= bu.Limit {
		return nil
	}
	e := &BudgetError{Budget: *bu, Requests: reqs, Keys: keys, Need: need}
	if b.spill != nil {
		e.Requests = b.spill.total
	}
	if r, ok := rd.(*Reader); ok {
		e.Lines, e.Bytes, e.Compression = r.line, r.read.n, r.compress
	}
	return e
}
