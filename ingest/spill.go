package ingest

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ratesweep/ratesweep/model"
)

// Spill is a log split into key partitions on disk, for logs larger than
// memory (an external hash partition): SpillLog reads the log once and
// writes each accepted request to the file of its key's partition
// (KeyPartition: FNV-1a 64 of the key mod the count); Load then compiles
// one partition from its file alone, equal to Load of the log with that
// Partition. A Spill is safe for simultaneous Loads.
//
// A partition file is a sequence of rows, one per request in log order:
//
//	uvarint  id<<1 | new      the key's number in the file; new: first use
//	[uvarint len, bytes]      the key's bytes, on its first use
//	varint   t - previous     time since 1970, zigzag delta in the file: s,
//	                          ms with flag 16, ns with flag 32
//	byte     flags            1 rp st, 2 kp, 4 rate bits, 8 cost and status,
//	                          16 the time delta is in ms, 32 in ns
//	[byte rp, byte st]        the first request-scope rule (0: label column)
//	[byte kp]                 1 + the first key-scope rule that matched
//	[uvarint rate bits]       rate rules whose other conditions hold
//	[uvarint resp]            cost and status (Options.Cost, Statuses)
type Spill struct {
	path   string // the log
	dir    string
	parts  int
	opt    Options
	stats  Stats
	format Format
	subSec bool
	total  int64   // accepted requests, every partition
	counts []int64 // accepted requests per partition
	keys   []int64 // keys per partition
	minT   int64   // earliest and latest request, ns
	maxT   int64
	log    int // the log's number in its files' names
}

// SpillFile is the name of partition i's file of the log numbered log.
func SpillFile(log, i int) string { return fmt.Sprintf("log-%03d-part-%05d.bin", log, i) }

// SpillLog reads the log at path (as Load does) once and writes its
// requests into parts partition files in dir, named SpillFile(log, i).
// Malformed lines, the time span and the accounting are the whole log's,
// as with Load. The files are the caller's to remove (Remove).
func SpillLog(ctx context.Context, path string, opt Options, dir string, log, parts int) (*Spill, error) {
	if parts < 1 {
		return nil, fmt.Errorf("spill: %d partitions", parts)
	}
	if !opt.Partition.All() {
		return nil, errors.New("spill: a partitioned log")
	}
	w := &spillWriter{parts: parts, minT: 1<<63 - 1, maxT: -1 << 63,
		dicts: make([]map[string]uint32, parts), prev: make([]int64, parts), counts: make([]int64, parts)}
	size := max(4<<10, min(64<<10, (32<<20)/parts))
	for i := range parts {
		f, err := os.Create(filepath.Join(dir, SpillFile(log, i)))
		if err != nil {
			w.close()
			return nil, err
		}
		w.files = append(w.files, f)
		w.bufs = append(w.bufs, bufio.NewWriterSize(f, size))
		w.dicts[i] = map[string]uint32{}
	}
	opt.spill = w
	opt.Spills = nil
	_, err := Load(ctx, path, opt)
	if cerr := w.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if len(opt.Key) == 0 {
		opt.Key = []Field{FieldIP}
	}
	if opt.PathDepth <= 0 {
		opt.PathDepth = 1
	}
	opt.spill = nil
	keys := make([]int64, parts)
	for i, d := range w.dicts {
		keys[i] = int64(len(d))
	}
	return &Spill{path: path, dir: dir, parts: parts, opt: opt, stats: w.stats, format: w.format, subSec: w.subSec,
		total: w.total, counts: w.counts, keys: keys, minT: w.minT, maxT: w.maxT, log: log}, nil
}

// Parts is the number of the spill's partitions.
func (s *Spill) Parts() int { return s.parts }

// Largest is the requests and keys of the spill's largest partition (by
// the memory budget says they take; by requests without one).
func (s *Spill) Largest(b Budget) (requests, keys int64) {
	for i := range s.parts {
		if b.Need(s.counts[i], s.keys[i]) >= b.Need(requests, keys) {
			requests, keys = s.counts[i], s.keys[i]
		}
	}
	return requests, keys
}

// Path is the log the spill holds.
func (s *Spill) Path() string { return s.path }

// WithBudget is the spill with the budget its partitions' Loads check.
func (s *Spill) WithBudget(b Budget) *Spill {
	c := *s
	c.opt.Budget = b
	return &c
}

// Load compiles partition i from its file: the Traffic Load of the log
// with Partition{i, Parts()} returns.
func (s *Spill) Load(ctx context.Context, i int) (*Traffic, error) {
	if bu := &s.opt.Budget; bu.Limit > 0 {
		if need := bu.Need(s.counts[i], s.keys[i]); need > bu.Limit {
			return nil, &BudgetError{File: fmt.Sprintf("%s (key partition %d of %d)", s.path, i, s.parts), Budget: *bu,
				Lines: s.stats.Lines, Requests: s.counts[i], Keys: s.keys[i], Need: need}
		}
	}
	b, err := newBuilder(s.opt, s.counts[i])
	if err != nil {
		return nil, err
	}
	defer b.release()
	if err := s.read(ctx, b, i); err != nil {
		return nil, fmt.Errorf("spill file %s: %w", filepath.Join(s.dir, SpillFile(s.log, i)), err)
	}
	b.stats, b.subSec = s.stats, s.subSec
	b.others = s.total - int64(b.n())
	b.otherMin, b.otherMax = s.minT, s.maxT
	var t *Traffic
	if b.n() == 0 {
		t = b.emptyTraffic()
	} else {
		t = b.finish()
	}
	t.Format, t.Source = s.format, s.path
	return t, nil
}

// Remove removes the spill's files.
func (s *Spill) Remove() error {
	var first error
	for i := range s.parts {
		if err := os.Remove(filepath.Join(s.dir, SpillFile(s.log, i))); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = err
		}
	}
	return first
}

// read replays partition i's rows into b, decoding each spilled record in
// the loop (one function: it runs once per row).
func (s *Spill) read(ctx context.Context, b *builder, i int) error {
	f, err := os.Open(filepath.Join(s.dir, SpillFile(s.log, i)))
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	var ids []int32 // builder key of each file key
	var raw []byte
	var prev int64
	for n := int64(0); n < s.counts[i]; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		head, err := binary.ReadUvarint(r)
		if err != nil {
			return noEOF(err)
		}
		var k int32
		if head&1 != 0 {
			l, err := binary.ReadUvarint(r)
			if err != nil {
				return noEOF(err)
			}
			if l > 1<<24 {
				return fmt.Errorf("row %d: a key of %d bytes", n, l)
			}
			raw = append(raw[:0], make([]byte, l)...)
			if _, err := io.ReadFull(r, raw); err != nil {
				return noEOF(err)
			}
			k = b.intern(raw)
			ids = append(ids, k)
		} else if id := head >> 1; id < uint64(len(ids)) {
			k = ids[id]
		} else {
			return fmt.Errorf("row %d: key %d before its first use", n, id)
		}
		d, err := binary.ReadVarint(r)
		if err != nil {
			return noEOF(err)
		}
		flags, err := r.ReadByte()
		if err != nil {
			return noEOF(err)
		}
		switch {
		case flags&32 != 0:
		case flags&16 != 0:
			d *= 1e6
		default:
			d *= secondNs
		}
		prev += d
		rp, st, kp := uint8(noPrec), model.NoStage, uint8(0)
		var rateBits, resp uint64
		if flags&1 != 0 {
			var two [2]byte
			if _, err := io.ReadFull(r, two[:]); err != nil {
				return noEOF(err)
			}
			rp, st = two[0], model.Stage(two[1])
		}
		if flags&2 != 0 {
			if kp, err = r.ReadByte(); err != nil {
				return noEOF(err)
			}
		}
		if flags&4 != 0 {
			if rateBits, err = binary.ReadUvarint(r); err != nil {
				return noEOF(err)
			}
		}
		if flags&8 != 0 {
			if resp, err = binary.ReadUvarint(r); err != nil {
				return noEOF(err)
			}
		}
		b.keyRule(k, kp)
		b.appendRequest(k, prev, rp, st, uint16(rateBits), uint32(resp))
	}
	return nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// spillWriter takes a log's accepted requests during SpillLog.
type spillWriter struct {
	parts      int
	files      []*os.File
	bufs       []*bufio.Writer
	dicts      []map[string]uint32 // per partition: key bytes → number
	prev       []int64             // per partition: the last row's time
	counts     []int64
	total      int64
	minT, maxT int64
	row        []byte
	err        error // the first write error (add may not fail)

	stats  Stats
	format Format
	subSec bool
}

// add writes an accepted request of b's log (rp, st: its label so far;
// resp its cost and status) to its key's partition.
func (w *spillWriter) add(b *builder, rec *Record, ns int64, rp uint8, st model.Stage, resp uint32) error {
	raw := b.keyBytes(b.scratch[:0], rec)
	b.scratch = raw
	var bits uint32
	var name string
	if b.keyLists() {
		name = keyName(string(raw))
		bits = b.listedBits(name)
	}
	rateBits, kp := b.matchRules(rec, bits, name, &rp, &st)
	part := int(KeyHash(raw) % uint64(w.parts))
	d := w.dicts[part]
	row := w.row[:0]
	if id, ok := d[string(raw)]; ok {
		row = binary.AppendUvarint(row, uint64(id)<<1)
	} else {
		id = uint32(len(d))
		d[string(raw)] = id
		row = binary.AppendUvarint(row, uint64(id)<<1|1)
		row = binary.AppendUvarint(row, uint64(len(raw)))
		row = append(row, raw...)
	}
	delta := ns - w.prev[part]
	w.prev[part] = ns
	var flags byte
	switch {
	case delta%secondNs == 0:
		delta /= secondNs
	case delta%1e6 == 0:
		flags, delta = 16, delta/1e6
	default:
		flags = 32
	}
	row = binary.AppendVarint(row, delta)
	if rp != noPrec {
		flags |= 1
	}
	if kp != 0 {
		flags |= 2
	}
	if rateBits != 0 {
		flags |= 4
	}
	if b.opt.weighs() {
		flags |= 8
	}
	row = append(row, flags)
	if flags&1 != 0 {
		row = append(row, rp, byte(st))
	}
	if flags&2 != 0 {
		row = append(row, kp)
	}
	if flags&4 != 0 {
		row = binary.AppendUvarint(row, uint64(rateBits))
	}
	if flags&8 != 0 {
		row = binary.AppendUvarint(row, uint64(resp))
	}
	w.row = row
	if _, err := w.bufs[part].Write(row); err != nil && w.err == nil {
		w.err = err
	}
	w.counts[part]++
	w.total++
	w.minT, w.maxT = min(w.minT, ns), max(w.maxT, ns)
	return nil
}

// finish keeps what every partition shares: the log's accounting, format
// and sub-second times.
func (w *spillWriter) finish(b *builder, f Format) error {
	w.stats, w.format, w.subSec = b.stats, f, b.subSec
	return w.err
}

// close flushes and closes the files.
func (w *spillWriter) close() error {
	err := w.err
	for i, f := range w.files {
		if ferr := w.bufs[i].Flush(); ferr != nil && err == nil {
			err = ferr
		}
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	w.files, w.bufs = nil, nil
	return err
}

// keys is the number of keys the partitions' dictionaries hold.
func (w *spillWriter) keys() int64 {
	var n int64
	for _, d := range w.dicts {
		n += int64(len(d))
	}
	return n
}
