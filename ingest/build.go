package ingest

// Building a log's request columns line by line: times, keys, labels by the rules.

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/ratesweep/ratesweep/internal/hugemem"
	"github.com/ratesweep/ratesweep/model"
)

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
